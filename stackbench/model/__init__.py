"""The typed model of a stored run: what the store gives back, as frozen values — a run
(run.py), its cells (cell.py) and what each cell cost the stack (cost.py). Types only:
no SQL (the store maps its rows onto these), no measuring (the monitor and the engine
make the write side's types), no figure derived from more than one field (analysis)."""

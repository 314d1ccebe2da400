"""The typed model of a run, one type per concept from write to read: the runner and the
monitor make these frozen values, the store keeps them and gives the same back — a run
(run.py) and what it stored with it (plan.py, environment.py, network.py, stop.py), its
cells (cell.py), what each cost the stack (cost.py), its visitor classes (visitors.py)
and PHP's state (php.py). Types only: no SQL (the store maps its rows onto these), no
measuring, no figure derived from more than one field (analysis)."""

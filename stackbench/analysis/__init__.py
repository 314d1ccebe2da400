"""Between the store and the reports: what the stored cells mean.

metrics.py (derived per-request figures), figures.py (one cell's typed figures, what
every report shows), questions.py (which cells answer the same question), stats.py
(statistics over repetitions, pure); run.py (one run's analysis, worked out once per
command: what every report renders). Everything takes the store's types
(stackbench/model/: StoredRun, StoredCell with its EngineResult and StoredCost) and
returns numbers, None when not computable; nothing here formats text, touches SQL or
reads a key of the engine's document.
"""

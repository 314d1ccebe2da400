"""Between the store and the reports: what the stored cells mean.

metrics.py (derived per-request figures), figures.py (one cell's typed figures, what
every report shows), questions.py (which cells answer the same question), stats.py
(statistics over repetitions, pure). Everything returns numbers, None when not
computable; nothing here formats text or touches SQL.
"""

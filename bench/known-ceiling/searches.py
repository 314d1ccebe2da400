"""Each stored search of a known-ceiling run: its capacity, interval, and the most a met
probe served (bench/known-ceiling/run.sh)."""

import sys

from stackbench.analysis import capacity_results
from stackbench.store.db import Store

store = Store(sys.argv[1])
run_id = store.latest_run_id()
run, cells = store.run(run_id), store.cells(run_id)
for r in capacity_results.results(run, cells, store.search_rows(run_id)):
    met = [p.figures.requests_per_s for p in r.probes if p.check.met]
    e = r.edge
    print(f"{r.stack_label} search {r.repetition}: capacity {e.rate:.1f} req/s (95 % CI {e.low:.1f}–{e.high:.1f})"
          f" · most served by a met probe {max(met):.1f} · probes {len(r.probes)} ({sum(p.check.met for p in r.probes)} met)"
          f" · fitted edge {e.estimate:.1f}" if e else f"{r.stack_label} search {r.repetition}: no edge")

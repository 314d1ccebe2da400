"""How steady is this machine's CPU? A fixed loop, timed in short slices on the server's
cores before a run, with nothing else of the lab running.

On a dedicated machine the slices agree within ~1 %. On a busy virtual machine they do
not: on the 2-core VMs this lab was built on, a pure CPU loop varied by a CV of 14–17 %
from one second to the next (bench/RESULTS.md, session 2) — the host's other guests,
not anything the lab does. No measurement of a stack can be steadier than that, so the
figure is stored with the run and reports warn when it is high.

STACKBENCH_CPU_PROBE=off skips it (the figure is then "not measured"): the test suite
sets it, since its ~2 s before each of the suite's many short runs was minutes of
`make test` (docs/reference/tests.md); the probe's own test unsets it.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

SKIP_VAR = "STACKBENCH_CPU_PROBE"

# The loop: iterations of a trivial Python statement completed in each slice.
_PROBE = """
import time, sys
slices, slice_s = int(sys.argv[1]), float(sys.argv[2])
out = []
for _ in range(slices):
    n, end = 0, time.perf_counter() + slice_s
    while time.perf_counter() < end:
        for _ in range(2000):
            n += 1
    out.append(n)
print(" ".join(map(str, out)))
"""

def measure(cpus: list[int], slices: int = 10, slice_s: float = 0.2) -> float | None:
    """CV of the loop's speed over `slices` slices on `cpus`; None if it could not run or
    STACKBENCH_CPU_PROBE is "off"."""
    if os.environ.get(SKIP_VAR, "").lower() == "off":
        return None

    def pin() -> None:
        if cpus:
            os.sched_setaffinity(0, cpus[:1])

    try:
        res = subprocess.run([sys.executable, "-c", _PROBE, str(slices), str(slice_s)], capture_output=True,
                             text=True, timeout=slices * slice_s + 10, preexec_fn=pin)
        counts = [int(x) for x in res.stdout.split()]
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    if len(counts) < 2 or statistics.fmean(counts) == 0:
        return None
    return statistics.stdev(counts) / statistics.fmean(counts)

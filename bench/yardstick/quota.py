"""The yardstick on this machine's core, whole and under a CPU quota of 0.5 and 0.25 (the
sizing scenario's sizes: a CFS quota on a cgroup of the v1 cpu controller, 100 ms period,
as monitor/cpu_quota.py writes a machine profile's), interleaved round by round so a drift
of the VM falls on every condition. Run as root, under the lab's turn:

    flock /tmp/stackbench-turn.lock .venv/bin/python bench/yardstick/quota.py [ROUNDS]

Prints each round's figures and, per quota, the median ratio to the whole core's figure of
the same round. The cgroup is made for the script and removed at its end, whatever happens."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

from stackbench import yardstick
from stackbench.monitor.cpu_quota import V1, write_v1
from stackbench.planning.machine import CpuQuota

CORE = 0
QUOTAS = (None, 0.5, 0.25)


def measure(cgroup: Path | None) -> yardstick.Yardstick:
    def place() -> None:
        os.sched_setaffinity(0, [CORE])
        if cgroup is not None:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))

    php = yardstick.php_binary()
    assert php, "php8.2-cli"
    out = subprocess.run([php, "-n", str(yardstick.SCRIPT), str(yardstick.REPETITIONS), str(yardstick.UNITS)],
                         capture_output=True, text=True, check=True, preexec_fn=place)
    found = yardstick.parse(out.stdout, yardstick.REPETITIONS)
    assert found is not None, out.stdout
    return found


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    groups: dict[float, Path] = {}
    try:
        for q in QUOTAS[1:]:
            path = V1 / f"stackbench-yardstick-{os.getpid()}-{q:g}"
            path.mkdir()
            groups[q] = path
            write_v1(path, CpuQuota.of(q))
        ratios: dict[float, list[float]] = {q: [] for q in QUOTAS[1:]}
        whole: list[float] = []
        for r in range(rounds):
            found = {q: measure(groups.get(q) if q else None) for q in QUOTAS}
            base = found[None].score
            whole.append(base)
            line = [f"round {r + 1}: whole {found[None].describe()}"]
            for q in QUOTAS[1:]:
                ratios[q].append(found[q].score / base)
                line.append(f"quota {q:g}: {found[q].score:.0f} ({found[q].low:.0f}–{found[q].high:.0f}), "
                            f"{found[q].score / base:.2f} of the whole")
            print("; ".join(line), flush=True)
        print(f"whole core: median {statistics.median(whole):.0f}, range {min(whole):.0f}–{max(whole):.0f} "
              f"over {rounds} rounds")
        for q, rs in ratios.items():
            print(f"quota {q:g}: the yardstick reads {statistics.median(rs):.2f} of the whole core "
                  f"(rounds {min(rs):.2f}–{max(rs):.2f})")
    finally:
        for path in groups.values():
            path.rmdir()


if __name__ == "__main__":
    main()

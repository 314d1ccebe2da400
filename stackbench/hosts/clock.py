"""A client host's clock offset from the lab's, NTP's way: the lab writes a line to the
engine's clock probe (`stackbench-load --clock`, over the host's SSH channel) at t0, the
host answers with its clock T, the answer arrives at t2. If the two directions took as
long, the offset is T − (t0 + t2) / 2; whatever they differ by, it is within ± (t2 − t0)
/ 2 of that. Of many probes the one with the shortest round trip bounds it best."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

from stackbench.errors import HostError

PROBES = 25


@dataclass(frozen=True)
class Offset:
    offset_us: int  # the host's clock minus the lab's
    uncertainty_us: int  # ± this: half the best round trip
    best_rtt_us: int
    probes: int

    def as_dict(self) -> dict:
        return {"offset_us": self.offset_us, "offset_uncertainty_us": self.uncertainty_us,
                "clock_rtt_us": self.best_rtt_us, "clock_probes": self.probes}


def now_us() -> int:
    return time.time_ns() // 1000


def estimate(samples: list[tuple[int, int, int]]) -> Offset:
    """From (t0, remote, t2) triples: the offset of the one with the shortest round trip."""
    if not samples:
        raise ValueError("no clock probe answered")
    t0, remote, t2 = min(samples, key=lambda s: s[2] - s[0])
    return Offset(remote - (t0 + t2) // 2, (t2 - t0 + 1) // 2, t2 - t0, len(samples))


def measure(proc: subprocess.Popen, probes: int = PROBES) -> Offset:
    """Probe a running `stackbench-load --clock` (its stdin and stdout are pipes)."""
    samples = []
    try:
        for _ in range(probes):
            t0 = now_us()
            proc.stdin.write(b"t\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            t2 = now_us()
            if not line.strip().isdigit():
                raise HostError(f"the clock probe answered {line[:80]!r}")
            samples.append((t0, int(line), t2))
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return estimate(samples)

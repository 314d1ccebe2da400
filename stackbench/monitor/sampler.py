"""A background thread sampling the stack's cgroup every `interval_s` on the wall clock
(the engine's timeline uses the same clock: started_unix_us).

Its own cost is what bench/monitor-overhead measures; a sample reads ~6 small cgroup
files (~40 µs each). The thread runs in the lab process, which is pinned to the engine's
cores, so it does not take CPU from the server.
"""

from __future__ import annotations

import threading
import time

from stackbench.model.cost import CgroupSample
from stackbench.monitor.cgroup_stats import CgroupReader

DEFAULT_INTERVAL_S = 0.1


class Sampler:
    def __init__(self, reader: CgroupReader, interval_s: float = DEFAULT_INTERVAL_S):
        self.reader = reader
        self.interval_s = interval_s
        self.samples: list[CgroupSample] = []
        self.cost_s = 0.0  # time spent sampling, to report the sampler's own overhead
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="stackbench-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> list[CgroupSample]:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self._sample()
        return self.samples

    def _loop(self) -> None:
        next_t = time.monotonic() + self.interval_s
        while not self._stop.wait(max(0.0, next_t - time.monotonic())):
            self._sample()
            next_t += self.interval_s
            if next_t < time.monotonic():  # fell behind (machine overloaded): skip, don't burst
                next_t = time.monotonic() + self.interval_s

    def _sample(self) -> None:
        t0 = time.perf_counter()
        self.samples.append(self.reader.sample(time.time_ns() // 1000))
        self.cost_s += time.perf_counter() - t0

"""Visitor classes that load the stack beside the measured visitors: one engine per
class, each in its class's client namespace, started before the measured load's
warm-up and lasting past its end, so they are there for the whole measured window. A
class's engine failing does not fail the cell (its error is kept with its figures);
every engine is bounded by its own duration and the engine driver's time limit."""

from __future__ import annotations

import threading
from contextlib import nullcontext
from dataclasses import replace
from typing import Callable

from stackbench.engine.process import LoadSpec
from stackbench.engine.result import EngineResult
from stackbench.errors import StackbenchError

Load = Callable[[LoadSpec, list[int]], EngineResult]


class Background:
    def __init__(self, load: Load, cpus: list[int]):
        self.load, self.cpus = load, cpus
        self.threads: list[threading.Thread] = []
        self.results: dict[str, dict] = {}

    def start(self, name: str, spec: LoadSpec, context: Callable = nullcontext) -> None:
        def run() -> None:
            try:
                with context():
                    result = self.load(spec, self.cpus)
                self.results[name] = summary(spec, result)
            except StackbenchError as e:
                self.results[name] = {"connections": spec.connections, "error": e.message}

        thread = threading.Thread(target=run, name=f"visitors-{name}", daemon=True)
        self.threads.append(thread)
        thread.start()

    def finish(self) -> dict[str, dict]:
        for thread in self.threads:
            thread.join()
        return dict(self.results)


def summary(spec: LoadSpec, r: EngineResult) -> dict:
    """What the report shows of a class: its own throughput, latency and errors."""
    return {"connections": spec.connections, "keepalive": spec.keepalive, "read_rate": spec.read_rate,
            "rcvbuf": spec.rcvbuf, "requests_per_s": r.requests_per_s, "completed": r.requests.completed,
            "failed": r.requests.failed, "non_2xx": r.requests.non_2xx, "latency_p50_us": r.latency.p50_us,
            "latency_p99_us": r.latency.p99_us, "without_response": r.clients.without_response,
            "duration_us": r.duration_us}


def spec_for(base: LoadSpec, connections: int, keepalive: bool, read_rate: int | None, rcvbuf: int | None,
             seconds: float) -> LoadSpec:
    # Over TLS a class's keep-alive is its handshake mode: kept connections, or a new one
    # per request resuming its session as browsers do (HTTP/2 keeps its connections).
    handshake = None if base.handshake is None else ("keep-alive" if keepalive or base.http2 else "resumed")
    return replace(base, connections=connections, keepalive=keepalive, read_rate=read_rate, rcvbuf=rcvbuf,
                   duration_s=seconds, requests=None, warmup_s=0.0, rate=None, threads=1, phase="background",
                   on_progress=None, handshake=handshake)

"""Driving the load engine `stackbench-load` as a child process and reading its JSON
(never its text) into an EngineResult.

The JSON contract is loadgen/schema/result-v1.schema.json; tests validate real output
against it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Iterator

from stackbench.upkeep import binaries, leftovers
from stackbench.engine.journey import Journey
from stackbench.engine.result import EngineResult, Progress
from stackbench.errors import EngineError
from stackbench.upkeep.supervise import die_with_parent
from stackbench.units import engine_duration

SCHEMA_VERSION = 1
REPO_ROOT = binaries.REPO_ROOT
SCHEMA_PATH = REPO_ROOT / "loadgen" / "schema" / "result-v1.schema.json"


@dataclass(frozen=True)
class LoadSpec:
    url: str
    connections: int
    threads: int = 1
    duration_s: float | None = 2.0
    requests: int | None = None
    warmup_s: float = 0.0
    keepalive: bool = True
    timeout_s: float = 10.0
    rate: float | None = None
    count_headers: tuple[str, ...] = ()
    # A weighted URL mix ((path, weight), ...) on the server `url` names; empty: `url` alone.
    mix: tuple[tuple[str, int], ...] = ()
    # Page mode: the page's path, its assets, connections per visitor (browsers open 6).
    page: str | None = None
    assets: tuple[str, ...] = ()
    page_conns: int = 6
    # Visits (engine/journey.py): each visitor follows the journey on `url`'s server with
    # up to `page_conns` connections; `connections` then counts visitors, `rate` visits a
    # second and `requests` visits.
    journey: Journey | None = None
    # Visits of which a share log in (engine/logged_in.py): `login_journey` is the journey
    # of those who do, `login_share` their share (0 to 1) of the visitors, or of the visits
    # a second; `journey` then is the anonymous visitors'. Several engines, merged.
    login_journey: Journey | None = None
    login_share: float = 0.0
    # Why this load runs: "measure", "warmup" or "profile" (the system-call pass). The
    # engine never sees it; it names the load for the runner's observers and tests.
    phase: str = "measure"
    # A target that is not loopback (the lab's own namespaces, or --allow-remote-target):
    # checked by target.py before any load; the engine must be told too.
    allow_remote: bool = False
    read_rate: int | None = None  # bytes/s per connection (a slow reader)
    rcvbuf: int | None = None  # SO_RCVBUF before connect
    # Told the engine's progress about once a second (--progress: a JSON line on stderr,
    # parsed into a Progress).
    on_progress: Callable[[Progress], None] | None = field(default=None, compare=False, repr=False)
    # Several engines as one load (hosts/clients.py): start at this wall-clock instant
    # (µs since the epoch, the engine's own clock) and export histogram buckets to merge.
    start_at_us: int | None = None
    histogram: bool = False
    # Over SSH: the engine exits when its stdin closes (the lab keeps a pipe open), so a
    # lab, a Ctrl-C or a connection that dies stops the remote load at once.
    watch_stdin: bool = False
    # An https:// url: the engine trusts only `cacert` (the run's CA, PEM), or
    # accepts exactly the leaf `pin_cert` (PEM, compared by its bytes: measured runs,
    # where verifying a chain per connection would make the engine the bottleneck of a
    # full-handshake run). `handshake`: keep-alive | resumed | full (None: the engine's
    # default, keep-alive); `http2` offers ALPN h2 with `streams` per connection.
    cacert: str | None = None
    pin_cert: str | None = None
    handshake: str | None = None
    http2: bool = False
    streams: int = 1
    # The engine's I/O path, "epoll" or "uring"; None: the engine's default.
    io: str | None = None

    def argv(self, binary: str, journey_file: str | None = None) -> list[str]:
        """`journey_file`: the journey's JSON in that file instead of on the command line
        (a login's passwords never on a command line: /proc/PID/cmdline is world-readable)."""
        argv = [binary, "--json", "-c", str(self.connections), "-t", str(max(1, min(self.threads, self.connections))),
                "--timeout", engine_duration(self.timeout_s)]
        if self.duration_s is not None:
            argv += ["-d", engine_duration(self.duration_s)]
        if self.requests is not None:
            argv += ["-n", str(self.requests)]
        if self.warmup_s:
            argv += ["--warmup", engine_duration(self.warmup_s)]
        if self.handshake is not None:
            # Over TLS the handshake mode says whether connections are kept (keep-alive) or
            # one is opened per request (resumed, full): it is the keep-alive switch there.
            argv += ["--handshake", self.handshake]
        elif not self.keepalive:
            argv.append("--no-keepalive")
        if self.cacert is not None:
            argv += ["--cacert", self.cacert]
        if self.pin_cert is not None:
            argv += ["--pin-cert", self.pin_cert]
        if self.http2:
            argv.append("--http2")
            if self.streams != 1:
                argv += ["--streams", str(self.streams)]
        if self.rate is not None:
            argv += ["--rate", str(self.rate)]
        for name in self.count_headers:
            argv += ["--count-header", name]
        if self.page is not None:
            argv += ["--page", self.page, "--page-conns", str(self.page_conns)]
            if self.assets:
                argv += ["--assets", ",".join(self.assets)]
        if self.journey is not None:
            argv += ["--journey", journey_file or self.journey.text(), "--page-conns", str(self.page_conns)]
        if self.allow_remote:
            argv.append("--allow-remote")
        if self.on_progress is not None:
            argv.append("--progress")
        if self.read_rate is not None:
            argv += ["--read-rate", str(self.read_rate)]
        if self.rcvbuf is not None:
            argv += ["--rcvbuf", str(self.rcvbuf)]
        if self.start_at_us is not None:
            argv += ["--start-at", str(self.start_at_us)]
        if self.histogram:
            argv.append("--histogram")
        if self.io is not None:
            argv += ["--io", self.io]
        if self.watch_stdin:
            argv.append("--watch-stdin")
        for path, weight in self.mix:
            argv += ["--url", f"{path}={weight}"]
        return argv + [self.url]


def binary() -> str:
    """The engine: $STACKBENCH_LOAD, the repo's release build, or one on PATH."""
    return binaries.find("stackbench-load", "STACKBENCH_LOAD", "loadgen", EngineError, "the load engine")


def run(spec: LoadSpec, cpus: list[int] | None = None, engine: str | None = None,
        wrap: Callable[[list[str]], list[str]] | None = None, budget: float | None = None,
        started: Callable[[subprocess.Popen], None] | None = None) -> EngineResult:
    """Run one load and return its result, parsed once. `engine` and `wrap` run it
    elsewhere: an engine shipped to a client host, its command line wrapped in ssh (and
    `budget`, its time limit, then worked out on the lab's clock). `started` is told the
    process: run on a thread, which Ctrl-C does not reach, it is the caller's to stop."""
    with _journey_file(spec) as journey_file:
        return _run(spec, spec.argv(engine or binary(), journey_file), cpus, wrap, budget, started)


def run_threads(work: list[Callable[[], None]], procs: list[subprocess.Popen]) -> None:
    """Each of `work` on a thread of its own, started from this one (a thread inherits
    this one's network namespace), until all end. Ctrl-C reaches this thread only: on it
    the engines the threads reported in `procs` (`run`'s `started`) are killed here."""
    threads = [threading.Thread(target=w, daemon=True) for w in work]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except BaseException:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        raise


@contextmanager
def _journey_file(spec: LoadSpec) -> Iterator[str | None]:
    """A journey that logs in, written for the engine's run to a file only its owner reads
    (0600, in a 0700 directory marked as the lab's, swept if the lab dies), then removed;
    any other journey stays on the command line."""
    if spec.journey is None or spec.journey.login is None:
        yield None
        return
    folder = leftovers.make_dir("stackbench-journey-")
    try:
        fd = os.open(folder / "journey.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(spec.journey.text())
        yield str(folder / "journey.json")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(spec: LoadSpec, argv: list[str], cpus: list[int] | None, wrap: Callable[[list[str]], list[str]] | None,
         budget: float | None, started: Callable[[subprocess.Popen], None] | None) -> EngineResult:
    if wrap is not None:
        argv = wrap(argv)

    def preexec() -> None:
        die_with_parent()  # bounded anyway (its duration), but not a second past a killed lab
        if cpus:
            os.sched_setaffinity(0, cpus)

    budget = budget or budget_s(spec)
    # stdin: never the lab's terminal; a pipe held open for the run when the engine
    # watches it (closed, it stops the engine).
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if spec.watch_stdin else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=preexec)
    if started is not None:
        started(proc)
    # Both pipes are read on threads, so a full stderr never blocks the engine and its
    # progress lines reach the terminal while it runs.
    chunks: list[bytes] = []
    errors: list[bytes] = []
    stdout = proc.stdout
    assert stdout is not None  # asked for as a pipe
    readers = [threading.Thread(target=lambda: chunks.append(stdout.read()), daemon=True),
               threading.Thread(target=_read_stderr, args=(proc.stderr, errors, spec.on_progress), daemon=True)]
    for t in readers:
        t.start()
    try:
        proc.wait(timeout=budget)
        for t in readers:
            t.join()
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise EngineError(f"the load engine did not finish within {budget:.0f} s", detail=" ".join(argv)) from None
    except BaseException:  # Ctrl-C: the engine gets SIGINT from the terminal too; make sure
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        raise
    if proc.stdin is not None:
        proc.stdin.close()
    out, err = b"".join(chunks), b"".join(errors)
    if proc.returncode != 0:
        raise EngineError(f"the load engine failed (exit status {proc.returncode})",
                          detail=err.decode(errors="replace").strip() or " ".join(argv))
    try:
        doc = json.loads(out)
    except json.JSONDecodeError as e:
        raise EngineError(f"the load engine printed invalid JSON: {e}", detail=out[:300].decode(errors="replace")) from None
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise EngineError(f"the load engine speaks schema {doc.get('schema_version')!r}, this stackbench reads {SCHEMA_VERSION}",
                          hint="rebuild it: ./scripts/setup.sh")
    return EngineResult.from_doc(doc)


def budget_s(spec: LoadSpec) -> float:
    """How long the lab lets one engine run before killing it."""
    wait = max(0.0, (spec.start_at_us or 0) / 1e6 - time.time())
    if spec.duration_s is None:
        return 600 + spec.warmup_s + wait  # a request count: bounded by this wall-clock limit
    return (spec.duration_s or 0) + spec.warmup_s + spec.timeout_s + 30 + wait


def version() -> str | None:
    try:
        out = subprocess.run([binary(), "--version"], capture_output=True, text=True, timeout=10).stdout
    except (EngineError, OSError, subprocess.TimeoutExpired):
        return None
    return out.strip().split()[-1] if out.strip() else None


def _read_stderr(stream: IO[bytes], errors: list[bytes], on_progress: Callable[[Progress], None] | None) -> None:
    """Progress lines go to `on_progress`; anything else is the engine's error text."""
    for line in stream:
        if on_progress is not None and line.startswith(b'{"progress"'):
            try:
                on_progress(Progress.from_line(json.loads(line)["progress"]))
            except (ValueError, KeyError, TypeError, AttributeError):  # not a progress line after all
                errors.append(line)
            continue
        errors.append(line)

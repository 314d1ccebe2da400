"""What a run prints while it goes: a line per finished cell off a terminal, JSON lines
for scripts, nothing with --quiet, and an ETA that learns from the cells so far."""

from __future__ import annotations

import io
import json
import tomllib

from stackbench.planning import plan as plan_mod
from stackbench.engine import EngineResult
from stackbench.engine.result import Progress
from stackbench.upkeep.pinning import Pinning
from stackbench.report.text.progress import TerminalProgress
from stackbench.states import CellStatus
from stackbench.model.cell import StoredCell

PLAN = plan_mod.parse(tomllib.loads('concurrency = [1, 8]\nkeepalive = [true]\nworkloads = ["php-hello"]\n'
                                    'duration = "2s"\nwarmup = "0s"\nsyscalls = false\n[[stacks]]\nid = "nginx-fpm"\n'),
                      "t.toml")


def record(cell, rps=1234.5, failed=0):
    doc = {"schema_version": 1, "started_unix_us": 1, "duration_us": 1_000_000, "requests_per_s": rps,
           "requests": {"completed": 100, "ok_2xx": 100, "non_2xx": 0, "failed": failed},
           "latency_us": {"mean": 10.0, "percentiles": {"50": 900, "99": 2500}}, "warnings": [], "warning_codes": []}
    return StoredCell(id=cell.seq + 1, run_id=7, seq=cell.seq, repetition=0, stack_id="nginx-fpm",
                      stack_label=cell.stack.label, knobs={}, workload=cell.workload, concurrency=cell.concurrency,
                      keepalive=True, status=CellStatus.OK, error=None, config_hash=None, versions={},
                      pinning=Pinning([0], [1]),
                      engine=EngineResult.from_doc(doc))


def drive(progress):
    cells = plan_mod.expand(PLAN)
    progress.plan_started(7, PLAN, cells, Pinning([0], [1]))
    for c in cells:
        progress.cell_started(c)
        progress.cell_finished(c, record(c, failed=3 if c.concurrency == 8 else 0))
    progress.plan_finished(7, "complete")
    return cells


def test_off_a_terminal_each_finished_cell_is_a_line():
    err = io.StringIO()
    drive(TerminalProgress(stream=err))
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("run 7: 2 cells (about")
    assert lines[1].startswith("[1/2] nginx-fpm · php-hello · c=1 · on: 1,234 req/s, p99 2.50 ms (")
    assert lines[2].startswith("[2/2] nginx-fpm · php-hello · c=8 · on: 1,234 req/s, p99 2.50 ms, 3 errors (")


def test_json_mode_prints_one_object_per_cell_and_nothing_else():
    err, out = io.StringIO(), io.StringIO()
    drive(TerminalProgress(stream=err, mode="json", out=out))
    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [(r["run_id"], r["seq"], r["concurrency"], r["failed"]) for r in rows] == [(7, 0, 1, 0), (7, 1, 8, 3)]
    assert rows[0]["requests_per_s"] == 1234.5 and rows[0]["p99_us"] == 2500 and rows[0]["status"] == "ok"
    assert err.getvalue() == ""


def test_quiet_says_nothing_but_errors():
    err = io.StringIO()
    p = TerminalProgress(stream=err, mode="quiet")
    drive(p)
    assert err.getvalue() == ""
    from stackbench.errors import ServerError
    p.stack_failed(PLAN.stacks[0], ServerError("nginx exited"))
    assert "nginx exited" in err.getvalue()


def test_eta_scales_the_estimate_by_how_long_cells_really_took(monkeypatch):
    import stackbench.report.text.progress as progress_mod

    clock = {"t": 100.0}
    monkeypatch.setattr(progress_mod.time, "monotonic", lambda: clock["t"])
    p = TerminalProgress(stream=io.StringIO())
    cells = plan_mod.expand(PLAN)
    p.plan_started(1, PLAN, cells, Pinning([0], [1]))
    assert p.eta_s() is None  # nothing to learn from yet
    per_cell = PLAN.cell_seconds(cells[0])
    p.cell_started(cells[0])
    clock["t"] += 2 * per_cell  # the first cell took twice its estimate
    p.cell_finished(cells[0], record(cells[0]))
    assert abs(p.eta_s() - 2 * per_cell) < 1e-6  # so does the rest, probably
    assert "1/2 cells" in p.bar() and "ETA" in p.bar()


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_running_cell_shows_the_engines_figures_live(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    err = Tty()
    progress = TerminalProgress(stream=err)
    cells = plan_mod.expand(PLAN)
    progress.plan_started(7, PLAN, cells, Pinning([0], [1]))
    progress.cell_started(cells[0])
    progress.cell_progress(cells[0], Progress("warmup", elapsed_s=1.0, completed=450, per_s=450.9))
    progress.cell_progress(cells[0], Progress("measure", elapsed_s=2.0, completed=15402, failed=2, non_2xx=1,
                                              per_s=5120.0))
    frames = [f for f in err.getvalue().split("\r\033[K") if f]
    assert frames[-2].endswith("c=1 · keep-alive: warming up 1 s: 451 req/s now, 450 done")
    assert frames[-1].endswith("c=1 · keep-alive: 2 s: 5,120 req/s now, 15,402 done, 3 errors")
    assert all("\n" not in f for f in frames[1:])  # rewritten in place, never a new line


def test_the_engine_driver_hands_progress_lines_over_and_keeps_errors_apart():
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from stackbench import engine

    class Hello(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"hi")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    seen: list[Progress] = []
    try:
        result = engine.run(engine.LoadSpec(url=f"http://127.0.0.1:{server.server_address[1]}/", connections=2,
                                            duration_s=2.2, warmup_s=0.0, on_progress=seen.append))
    finally:
        server.shutdown()
    assert len(seen) >= 2 and {p.phase for p in seen} == {"measure"}
    assert [p.completed for p in seen] == sorted(p.completed for p in seen)
    assert seen[-1].completed <= result.requests.completed and result.requests.completed > 0

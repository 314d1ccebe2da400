"""Which side was the bottleneck of each cell: the engine's busiest thread and
the server's cores, each against 90 %, with both sides' CPU per request — computed once
per cell (analysis/bottleneck.py), shown in `show` (the `limit` column; `--wide` the
figures), the HTML report and export."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from stackbench.analysis import bottleneck, figures, summary
from stackbench.analysis.run import analyze
from stackbench.engine.result import EngineResult
from stackbench.report import export
from stackbench.report.html import bottleneck as html_bottleneck
from stackbench.report.html.colors import Palette
from stackbench.report.html.figure import Context
from stackbench.report.text import run_report, table
from stackbench.report.words import bottleneck as words
from stackbench.store import Store
from cells import stored_cell, stored_run

WINDOW_US = 1_000_000
ONE_CORE = {"server_cpus": [0], "engine_cpus": [1], "server_host": None, "shared": False}


def cell(seq=0, *, engine_busy=0.5, server_busy=0.5, label="nginx", repetition=0, completed=10_000,
         engine_cpu=(60_000, 40_000), **columns):
    """A measured cell of a 1 s window: the engine's busiest thread at `engine_busy` of a
    core, the stack's cgroup at `server_busy` of its one core, `completed` requests."""
    user, system = engine_cpu
    return stored_cell(**{
        "seq": seq, "repetition": repetition, "stack_label": label, "duration_us": WINDOW_US,
        "requests_per_s": float(completed), "requests_completed": completed, "requests_failed": 0, "non_2xx": 0,
        "connections_measured": 16, "connections_without_response": 0,
        "cpu_total_us": None if server_busy is None else int(server_busy * WINDOW_US),
        "cpu_window_us": WINDOW_US, "pinning": ONE_CORE,
        "engine": {"engine_cpu": {"system_us": system, "max_thread_busy": engine_busy,
                                  "saturated": engine_busy is not None and engine_busy >= 0.9}},
        "engine_cpu_us": user,
        "caveats": [{"code": "engine_saturated", "params": {"thread": 0, "busy": engine_busy}}]
        if engine_busy is not None and engine_busy >= 0.9 else [], **columns})


@pytest.mark.parametrize("engine_busy, server_busy, side", [
    (0.45, 0.97, bottleneck.SERVER),
    (0.93, 0.50, bottleneck.ENGINE),
    (0.91, 0.96, bottleneck.BOTH),
    (0.30, 0.60, bottleneck.NEITHER),      # c=1, a shaped link, a sleeping script
    (0.90, 0.90, bottleneck.BOTH),          # 90 % itself is at the limit, on both sides
    (0.899, 0.899, bottleneck.NEITHER),
    (0.95, None, None),                     # no cgroup: engine alone, or both? not a guess
    (None, 0.95, None),                     # an engine that reported no share nor saturation
])
def test_each_side_is_judged_at_90_percent_of_its_cores(engine_busy, server_busy, side):
    c = cell(engine_busy=engine_busy, server_busy=server_busy)
    if engine_busy is None:  # the engine said nothing of its threads at all
        c = stored_cell(**{k: v for k, v in dict(duration_us=WINDOW_US, requests_completed=100,
                                                   cpu_total_us=int(server_busy * WINDOW_US),
                                                   cpu_window_us=WINDOW_US, pinning=ONE_CORE).items()})
    b = figures.of(c).bottleneck
    assert b is not None and b.side == side
    assert b.engine_busy == (None if engine_busy is None else pytest.approx(engine_busy))


SMALL_VPS = {"limit_bytes": 512 << 20}  # a machine profile's memory limit: its mark on a cell


@pytest.mark.parametrize("stack, services, events, pinning, side, said", [
    # small-vps: PHP at 78 % of the one CPU, MariaDB 17 %: the machine, not "neither"
    (0.78, 0.17, SMALL_VPS, ONE_CORE, bottleneck.MACHINE, "machine (its 1 CPU)"),
    # a 0.5 CPU quota: 0.40 + 0.07 cores' worth is 80 % + 14 % of the quota
    (0.80, 0.14, None, {**ONE_CORE, "server_cpu_quota": 0.5}, bottleneck.MACHINE, "machine (its 0.5 CPU quota)"),
    # the stack alone at the limit of the machine: the machine too
    (0.95, 0.0, SMALL_VPS, ONE_CORE, bottleneck.MACHINE, "machine (its 1 CPU)"),
    # the machine with room to spare: the stack waited (a sleeping script, a small pool)
    (0.50, 0.20, SMALL_VPS, ONE_CORE, bottleneck.NEITHER, "neither"),
    # no machine profile: the database is not the question; the stack's own share decides
    (0.78, 0.17, None, ONE_CORE, bottleneck.NEITHER, "neither"),
])
def test_under_a_machine_profile_its_cpu_shared_with_the_services_can_be_the_limit(stack, services, events,
                                                                                  pinning, side, said):
    """`stack`, `services`: each one's CPU as a share of the machine's (its cores, or its quota)."""
    cpus = pinning.get("server_cpu_quota") or 1
    c = cell(engine_busy=0.3, server_busy=None, pinning=pinning, memory_events=events,
             cpu_total_us=int(stack * cpus * WINDOW_US), service_cpu_us=int(services * cpus * WINDOW_US))
    b = figures.of(c).bottleneck
    assert b is not None and b.side == side and words.word(b) == said
    if events or "server_cpu_quota" in pinning:
        assert b.machine_busy == pytest.approx(stack + services) and b.machine_cpus == cpus
    else:
        assert b.machine_busy is None
    s = bottleneck.summarize([b, b])
    assert words.summary_word(s) == said and words.figure_values(s)[-1] == said


def test_the_engine_at_its_limit_beside_a_full_machine_is_both():
    c = cell(engine_busy=0.95, server_busy=None, pinning=ONE_CORE, memory_events=SMALL_VPS,
             cpu_total_us=int(0.7 * WINDOW_US), service_cpu_us=int(0.25 * WINDOW_US))
    assert figures.of(c).bottleneck.side == bottleneck.BOTH


def test_the_engines_saturation_flag_decides_when_its_share_is_missing():
    e = EngineResult.from_doc({"engine_cpu": {"user_us": 1, "system_us": 0, "saturated": True}})
    assert e.engine_busy is None
    assert bottleneck.of(e, 0.5, None, None).side == bottleneck.ENGINE
    assert bottleneck.of(e, 0.95, None, None).side == bottleneck.BOTH


def test_per_request_figures_are_each_sides_cpu_over_the_completed_requests():
    b = figures.of(cell(engine_busy=0.62, server_busy=0.98, completed=10_000, engine_cpu=(60_000, 40_000))).bottleneck
    # engine: (60 + 40 ms) / 10,000 requests = 10 µs; server: 0.98 s of its core / 10,000 = 98 µs
    assert b.engine_cpu_us_per_request == pytest.approx(10.0)
    assert b.server_cpu_us_per_request == pytest.approx(98.0)
    assert b.server_busy == pytest.approx(0.98) and b.side == bottleneck.SERVER


def test_a_cell_the_engine_never_measured_has_no_bottleneck():
    assert figures.of(stored_cell(engine=None, status="failed", error="nginx exited")).bottleneck is None


def test_over_repetitions_every_measured_run_counts_and_disagreement_is_shown():
    # rep 2's engine at its limit with the server at 50 %: an invalid run, counted all the same
    cells = [cell(0, engine_busy=0.4, server_busy=0.97), cell(1, engine_busy=0.5, server_busy=0.96, repetition=1),
             cell(2, engine_busy=0.95, server_busy=0.5, repetition=2)]
    (row,) = summary.summarize(cells)
    s = row.bottleneck
    assert row.valid == 2 and s.runs == 3
    assert s.sides == ((bottleneck.SERVER, 2), (bottleneck.ENGINE, 1)) and s.side is None
    assert s.engine_busy == pytest.approx(0.5) and s.server_busy == pytest.approx(0.96)
    assert words.summary_word(s) == "server 2/3, engine 1/3"
    agreed = bottleneck.summarize([figures.of(c).bottleneck for c in cells[:2]])
    assert agreed.side == bottleneck.SERVER and words.summary_word(agreed) == "server"


def _show(cells, **kw) -> str:
    out = io.StringIO()
    run_report.render(analyze(stored_run(environment={"pinning": ONE_CORE}), cells), out, **kw)
    return out.getvalue()


def test_show_has_a_limit_column_and_wide_the_figures_behind_it():
    cells = [cell(0, engine_busy=0.45, server_busy=0.97), cell(1, label="h2o", engine_busy=0.93, server_busy=0.96)]
    text = _show(cells)
    head = next(x for x in text.splitlines() if x.startswith("#"))
    assert head.split()[-2:] == ["limit", "outcome"] and "engine busy" not in head
    rows = {x.split()[4]: x for x in text.splitlines() if x[:1].isdigit()}
    assert rows["nginx"].split()[-2:] == ["server", "served"] and rows["h2o"].split()[-2:] == ["both", "engine-bound"]
    assert "limit = the side at ≥ 90 % busy" in text.replace("\n  ", " ") and "the side that was the bottleneck" not in text
    text = _show(cells, explain=True)
    assert "limit = the side that was the bottleneck" in text and "`--wide`: how busy each side was" in text
    wide = _show(cells, wide=True, explain=True)
    line = next(x for x in wide.splitlines() if x.startswith("0 "))
    assert line.split()[-5:-1] == ["45%", "10.0", "97%", "server"]  # engine busy, engine µs/req, server busy, limit
    assert "engine busy = the load engine's busiest thread" in wide


def test_the_summary_over_repetitions_has_the_limit_too():
    cells = [cell(i, engine_busy=0.4, server_busy=0.95, repetition=i) for i in range(3)]
    text = _show(cells)
    row = next(x for x in text.splitlines() if x.startswith("php-hello"))
    assert row.rstrip().endswith("server")
    assert "limit and busy over repetitions" not in text
    explained = _show(cells, explain=True)
    assert "limit and busy over repetitions: every measured run counts" in explained.replace("\n  ", " ")
    wide = _show(cells, wide=True)
    row = next(x for x in wide.splitlines() if x.startswith("php-hello"))
    assert row.split()[-4:] == ["40%", "10.0", "95%", "server"]


def test_without_either_sides_share_there_is_no_column():
    # an older store's cell: no thread share, no cgroup CPU
    c = stored_cell(requests_completed=100)
    assert not words.shown([figures.of(c).bottleneck])
    assert "limit" not in table.columns(analyze(stored_run(), [c]).cells)


def test_export_has_each_cells_bottleneck_and_validates():
    cells = [cell(0, engine_busy=0.45, server_busy=0.97), cell(1, label="h2o", engine_busy=0.93, server_busy=0.5)]
    doc = export.document(analyze(stored_run(environment={}), cells))
    jsonschema.validate(doc, json.loads(export.SCHEMA_PATH.read_text()))
    got = [(c["engine_busy_share"], c["engine_cpu_us_per_request"], c["server_busy_share"], c["bottleneck"])
           for c in doc["cells"]]
    assert got == [(pytest.approx(0.45), pytest.approx(10.0), pytest.approx(0.97), "server"),
                   (pytest.approx(0.93), pytest.approx(10.0), pytest.approx(0.5), "engine")]
    out = io.StringIO()
    export.write_cells(analyze(stored_run(environment={}), cells).cells, out)
    head, first, _ = out.getvalue().splitlines()
    row = dict(zip(head.split(","), first.split(",")))
    assert row["bottleneck"] == "server" and float(row["engine_busy_share"]) == pytest.approx(0.45)


def test_the_html_report_has_it_per_stack_and_per_run():
    cells = [cell(i, engine_busy=0.4 + i / 100, server_busy=0.97, repetition=i) for i in range(2)]
    a = analyze(stored_run(environment={}), cells)
    html = html_bottleneck.render(Context(a, None, Palette(a.stack_labels)))  # type: ignore[arg-type]
    assert "Which side was the limit" in html and "<td>server</td>" in html
    assert '<details class="numbers"><summary>every run</summary>' in html and "1:0" in html and "1:1" in html
    assert html_bottleneck.render(Context(analyze(stored_run(), [stored_cell()]), None, Palette([]))) == ""  # type: ignore[arg-type]


def test_stored_cells_of_an_older_store_read_back_with_their_bottleneck(tmp_path):
    # tests/data/store-v9.sqlite: real cells (nginx + FPM, php-hello c=4), migrated on opening
    path = tmp_path / "v9.sqlite"
    shutil.copy(Path(__file__).parent / "data" / "store-v9.sqlite", path)
    store = Store(path)
    try:
        (run,) = store.runs()
        cells = store.cells(run["id"])
    finally:
        store.close()
    found = [figures.of(c).bottleneck for c in cells]
    assert len(found) == 2 and all(b is not None for b in found)
    for b in found:  # the real figures: a one-worker FPM pool held the server's core, the engine idled
        assert 0 < b.engine_busy < 0.9 and b.server_busy >= 0.9 and b.side == bottleneck.SERVER
        assert b.engine_cpu_us_per_request > 0 and b.server_cpu_us_per_request > b.engine_cpu_us_per_request

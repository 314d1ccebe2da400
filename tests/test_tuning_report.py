"""A tuning in the HTML report (docs/guide/the-report.md): a stored tuning reviewed from
synthetic candidate cells (analysis/tuning.py review) is drawn as its stack's curve —
each candidate's figure against the pool's size with its interval, the candidate that
was OOM-killed once hollow and named, the chosen pool ringed, the one-request-a-connection
stage a square beside it — with the same sentence on why as the terminal's; and
`stackbench report` finds the tunings a run's tuned stacks took in its checked plan."""

from __future__ import annotations

import html
import io
import re
import tomllib

from cells import stored_cell, stored_run
from stackbench.analysis import tuning
from stackbench.analysis.run import analyze
from stackbench.commands import report as report_cmd
from stackbench.model.plan import CheckedPlan
from stackbench.model.tuning import StoredTuning, TuningMemory
from stackbench.planning import plan as plan_mod
from stackbench.report.html import page
from stackbench.report.text import tuning as tuning_text
from stackbench.report.words import tuning as words
from tests.test_report_html import check_document, figures_of

TUNED = "nginx + FPM (tuned: 4 PHP-FPM children)"
WINDOW_US = 2_000_000
OOM = {"code": "oom_killed", "params": {"count": 1, "before": 0, "after": 0, "limit_bytes": 512 << 20}}
ONE_REQUEST = "4 workers" + tuning.ONE_REQUEST_SUFFIX
# Responses a second of each candidate's three runs: 4 workers is the best that serves;
# 8 is a little faster but was OOM-killed in its second run.
CURVE = {"1 worker": (1, [50.0, 52.0, 51.0]), "2 workers": (2, [95.0, 100.0, 98.0]),
         "4 workers": (4, [180.0, 186.0, 190.0]), "8 workers": (8, [192.0, 120.0, 195.0])}


def _cell(run_id: int, seq: int, label: str, rps: float, rep: int, caveats: list = ()) -> object:
    return stored_cell(run_id=run_id, seq=seq, repetition=rep, stack_label=label, concurrency=16,
                       duration_us=WINDOW_US, requests_per_s=rps, requests_completed=int(rps * 2), requests_failed=0,
                       non_2xx=0, latency_p50_us=800, latency_p99_us=3000, connections_measured=16,
                       connections_without_response=0, caveats=list(caveats))


def _candidates() -> list:
    cells, seq = [], 0
    for label, (_, figures) in CURVE.items():
        for rep, rps in enumerate(figures):
            oom = label == "8 workers" and rep == 1
            cells.append(_cell(7, seq, label, rps, rep, [OOM] if oom else []))
            seq += 1
    return cells


def _second() -> list:
    return [_cell(8, i, ONE_REQUEST, rps, i) for i, rps in enumerate([150.0, 155.0, 152.0])]


def _tuning() -> StoredTuning:
    sizes = {label: size for label, (size, _) in CURVE.items()} | {ONE_REQUEST: 4}
    return StoredTuning(3, 6, 7, "nginx-fpm", "wordpress-home",
                        {"concurrency": 16, "keepalive": True, "machine": {"cpus": 1, "memory": "512M"}},
                        {"keepalive_run_id": 8},
                        TuningMemory(40 << 20, 150 << 20, 4, 512 << 20, 8, tuning.HEADROOM), sizes, 4,
                        {"pm": "static", "pm_max_children": 4}, tuning.Reason.BEST.value, "t")


def _review() -> tuning.Review:
    return tuning.review(_tuning(), _candidates(), _second())


class FakeStore:
    """What the report reads of a store: the tuning, each run's cells, nothing sampled."""

    def __init__(self, cells: dict[int, list]):
        self.by_run = cells

    def tunings(self) -> list[StoredTuning]:
        return [_tuning()]

    def cells(self, run_id: int) -> list:
        return self.by_run.get(run_id, [])

    def samples(self, cell_id: int) -> list:
        return []

    def processes(self, cell_id: int) -> list:
        return []

    def syscalls(self, cell_id: int) -> dict:
        return {}

    def config_files(self, config_hash: str) -> dict:
        return {}


def _tuned_run():
    """A comparison run whose stack was tuned: its checked plan names tuning 3."""
    checked = {"stacks": [{"id": "nginx-fpm", "label": TUNED, "tuned": True, "tuning": 3}]}
    cells = [_cell(5, i, TUNED, 185.0 + i, i) for i in range(3)]
    return analyze(stored_run(id=5, plan_checked=checked), cells)


def test_the_review_reads_the_curve_and_chooses_the_best_that_served():
    r = _review()
    by_size = {t.size: t for t in r.trials if not t.one_request}
    assert [t.serves for t in by_size.values()] == [True, True, True, False]
    assert by_size[8].failed == 1 and words.failures(by_size[8]) == "OOM kill"
    assert r.choice.chosen is by_size[4] and r.choice.reason is tuning.Reason.BEST
    assert r.one_request is not None and r.one_request.serves  # served, but slower: not taken


def test_the_report_draws_the_tuning_curve_with_the_chosen_point_and_the_failed_one():
    a = _tuned_run()
    text = page.render([a], FakeStore({}), "2026-01-01T00:00:00+00:00", {5: {TUNED: _review()}})
    check_document(text, [TUNED])
    fig = next(f for f in figures_of(text) if "Tuning — " in f)
    svg = re.search(r"<svg viewBox.*?</svg>", fig, re.S).group(0)
    # the chosen pool: a filled dot, ringed where it is drawn, with its note
    chosen = re.search(r'<circle class="dot c0" cx="([\d.]+)" cy="([\d.]+)" r="4"><title>4 workers: ', svg)
    assert chosen, svg
    assert f'<circle class="ring" cx="{chosen.group(1)}" cy="{chosen.group(2)}"' in svg
    assert '<text class="note"' in svg and ">chosen</text>" in svg
    # the pool OOM-killed once: hollow, and its hover and the marks say why
    assert re.search(r'<circle class="dot c0 hollow"[^>]*><title>8 workers: [^<]*failed: OOM kill</title>', svg)
    assert "hollow — 8 workers: failed 1 of 3 runs (OOM kill)" in html.unescape(fig)
    # the second stage: a square just right of 4 workers
    square = re.search(r'<rect class="dot c0" x="([\d.]+)"[^>]*><title>4 workers, one request a connection', svg)
    assert square and float(square.group(1)) + 4 > float(chosen.group(1))
    # every candidate's figure with its interval, in the table under the chart
    page_text = html.unescape(re.sub(r"<[^>]+>", " ", fig))
    assert "2/3 (OOM kill)" in page_text and "chosen, the best" in page_text
    # the same sentence on why as the terminal prints
    why = words.why(_review())
    assert why[1:] in html.unescape(fig)
    out = io.StringIO()
    tuning_text.render(_review(), out)
    assert why in out.getvalue() and "stackbench tunings 3" in page_text
    # nothing about tuning in a run whose stacks were not tuned
    assert "Tuning — " not in page.render([a], FakeStore({}), "now")


def test_the_report_command_finds_the_tunings_a_run_took_and_a_tunings_own_run():
    tuned = _tuned_run()
    candidates = analyze(stored_run(id=7), _candidates())
    store = FakeStore({7: _candidates(), 8: _second()})
    found = report_cmd.tunings(store, [tuned, candidates])  # type: ignore[arg-type]
    assert set(found) == {5, 7}
    assert found[5][TUNED].choice.chosen.size == 4 and found[7]["nginx-fpm"].tuning.id == 3
    gone = analyze(stored_run(id=9, plan_checked={"stacks": [{"id": "nginx-fpm", "label": "x", "tuning": 99}]}), [])
    assert report_cmd.tunings(store, [gone]) == {}  # type: ignore[arg-type]


def test_the_checked_plan_names_the_tuning_each_tuned_stack_took():
    p = plan_mod.parse(tomllib.loads('workloads = ["php-hello"]\nconcurrency = [16]\n[[stacks]]\nid = "nginx-fpm"\n'
                                     'label = "nginx + FPM"\nknobs = "tuned"\n[[stacks]]\nid = "apache-prefork-modphp"\n'),
                       "t.toml")
    from dataclasses import replace
    p = replace(p, stacks=[replace(p.stacks[0], label=TUNED, tuning=3), p.stacks[1]])
    checked = CheckedPlan.from_dict(p.checked())
    assert [(s.id, s.tuning) for s in checked.stacks] == [("nginx-fpm", 3), ("apache-prefork-modphp", None)]
    assert checked.tunings == {TUNED: 3}


def test_a_pool_that_holds_connections_is_reviewed_from_one_run_and_says_why_it_closes_them():
    # prefork with mod_php at 64 kept-alive clients: pools closing each connection after a
    # response (1, 2, 4) and the largest kept alive (25), which left clients waiting
    unserved = {"code": "clients_unserved", "params": {"without_response": 40, "connections": 64}}
    curve = {"1 worker" + tuning.ONE_REQUEST_SUFFIX: (1, [20.0, 21.0, 20.5]),
             "2 workers" + tuning.ONE_REQUEST_SUFFIX: (2, [20.5, 20.0, 21.0]),
             "4 workers" + tuning.ONE_REQUEST_SUFFIX: (4, [19.0, 19.5, 19.2]),
             "25 workers": (25, [17.0, 16.0, 18.0])}
    cells, seq = [], 0
    for label, (_, figures) in curve.items():
        for rep, rps in enumerate(figures):
            c = _cell(9, seq, label, rps, rep)
            if label == "25 workers":
                c = stored_cell(run_id=9, seq=seq, repetition=rep, stack_label=label, concurrency=64,
                                duration_us=WINDOW_US, requests_per_s=rps, requests_completed=int(rps * 2),
                                requests_failed=0, non_2xx=0, latency_p50_us=800, latency_p99_us=3000,
                                connections_measured=64, connections_without_response=40, caveats=[unserved])
            cells.append(c)
            seq += 1
    t = StoredTuning(4, 8, 9, "apache-prefork-modphp", "wordpress-home", {"concurrency": 64, "keepalive": True},
                     {}, TuningMemory(14 << 20, 86 << 20, 4, 512 << 20, 25, tuning.HEADROOM, 0.997, 4),
                     {label: n for label, (n, _) in curve.items()}, 1,
                     {"max_request_workers": 1, "keepalive_requests": 1}, tuning.Reason.BEST.value, "t")
    r = tuning.review(t, cells, None)
    kept = next(x for x in r.trials if not x.one_request)
    assert kept.size == 25 and not kept.serves and words.failures(kept) == "clients unserved"
    assert r.choice.chosen.size == 1 and r.choice.chosen.one_request and t.one_request
    why = words.why(r)
    assert "one request a connection" in why and "the largest pool kept alive, 25 workers: failed 3 of 3 runs: clients unserved" in why
    assert "kept the CPU 100% busy" in words.memory(t.memory) and "candidates stop at 4" in words.memory(t.memory)


def test_the_export_names_each_tuned_stacks_tuning_and_validates():
    import json

    import jsonschema

    from stackbench.report import export

    doc = export.document(_tuned_run(), {3: _tuning()})
    jsonschema.validate(doc, json.loads(export.SCHEMA_PATH.read_text()))
    (row,) = doc["tunings"]
    assert (row["stack_label"], row["tuning_id"], row["pool_size"], row["one_request"]) == (TUNED, 3, 4, False)
    assert row["knobs"] == {"pm": "static", "pm_max_children": 4} and row["question"]["concurrency"] == 16
    assert export.document(_tuned_run())["tunings"] == []  # the tuning no longer stored

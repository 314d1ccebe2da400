"""Each stack's time to steady (analysis/warmup.py) in the terminal report, the HTML
report and the export: a stack steady within the cap at every start, and one (a JVM still
compiling) that never was — measured anyway, and said so."""

from __future__ import annotations

import html
import io
import json

import jsonschema

from cells import stored_cell, stored_run
from stackbench.analysis.run import analyze
from stackbench.report import export
from stackbench.report.html import page
from stackbench.report.text import run_report
from tests.test_report_html import check_document
from tests.test_tuning_report import FakeStore

NGINX, JETTY = "nginx + FPM", "Jetty + FPM"
NOT_STEADY = {"code": "not_steady", "params": {"seconds": 20.0, "cap_s": 20.0, "tolerance": 0.05, "change": 0.18}}


def _warmup(seconds: float, steady: bool, fresh: bool = True) -> dict:
    windows = [[0.5, 1000 + 400 * i] for i in range(round(seconds / 0.5))]
    return {"seconds": seconds, "steady": steady, "fresh": fresh, "windows": windows, "tolerance": 0.05,
            "cap_s": 20.0, "change": 0.01 if steady else 0.18}


def _cells() -> list:
    cells, seq = [], 0
    for rep in range(5):
        for label, rps, warm, steady in ((NGINX, 7500.0, 1.5 + 0.5 * (rep % 2), True), (JETTY, 5200.0, 20.0, False)):
            for workload, fresh in (("php-hello", True), ("php-100k", False)):
                cells.append(stored_cell(seq=seq, repetition=rep, stack_label=label, workload=workload,
                                         requests_per_s=rps, duration_us=1_000_000,
                                         requests_completed=int(rps), requests_failed=0, non_2xx=0,
                                         connections_measured=16, connections_without_response=0,
                                         warmup=_warmup(warm if fresh else 1.5, steady or not fresh, fresh),
                                         caveats=[NOT_STEADY] if fresh and not steady else []))
                seq += 1
    return cells


def _analysis():
    return analyze(stored_run(plan_checked={"baseline": NGINX}), _cells())


def test_each_stacks_time_to_steady_is_its_fresh_starts():
    by = {s.stack_label: s for s in _analysis().steady}
    assert by[NGINX].seconds == (1.5, 2.0, 1.5, 2.0, 1.5) and by[NGINX].median_s == 1.5 and by[NGINX].not_steady == 0
    assert by[JETTY].never and by[JETTY].starts == 5 and by[JETTY].cap_s == 20.0


def test_the_terminal_shows_each_stacks_time_to_steady_and_the_caveat():
    out = io.StringIO()
    run_report.render(_analysis(), out)
    text = out.getvalue()
    assert "time to steady" in text and "within ±5%, at most 20 s" in text
    nginx_line = next(line for line in text.splitlines() if line.startswith(NGINX) and " s " in line + " ")
    assert "1.5 s" in nginx_line and "1.5–2.0 s over 5 starts" in nginx_line
    jetty_line = next(line for line in text.splitlines() if line.startswith(JETTY) and "≥ 20 s" in line)
    assert "not steady within the 20 s cap in 5 of 5 starts" in jetty_line
    assert "not steady after the 20 s warm-up cap (its last windows 18% above the ones before)" in text


def test_the_html_report_shows_the_same_table():
    text = page.render([_analysis()], FakeStore({}), "2026-01-01T00:00:00+00:00")
    check_document(text, [NGINX, JETTY])
    plain = html.unescape(text)
    assert "time to steady: how long each stack, freshly started" in plain
    assert "<td>≥ 20 s</td>" in plain and "1.5–2.0 s over 5 starts" in plain


def test_the_export_carries_each_cells_warm_up_and_each_stacks_time_to_steady():
    doc = export.document(_analysis())
    jsonschema.validate(doc, json.loads(export.SCHEMA_PATH.read_text()))
    first = doc["cells"][0]
    assert (first["warmup_s"], first["steady"], first["warmup_fresh"]) == (1.5, True, True)
    assert first["warmup_windows"][0] == [0.5, 1000]
    by = {r["stack_label"]: r for r in doc["time_to_steady"]}
    assert by[JETTY]["not_steady"] == 5 and by[JETTY]["seconds"] == [20.0] * 5 and by[NGINX]["median_s"] == 1.5
    out = io.StringIO()
    export.write_cells(_analysis().cells, out)
    header, row = out.getvalue().splitlines()[:2]
    assert header.endswith("warmup_s,steady,warmup_fresh,logged_in,visits_per_s,visit_p50_us,visit_p99_us,pages_per_visit")
    assert row.endswith("1.5,True,True,,,,,")  # no visits: their columns empty


def test_a_run_with_a_fixed_warm_up_shows_no_time_to_steady():
    cells = [stored_cell(seq=0, warmup={"seconds": 0.5, "steady": None, "fresh": True})]
    a = analyze(stored_run(), cells)
    out = io.StringIO()
    run_report.render(a, out)
    assert a.steady == [] and "time to steady" not in out.getvalue()
    assert export.document(a)["time_to_steady"] == [] and export.document(a)["cells"][0]["steady"] is None

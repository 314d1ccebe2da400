"""The machine to buy in the HTML report and the export (docs/guide/sizing.md): a synthetic
sizing's answer (analysis/sizing.py, as in tests/test_sizing.py) is drawn as capacity
against the machine's size — a series per stack, the 95 % intervals as whiskers, the target
as a line, enough filled, not enough hollow, a straddling interval a diamond, each stack's
smallest enough size ringed — under the terminal's answer sentence, with the figures in
the table; and with capacity runs made by the fake Lab and stored as a sizing's sizes,
`stackbench report --sizing ID` draws it and `stackbench export` of a size's run carries
the sizing, valid against its schema."""

from __future__ import annotations

import html
import io
import json
import re

import jsonschema
import pytest

from cells import stored_cell, stored_run
from stackbench.analysis import sizing
from stackbench.analysis.run import analyze
from stackbench.analysis.sizing import Enough, SizeCapacity
from stackbench.cli import main
from stackbench.model.environment import Yardstick
from stackbench.model.sizing import SizeRun, StoredSizing
from stackbench.report import export
from stackbench.report.html import page
from stackbench.report.text import sizing as sizing_text
from stackbench.report.words import sizing as words
from stackbench.store import Store
from tests.test_report_html import SPEED, check_document, figures_of, make_run
from tests.test_runner_order import lab  # noqa: F401  (the fake Lab fixture)
from tests.test_tuning_report import FakeStore

SLO = "p99 ≤ 1 s, no errors"
TARGET = 10.0
CORE = Yardstick(680.0, 640.0, 700.0, 18, "8.2.36", 0)  # the core the sizes were measured on
CPUS = {"small": 0.25, "mid": 0.5, "big": 1.0}


def _stored(core: float | None = None) -> StoredSizing:
    sizes = [{"machine": {"cpus": CPUS[label]}, "price": p, "label": label}
             for label, p in (("small", 3.0), ("mid", 6.0), ("big", 12.0))]
    return StoredSizing(1, "s", {"target": {"rate": TARGET, "hits_per_day": None, "peak_factor": 3.0},
                                 "sizes": sizes, "core": core},
                        ("nginx", "apache"), (SizeRun("small", 1), SizeRun("mid", 2), SizeRun("big", 3)), "t", CORE)


def _c(stack: str, size: str, cap: float | None, lo: float | None, hi: float | None, fitted: bool = True,
       memory: int | None = 180 << 20) -> SizeCapacity:
    price = _stored().price(size)
    # the CPU a request: 45 ms unthrottled, a little more under a quota (docs/methods/sizing.md)
    cpu = 45_000.0 / CPUS[size] ** 0.1 if cap is not None else None
    return SizeCapacity(stack, stack, size, price, cap, lo, hi, fitted, sizing.enough(cap, lo, hi, fitted, TARGET),
                        memory, 12, CPUS[size], cpu)


def _answer(core: float | None = None) -> sizing.SizingAnswer:
    per_size = {
        # apache on the small size: no edge — every probe missed, down to 5/s
        "small": [_c("nginx", "small", 6.0, 5.5, 6.6), _c("apache", "small", None, None, 5.0, fitted=False)],
        "mid": [_c("nginx", "mid", 12.0, 11.0, 13.1), _c("apache", "mid", 10.5, 9.2, 11.9)],  # apache straddles
        "big": [_c("nginx", "big", 24.0, 22.0, None), _c("apache", "big", 21.0, 19.0, 23.0)],  # nginx: open above
    }
    return sizing.answer(_stored(), per_size, core)


def _run():
    """One of the sizes' runs, as the report shows it below the sizing."""
    cells = [stored_cell(run_id=2, seq=i, stack_label=label, requests_per_s=rps, latency_p99_us=9000)
             for i, (label, rps) in enumerate((("nginx", 12.0), ("apache", 10.5)))]
    return analyze(stored_run(id=2), cells)


def _render(sizings) -> str:
    return page.render([_run()], FakeStore({}), "2026-01-01T00:00:00+00:00", {}, sizings)


def test_the_report_draws_capacity_against_size_with_the_target_whiskers_and_marks():
    a = _answer()
    assert [c.enough for c in a.stacks[1].sizes] == [Enough.NO, Enough.NOT_SHOWN, Enough.YES]
    text = _render([(a, SLO)])
    check_document(text, ["nginx", "apache"])
    # the answer first: above the runs, the terminal's sentence word for word
    section = re.search(r'<section class="sizing" id="sizing-1">.*?</section>', text, re.S).group(0)
    assert text.index('id="sizing-1"') < text.index('id="r2-run"') and 'href="#sizing-1"' in text
    out = io.StringIO()
    sizing_text.render(a, SLO, out)
    sentence = words.sentence(a, SLO)
    assert " ".join(out.getvalue().split("\n\n")[0].split()) == sentence
    assert f'<p class="answer">{html.escape(sentence)}</p>' in section
    assert "nginx needs mid" in sentence and "apache needs big" in sentence
    # the unit that travels: each size in cores like the one measured on, and that core said
    assert "nginx needs mid, $6 a month — 0.5 of a core like this one (yardstick: 680)," in sentence
    assert "apache needs big, $12 a month — 1 core like this one (yardstick: 680)," in sentence
    assert "hits a day" in sentence and "visit" not in sentence
    core = words.core_line(a)
    assert core.startswith("sizes in cores like the one measured on: yardstick 680 (spread 640–700 over 18")
    assert html.escape(core) in section and "CPU time a request" in section
    assert "nginx 45 ms (big); apache 45 ms (big)" in out.getvalue()
    (fig,) = [f for f in figures_of(section)]
    svg = re.search(r"<svg viewBox.*?</svg>", fig, re.S).group(0)
    # a series per stack, in the report's colours (the run's stacks came first)
    assert [len(re.findall(rf'<polyline class="line {c}"', svg)) for c in ("c0", "c1")] == [1, 1]
    # the sizes in the plan's order, each with its price, on a categorical axis
    ticks = re.findall(r'<text class="tick" x="([\d.]+)" y="[\d.]+" text-anchor="middle">'
                       r"(\w+)<tspan[^>]*>([^<]+)</tspan>", svg)
    assert [(name, price) for _, name, price in ticks] == [("small", "$3 a month"), ("mid", "$6 a month"),
                                                         ("big", "$12 a month")]
    assert [float(x) for x, _, _ in ticks] == sorted(float(x) for x, _, _ in ticks)
    # the target as a horizontal line, labelled
    ref = re.search(r'<line class="ref" x1="[\d.]+" x2="[\d.]+" y1="([\d.]+)" y2="([\d.]+)"/>'
                    r'<text class="ref-label"[^>]*>target 10.0/s</text>', svg)
    assert ref and ref.group(1) == ref.group(2)
    # whiskers: nginx's three (big's open above: from its low to the point), apache's two (a
    # bracket's one side has none: a "<" above it instead)
    assert len(re.findall(r'<path class="wh c0"', svg)) == 3 and len(re.findall(r'<path class="wh c1"', svg)) == 2
    assert '<text class="note"' in svg and ">&lt;</text>" in svg
    # marks: enough filled, not enough hollow, the straddle a diamond, the smallest enough ringed
    filled = re.findall(r'<circle class="dot (c\d)" cx="([\d.]+)" cy="([\d.]+)" r="4"><title>(\w+) on (\w+)', svg)
    assert sorted((m[3], m[4]) for m in filled) == [("apache", "big"), ("nginx", "big"), ("nginx", "mid")]
    hollow = re.findall(r'<circle class="dot c\d hollow"[^>]*><title>(\w+) on (\w+)', svg)
    assert sorted(hollow) == [("apache", "small"), ("nginx", "small")]
    diamond = re.findall(r'<path class="dot c1 hollow" d="M[^"]+"><title>([^<]+)</title>', svg)
    assert len(diamond) == 1 and diamond[0].startswith("apache on mid ($6 a month): 10.5 [9.2, 11.9]/s, not shown")
    rings = re.findall(r'<circle class="ring" cx="([\d.]+)" cy="([\d.]+)"', svg)
    smallest = {(m[3], m[4]): (m[1], m[2]) for m in filled}
    assert sorted(rings) == sorted([smallest[("nginx", "mid")], smallest[("apache", "big")]])
    # the capacities sit against the target: nginx on mid above the line, nginx on small below it
    assert float(smallest[("nginx", "mid")][1]) < float(ref.group(1))
    # the table: each size, price, stack, capacity [interval] with its mark, hits a day, memory, CPU
    table = html.unescape(re.sub(r"<[^>]+>", "|", re.search(r"<table>.*</table>", fig, re.S).group(0)))
    for row in (("mid", "$6", "nginx", "12.0 [11.0, 13.1] ✓", "346 k", "180 MiB", "48.2 ms", "the smallest enough"),
                ("mid", "$6", "apache", "10.5 [9.2, 11.9] ?", "302 k", "180 MiB"),
                ("small", "$3", "apache", "< 5.0 ✗", "-", "180 MiB", "-"),
                ("big", "$12", "nginx", "24.0 [22.0, …] ✓")):
        assert "||".join(row) in table, (row, table)
    # every number a diamond's hover shows is in the table too (check_document reads circles)
    numbers = set(re.findall(r"\d[\d,]*(?:\.\d+)?", table))
    assert set(re.findall(r"\d[\d,]*(?:\.\d+)?", html.unescape(diamond[0]))) <= numbers
    assert "stackbench sizings 1" in fig and "✓ enough for the target" in html.unescape(fig)
    # no sizing: no section
    assert 'class="sizing"' not in _render([])


def test_the_export_carries_the_sizing_and_its_smallest_sizes_and_validates():
    doc = export.document(_run(), None, (_answer(), SLO))
    jsonschema.validate(doc, json.loads(export.SCHEMA_PATH.read_text()))
    s = doc["sizing"]
    assert (s["id"], s["size"], s["target_rate"], s["hits_per_day"], s["peak_factor"], s["slo"]) == \
        (1, "mid", 10.0, None, 3.0, SLO)
    assert s["yardstick"] == CORE.as_dict() and s["core"] is None
    assert s["sizes"] == [{"label": "small", "price": 3.0, "run_id": 1}, {"label": "mid", "price": 6.0, "run_id": 2},
                          {"label": "big", "price": 12.0, "run_id": 3}]
    by = {st["stack"]: st for st in s["stacks"]}
    assert by["nginx"]["smallest"] == "mid" and by["apache"]["smallest"] == "big"
    # apache: mid straddles the target; nginx: mid clears it by under 10 % (11.0 against 10)
    assert by["apache"]["borderline"] == "mid" and by["nginx"]["borderline"] == "mid"
    mid = by["apache"]["sizes"][1]
    assert (mid["capacity"], mid["low"], mid["high"], mid["fitted"], mid["enough"], mid["memory_bytes"]) == \
        (10.5, 9.2, 11.9, True, "not shown", 180 << 20)
    assert mid["hits_per_day"] == pytest.approx(302_400)
    assert (mid["cpus"], mid["cpus_on_core"]) == (0.5, None) and mid["cpu_us_per_request"] == pytest.approx(48_233, 1)
    small = by["apache"]["sizes"][0]
    assert (small["capacity"], small["high"], small["fitted"], small["enough"], small["hits_per_day"]) == \
        (None, 5.0, False, "not enough", None)
    assert by["apache"]["cpu_us_per_request"] == 45_000  # on the least throttled size, 1 CPU
    # rescaled to a user's core of yardstick 1,360 (twice as fast): half the CPUs
    doc = export.document(_run(), None, (_answer(core=1360.0), SLO))
    jsonschema.validate(doc, json.loads(export.SCHEMA_PATH.read_text()))
    assert doc["sizing"]["core"] == 1360.0 and doc["sizing"]["stacks"][0]["sizes"][1]["cpus_on_core"] == 0.25
    assert "sizing" not in export.document(_run())  # a run that is no size of a sizing


# -- the commands, on capacity runs the fake Lab made ----------------------------------

CAPACITY = ('load = "capacity"\nslo = { p99 = "10ms" }\nduration = "1s"\nwarmup = "0s"\nsyscalls = false\n'
            'keepalive = [true]\nworkloads = ["php-hello"]\n[[stacks]]\nid = "nginx-fpm"\nlabel = "A"\n'
            '[[stacks]]\nid = "apache-prefork-modphp"\nlabel = "B"\n')


def test_report_and_export_find_the_sizing_a_run_measured_a_size_of(lab, tmp_path, monkeypatch, capsys):
    _, _, fake = lab
    db = tmp_path / "r.sqlite"
    # The fake engine serves each stack up to twice its speed (tests/test_report_html.py):
    # A carries ~1,600/s on the small size, ~3,200/s on the big one; B ~3,200/s on both.
    small = make_run(db, fake, CAPACITY)
    monkeypatch.setitem(SPEED, "A", SPEED["B"])
    big = make_run(db, fake, CAPACITY)
    other = make_run(db, fake, CAPACITY)  # not a size of the sizing
    store = Store(db)
    question = {"target": {"rate": 2000.0, "hits_per_day": None, "peak_factor": 3.0},
                "sizes": [{"machine": {}, "price": 3.0, "label": "small"},
                          {"machine": {}, "price": 6.0, "label": "big"}]}
    sizing_id = store.record_sizing("s", question, ["A", "B"], [SizeRun("small", small), SizeRun("big", big)])
    empty = store.record_sizing("t", question, ["A"], [])
    store.close()
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--sizing", str(sizing_id), "--db", str(db)]) == 0
    text = (tmp_path / f"report-sizing-{sizing_id}.html").read_text()
    check_document(text, ["A", "B"])
    assert f'id="r{small}-run"' in text and f'id="r{big}-run"' in text and f'id="r{other}-run"' not in text
    assert "A needs big, $6 a month" in html.unescape(text) and "B needs small, $3 a month" in html.unescape(text)
    # one size's run alone draws its sizing too; a run of no sizing draws none
    assert main(["report", str(big), "--db", str(db), "-o", "one.html"]) == 0
    assert f'id="sizing-{sizing_id}"' in (tmp_path / "one.html").read_text()
    assert main(["report", str(other), "--db", str(db), "-o", "other.html"]) == 0
    assert 'class="sizing"' not in (tmp_path / "other.html").read_text()
    assert main(["report", "--sizing", str(empty), "--db", str(db)]) == 2
    assert "has no size measured yet" in capsys.readouterr().err
    assert main(["report", "--sizing", "99", "--db", str(db)]) == 2
    # the export of a size's run: the whole sizing, its smallest sizes, valid
    assert main(["export", str(big), "--format", "json", "--db", str(db), "-o", "big.json"]) == 0
    doc = json.loads((tmp_path / "big.json").read_text())
    jsonschema.validate(doc, json.loads(export.SCHEMA_PATH.read_text()))
    s = doc["sizing"]
    assert s["size"] == "big" and s["slo"] == "p99 ≤ 10 ms, no errors"
    assert {st["stack"]: st["smallest"] for st in s["stacks"]} == {"A": "big", "B": "small"}
    a_small = s["stacks"][0]["sizes"][0]
    assert a_small["fitted"] and a_small["enough"] == "not enough" and 1400 < a_small["capacity"] < 1800
    assert main(["export", str(other), "--format", "json", "--db", str(db), "-o", "other.json"]) == 0
    assert "sizing" not in json.loads((tmp_path / "other.json").read_text())


def test_sizings_rescales_to_the_users_core_and_refuses_a_bad_one(lab, tmp_path, capsys):
    _, _, fake = lab
    db = tmp_path / "r.sqlite"
    run = make_run(db, fake, CAPACITY)
    store = Store(db)
    question = {"target": {"rate": 2000.0, "hits_per_day": None, "peak_factor": 3.0},
                "sizes": [{"machine": {"cpus": 0.5}, "price": 6.0, "label": "half"}]}
    sizing_id = store.record_sizing("s", question, ["A", "B"], [])
    store.update_sizing(sizing_id, [SizeRun("half", run)], CORE)
    store.close()
    assert main(["sizings", "--db", str(db)]) == 0
    assert "a core of yardstick 680" in capsys.readouterr().out
    assert main(["sizings", str(sizing_id), "--core", "1360", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "0.5 of a core like this one (yardstick: 680); 0.25 of a core of yardstick 1360" in " ".join(out.split())
    assert "cores of 1360" in out
    assert main(["sizings", "--core", "1360", "--db", str(db)]) == 2
    assert "--core rescales one sizing's answer" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["sizings", str(sizing_id), "--core", "0", "--db", str(db)])
    assert e.value.code == 2 and "is not a yardstick" in capsys.readouterr().err


def test_the_target_rate_is_said_exactly_so_a_capacity_just_under_it_reads_short():
    from stackbench.report.words import sizing as sizing_words

    assert [sizing_words.target_rate(r) for r in (6.25, 180_000 * 3 / 86_400, 10.0, 200_000 * 3 / 86_400, 150.0)] \
        == ["6.25", "6.25", "10.0", "6.94", "150"]

"""A sizing in visits (docs/methods/sizing.md, "Visits a day"): `target = { visits_per_day,
peak_factor }` with the plan's [visit] — the peak in visits a second, each size searched in
visits, its pools tuned at the PHP requests the visits make — and the answer saying the
visit model, visits and hits a day. Refused in one line where it cannot be asked."""

from __future__ import annotations

import copy
import io
import tomllib
from typing import Any

import pytest

from stackbench.analysis import sizing
from stackbench.analysis.sizing import Enough, SizeCapacity
from stackbench.errors import PlanError
from stackbench.model.sizing import SizeRun, StoredSizing
from stackbench.planning import plan as plan_mod
from stackbench.report.text import sizing as sizing_text
from stackbench.report.words import sizing as words
from test_sizing import PLAN as HITS_PLAN

# The hits sizing's plan (tests/test_sizing.py), asked in visits to the mixed page.
VISITS = {
    "workloads": ["mixed-page"], "slo": {"p99": "1s", "errors": 0}, "duration": "5s",
    "visit": {"pages": ["/index.php", {"choice": [{"path": "/index.php", "weight": 2}, {"leave": True}]}, "/index.php"],
              "think": {"mean": "5s", "max": "30s"}, "assets": True},
    "sizing": {"target": {"visits_per_day": 20000, "peak_factor": 3},
               "sizes": [{"cpus": 0.5, "memory": "512M", "price": 6}, {"cpus": 1, "memory": "1G", "price": 12}]},
}


def plan_data(**changes: Any) -> dict[str, Any]:
    data = tomllib.loads(HITS_PLAN) | copy.deepcopy(VISITS)
    for key, value in changes.items():
        *path, last = key.split("__")
        table = data
        for k in path:
            table = table[k]
        if value is None:
            table.pop(last)
        else:
            table[last] = value
    return data


def parse(data: dict[str, Any]) -> plan_mod.Plan:
    return plan_mod.parse(data, "v.toml")


def test_visits_a_day_are_a_peak_in_visits_a_second_each_size_searched_and_tuned_for_them():
    plan = parse(plan_data())
    q = plan.sizing
    assert q is not None and q.target.visits_per_day == 20_000 and q.target.hits_per_day is None
    # 20,000 visits × 3 / 86,400 s
    assert q.target.rate == pytest.approx(0.6944, abs=1e-4)
    v = q.target.visit
    # pages: 1 + 2/3 + 2/3; the page's 11 assets once a visit (the browser keeps them)
    assert v is not None and v.pages == pytest.approx(7 / 3) and v.assets == 11 and v.logged_in == 0
    assert v.hits == pytest.approx(7 / 3 + 11) and v.php == pytest.approx(7 / 3)
    assert v.think == "5 s mean think time"
    # the search is in visits a second, from the target, below the requests' floor of 1/s
    assert plan.load.search.start == pytest.approx(q.target.rate) and plan.load.search.floor < q.target.rate
    # the pools are tuned at the PHP requests the visits make, on requests (no [visit] there)
    assert plan.tune_rate == pytest.approx(q.target.rate * 7 / 3)
    (cell,) = plan_mod.expand(plan)
    assert cell.load == "capacity" and cell.logged_in == 0.0
    stored = q.as_dict()["target"]
    assert stored["visits_per_day"] == 20_000 and stored["visit"]["hits_a_visit"] == pytest.approx(7 / 3 + 11)


@pytest.mark.parametrize("change, said", [
    ({"visit": None}, "sizing.target.visits_per_day needs the plan's [visit]"),
    ({"visit__logged_in": ["0%", "50%"]}, "one logged-in share"),
    ({"workloads": ["mixed-page", "php-hello"]}, "give one workload"),
    ({"sizing__target__hits_per_day": 9}, "not hits_per_day and visits_per_day"),
    ({"sizing__target__rate": 5}, "not rate and visits_per_day"),
    ({"sizing__target__visits_per_day": 0}, "sizing.target.visits_per_day must be a number above 0"),
])
def test_a_sizing_in_visits_that_cannot_be_asked_is_one_line(change, said):
    with pytest.raises(PlanError) as e:
        parse(plan_data(**change))
    assert said in e.value.message and "\n" not in e.value.message, e.value.message


def _answer(visits: bool) -> sizing.SizingAnswer:
    plan = parse(plan_data() if visits else plan_data(sizing__target={"hits_per_day": 300000, "peak_factor": 3},
                                                      visit=None))
    assert plan.sizing is not None
    q = plan.sizing.as_dict()
    stored = StoredSizing(1, "v", q, ("nginx",), (SizeRun("0.5 CPU, 512 MiB", 1), SizeRun("1 CPU, 1 GiB", 2)), "t")
    rate = plan.sizing.target.rate
    per_size = {"0.5 CPU, 512 MiB": [SizeCapacity("nginx", "nginx", "0.5 CPU, 512 MiB", 6.0, rate * 0.8, rate * 0.7,
                                                  rate * 0.9, True, Enough.NO, None, 9, 0.5)],
                "1 CPU, 1 GiB": [SizeCapacity("nginx", "nginx", "1 CPU, 1 GiB", 12.0, rate * 2, rate * 1.8, rate * 2.2,
                                              True, Enough.YES, None, 9, 1.0)]}
    return sizing.answer(stored, per_size)


def test_the_answer_in_visits_states_the_visit_and_says_visits_and_hits_a_day():
    a = _answer(True)
    said = words.sentence(a, "p99 ≤ 1 s")
    assert said.startswith("For 20 k visits a day (2.33 pages and 11 assets a visit, 5 s mean think time, "
                           "0% logged in: 13.3 hits a visit; 267 k hits a day; peak 3× the day's mean: "
                           "0.694 visits/s at peak, 1.62 PHP requests/s) within p99 ≤ 1 s: "), said
    # the capacity in visits a second, what it carries in visits and in hits a day
    assert "nginx needs 1 CPU, 1 GiB, $12 a month — capacity 1.39 [1.25, 1.53] visits/s, 40 k visits a day " \
           "(533 k hits)" in said
    out = io.StringIO()
    sizing_text.render(a, "p99 ≤ 1 s", out)
    table = out.getvalue()
    assert "capacity within the SLO, visits/s [95 % interval]" in table
    assert "visits and hits a day each carries" in table and "40 k visits · 533 k hits" in table


def test_an_answer_in_hits_never_calls_a_request_a_visit():
    a = _answer(False)
    out = io.StringIO()
    sizing_text.render(a, None, out)
    assert a.visits(a.target_rate) is None and "visit" not in words.sentence(a, None) + out.getvalue()


def test_the_html_report_and_the_export_say_visits_and_hits_and_the_visit_model():
    import html
    import json

    import jsonschema

    from stackbench.report import export
    from tests.test_sizing_report import _render, _run

    a = _answer(True)
    section = html.unescape(_render([(a, "p99 ≤ 1 s")]))
    assert words.sentence(a, "p99 ≤ 1 s") in section
    assert "capacity within the SLO (visits/s)" in section and "capacity visits/s [95 % interval]" in section
    assert "visits and hits a day" in section and "40 k · 533 k" in section
    doc = export.document(_run(), None, (a, "p99 ≤ 1 s"))
    jsonschema.validate(doc, json.loads(export.SCHEMA_PATH.read_text()))
    s = doc["sizing"]
    assert s["visits_per_day"] == 20_000 and s["hits_per_day"] is None
    assert s["visit"]["hits_a_visit"] == pytest.approx(7 / 3 + 11) and s["visit"]["assets_a_visit"] == 11
    assert s["target_hits_per_day"] == pytest.approx(20_000 * (7 / 3 + 11))
    big = s["stacks"][0]["sizes"][1]
    assert big["visits_per_day"] == pytest.approx(40_000) and big["hits_per_day"] == pytest.approx(40_000 * (7 / 3 + 11))
    hits = export.document(_run(), None, (_answer(False), None))["sizing"]
    assert hits["visit"] is None and hits["stacks"][0]["sizes"][1]["visits_per_day"] is None

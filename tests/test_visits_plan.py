"""A plan's [visit]: its keys checked with one-line errors, its logged-in shares swept as
questions, the engine's journeys built from it (the logged-in visitors' from the start's
logins file, no password on a command line), and a share split exactly over two engines."""

from __future__ import annotations

import json
import os
import tomllib

import pytest

from stackbench.engine import logged_in
from stackbench.engine.journey import Journey, Page
from stackbench.engine.process import LoadSpec
from stackbench.errors import PlanError
from stackbench.planning import plan as plan_mod, visits
from stackbench.runner import visits as runner_visits
from stackbench.scenarios import get as scenario
from stackbench.workloads import get as workload, login as login_mod
from stackbench.workloads.wordpress import accounts

BASE = """
baseline = "nginx"
workloads = ["wordpress-home"]
concurrency = [8]
keepalive = [true]
[[stacks]]
id = "nginx-fpm"
label = "nginx"
[[stacks]]
id = "apache-prefork-modphp"
label = "apache"
"""
VISIT = """
[visit]
pages = ["/", { choice = [{ path = "/a/", weight = 3 }, { path = "/b/" }, { leave = true }] }, "/c/"]
think = { mean = "2s", max = "10s" }
assets = ["/f.woff2"]
logged_in = ["0%", "50%"]
"""


def parse(text: str) -> plan_mod.Plan:
    return plan_mod.parse(tomllib.loads(text), "test.toml")


def test_a_visit_is_parsed_and_each_share_is_a_question_of_its_own():
    p = parse(BASE + VISIT)
    v = p.visit
    assert v is not None and v.logged_in == (0.0, 0.5)
    assert v.think == visits.Think("exponential", 2.0, max_s=10.0)
    assert [s.choice for s in v.steps] == [False, True, False]
    # 1 + 4/5 + 4/5: a fifth of the visitors leave at the choice
    assert v.pages_a_visit() == pytest.approx(2.6)
    assert v.hits_a_visit(assets=1, share=0.5) == pytest.approx(2.6 + 1 + 1.5)  # pages, the font once, half a login
    cells = plan_mod.expand(p)
    assert [(c.stack.label, c.logged_in) for c in cells] == [("nginx", 0.0), ("nginx", 0.5), ("apache", 0.0),
                                                            ("apache", 0.5)]
    assert cells[1].level() == "c=8 50% logged in"
    assert p.comparisons() == 2  # apache against nginx at each share


def test_think_times_and_assets_take_their_forms():
    one = lambda body: visits.parse(tomllib.loads(body), PlanError)  # noqa: E731
    assert one('pages = ["/"]\nthink = "1.5s"').think == visits.Think("fixed", 1.5)
    assert one('pages = ["/"]\nthink = { min = "1s", max = "3s" }').think == visits.Think("uniform", 2.0, 1.0, 3.0)
    assert one('pages = ["/"]').think.kind == "none" and one('pages = ["/"]').logged_in == (0.0,)
    assert one('pages = ["/"]\nlogged_in = "100%"').logged_in == (1.0,)


@pytest.mark.parametrize("body, words", [
    ('pages = []', "visit.pages must be a list of at least one page"),
    ('pages = ["home"]', "visit.pages[0] must be a path starting with /"),
    ('pages = [{ choice = [{ leave = true }] }]', "a visit begins with a page"),
    ('pages = ["/", { choice = [{ path = "/a", leave = true }] }]', "either a page (path) or leaving"),
    ('pages = ["/", { choice = [{ path = "/a", weight = 0 }] }]', "weight must be a whole number from 1"),
    ('pages = ["/"]\nthink = "soon"', "visit.think takes a duration"),
    ('pages = ["/"]\nthink = { mean = "5s", max = "1s" }', "the max at least the mean"),
    ('pages = ["/"]\nlogged_in = ["150%"]', "visit.logged_in takes shares"),
    ('pages = ["/"]\nlogged_in = ["50%", 0.5]', "names a share twice"),
    ('pages = ["/"]\nassets = "yes"', "visit.assets takes true"),
    ('pages = ["/"]\nvisitors = 3', "visit has an unknown key 'visitors'"),
])
def test_a_bad_visit_is_refused_in_one_line(body, words):
    with pytest.raises(PlanError) as e:
        parse(BASE + "[visit]\n" + body)
    assert words in e.value.message and "\n" not in e.value.message


@pytest.mark.parametrize("extra, words", [
    ('requests = 100\n', "use duration, not requests"),
    ('protocol = ["h2"]\n', 'leave "h2" out of protocol'),
    ('hosts = { server = "ssh:web1" }\n', "keeps its readers' passwords there"),
    ('load = "capacity"\nslo = { p99 = "100ms" }\n', "a capacity in visits is searched at one logged-in share"),
    ('load = "stages"\nstages = [{ duration = "1s", concurrency = 2 }]\n', "not measured in visits yet"),
])
def test_what_visits_cannot_be_asked_with_yet_is_refused(extra, words):
    base = BASE.replace("concurrency = [8]\n", "") if "capacity" in extra or "stages" in extra else BASE
    with pytest.raises(PlanError) as e:
        parse(extra + base + VISIT)
    assert words in e.value.message


def test_a_share_that_logs_in_needs_a_workload_with_accounts():
    with pytest.raises(PlanError, match="'php-hello' has no accounts to log in to"):
        parse(BASE.replace("wordpress-home", "php-hello") + VISIT)
    assert parse(BASE.replace("wordpress-home", "php-hello") + VISIT.replace('"0%", "50%"', '"0%"')).visit


def test_the_journeys_are_the_visit_and_the_logged_in_one_posts_the_starts_accounts(tmp_path):
    v = parse(BASE + VISIT).visit
    wp = workload("wordpress-home")
    anonymous = runner_visits.journey(v, wp).as_json()
    assert anonymous["steps"][0] == {"page": "/", "assets": ["/f.woff2"]}
    assert anonymous["steps"][1]["choice"][2] == {"exit": True, "weight": 1}
    assert anonymous["think"] == {"kind": "exponential", "mean_ms": 2000.0, "max_ms": 10000.0}
    assert "login" not in anonymous
    login_mod.write(tmp_path, accounts.LOGIN, {"reader1": "pw-one", "reader2": "pw-two"})
    login = runner_visits.login(wp, tmp_path / login_mod.LOGINS_FILE)
    logged = runner_visits.journey(v, wp, login)
    forms = logged.as_json()["login"]["forms"]
    assert [f["log"] for f in forms] == ["reader1", "reader2"] and forms[0]["pwd"] == "pw-one"
    assert forms[0]["testcookie"] == "1" and logged.login is not None and logged.login.form_page == "/wp-login.php"
    # The passwords go to the engine in a file of its own, never on its command line.
    spec = LoadSpec(url="http://127.0.0.1:1", connections=2, journey=logged)
    argv = spec.argv("stackbench-load", "/tmp/stackbench-journey-x/journey.json")
    assert "pw-one" not in " ".join(argv) and "/tmp/stackbench-journey-x/journey.json" in argv
    from stackbench.engine.process import _journey_file
    with _journey_file(spec) as path:
        assert path is not None and json.loads(open(path).read())["login"]["forms"][1]["pwd"] == "pw-two"
        assert os.stat(path).st_mode & 0o777 == 0o600
    assert not os.path.exists(path)
    with _journey_file(LoadSpec(url="http://127.0.0.1:1", connections=1, journey=Journey((Page("/"),)))) as none:
        assert none is None


def test_a_share_is_split_exactly_over_the_two_classes():
    anon, logged = Journey((Page("/"),)), Journey((Page("/"),), login=None)
    spec = LoadSpec(url="http://x", connections=16, journey=anon, login_journey=logged, login_share=0.5)
    parts = logged_in.split(spec)
    assert [(name, p.connections) for name, p in parts] == [("anonymous", 8), ("logged in", 8)]
    assert parts[1][1].journey is logged and parts[0][1].journey is anon
    few = logged_in.split(LoadSpec(url="http://x", connections=3, journey=anon, login_journey=logged,
                                   login_share=0.1))
    assert [p.connections for _, p in few] == [2, 1]  # at least one visitor of each class
    rated = logged_in.split(LoadSpec(url="http://x", connections=10, rate=20.0, journey=anon, login_journey=logged,
                                     login_share=0.25))
    assert [p.rate for _, p in rated] == [15.0, 5.0]
    assert [n for n, _ in logged_in.split(LoadSpec(url="http://x", connections=4, journey=anon))] == ["anonymous"]
    only = logged_in.split(LoadSpec(url="http://x", connections=4, journey=anon, login_journey=logged,
                                    login_share=1.0))
    assert [(n, p.connections, p.journey is logged) for n, p in only] == [("logged in", 4, True)]


def test_ctrl_c_while_the_two_classes_run_stops_both_engines():
    """Ctrl-C reaches the lab's main thread only; the classes' engines run from threads, so
    logged_in.run stops each process its load reported started (none left behind)."""
    import signal
    import subprocess
    import threading
    import time

    anon, logged = Journey((Page("/"),)), Journey((Page("/"),), login=None)
    spec = LoadSpec(url="http://x", connections=4, journey=anon, login_journey=logged, login_share=0.5)
    engines: list[subprocess.Popen] = []
    done = threading.Event()

    def load(part, cpus, started):
        proc = subprocess.Popen(["sleep", "30"])  # an engine that would outlive the lab
        engines.append(proc)
        started(proc)
        done.wait(30)  # this thread never learns of the Ctrl-C
        raise AssertionError("not reached in time")

    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()  # a real Ctrl-C
    began = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            logged_in.run(load, spec, [])
        assert time.monotonic() - began < 5
        assert len(engines) == 2 and [p.wait(timeout=5) for p in engines] == [-9, -9]
    finally:
        done.set()
        for p in engines:
            p.kill()
            p.wait()


def test_the_visits_scenario_asks_two_shares_of_the_stacks_and_caches():
    s = scenario("visits")
    full, quick = s.plan(), s.plan(quick=True)
    assert full.visit == quick.visit and full.visit is not None and full.visit.logged_in == (0.0, 0.5)
    assert {v.id for v in full.stacks} == {"nginx-fpm", "apache-prefork-modphp", "varnish-apache",
                                           "nginx-cache-apache"}
    assert {v.id for v in quick.stacks} == {"nginx-fpm", "apache-prefork-modphp", "varnish-apache"}
    quick = s.plan(quick=True)
    assert quick.seconds(plan_mod.expand(quick)[: 6 * quick.min_repetitions]) < 120


def test_a_cell_of_visits_shows_its_visits_beside_its_page_views():
    from cells import stored_cell
    from stackbench.analysis import cells as cells_mod, figures
    from stackbench.report import export
    from stackbench.report.text import table

    visits_doc = {"visits": {"completed": 30, "failed": 0, "in_flight_at_end": 2, "per_s": 6.0, "pages": 75,
                             "requests": 120, "pages_per_visit": 2.5, "requests_per_visit": 4.0},
                  "visit_duration_us": {"count": 30, "percentiles": {"50": 1_200_000, "99": 3_400_000}}}
    cell = stored_cell(engine=visits_doc, pages_completed=75, pages_failed=0, pages_per_s=15.0,
                       page_load_p50_us=40_000, page_load_p99_us=90_000, logged_in=0.5)
    f = figures.of(cell)
    assert (f.visits_per_s, f.visit_p50_us, f.visit_p99_us, f.pages_per_visit) == (6.0, 1_200_000, 3_400_000, 2.5)
    assert f.throughput == 15.0 and f.p99_us == 90_000  # verdicts compare the visits' page views
    assert f.question.logged_in == 0.5 and f.question.level() == "c=16 50% logged in"
    analysed = cells_mod.of([cell])
    cols = table.columns(analysed)
    row = dict(zip(cols, table.rows(analysed, cols)[0]))
    assert (row["visits/s"], row["visit p50 s"], row["visit p99 s"], row["pages/visit"]) == ("6.0", "1.20", "3.40",
                                                                                          "2.50")
    exported = export.cell_rows(analysed)[0]
    assert (exported["logged_in"], exported["visits_per_s"], exported["pages_per_visit"]) == (0.5, 6.0, 2.5)
    plain = stored_cell(requests_per_s=100.0)
    assert "visits/s" not in table.columns(cells_mod.of([plain]))
    assert export.cell_rows(cells_mod.of([plain]))[0]["logged_in"] is None


def _visit_cells() -> list:
    from cells import stored_cell
    out = []
    for seq, (label, share, per_s) in enumerate([(s, sh, v) for rep in range(5)
                                                 for s, sh, v in (("nginx", 0.0, 6.0 + rep * 0.1),
                                                                  ("varnish", 0.0, 12.0 + rep * 0.1),
                                                                  ("nginx", 0.5, 5.0 + rep * 0.1),
                                                                  ("varnish", 0.5, 7.0 + rep * 0.1))]):
        doc = {"visits": {"completed": 30, "failed": 0, "in_flight_at_end": 1, "per_s": per_s, "pages": 75,
                          "requests": 120, "pages_per_visit": 2.5, "requests_per_visit": 4.0},
               "visit_duration_us": {"count": 30, "percentiles": {"50": 900_000, "99": 2_000_000}}}
        out.append(stored_cell(seq=seq, repetition=seq // 4, stack_label=label, engine=doc, workload="wordpress-home",
                               concurrency=8, pages_completed=75, pages_failed=0, pages_per_s=per_s * 2.5,
                               page_load_p50_us=40_000, page_load_p99_us=90_000, logged_in=share,
                               requests_completed=300, requests_per_s=per_s * 4, latency_p99_us=80_000))
    return out


def test_the_reports_show_visits_per_stack_and_share():
    import io

    from cells import stored_run
    from stackbench.analysis.run import analyze
    from stackbench.report.html import page
    from stackbench.report.text import visits as visits_text
    from test_protocol_analysis import NoStore

    a = analyze(stored_run(plan_checked={"baseline": "nginx"}), _visit_cells())
    rows = [(v.stack_label, v.question.logged_in, v.per_s.median, v.pages.median) for v in a.visits]
    assert rows == [("nginx", 0.0, 6.2, 2.5), ("varnish", 0.0, 12.2, 2.5), ("nginx", 0.5, 5.2, 2.5),
                    ("varnish", 0.5, 7.2, 2.5)]
    # verdicts at each share: varnish against nginx on the visits' page views
    asked = {(v.question.logged_in, v.candidate) for v in a.verdicts.for_metric("throughput")}
    assert asked == {(0.0, "varnish"), (0.5, "varnish")}
    out = io.StringIO()
    visits_text.render(a.visits, out)
    text = out.getvalue()
    assert "visits (medians of valid runs)" in text and "c=8 50% logged in" in text and "12.2" in text
    html = page.render([a], NoStore(), "2026-01-01T00:00:00+00:00")
    assert "Visits a second — wordpress-home, keep-alive on" in html and "c=8 50% logged in" in html


def test_a_logins_redirect_is_an_expected_answer_not_an_error():
    from stackbench.engine.result import EngineResult

    def doc(non_2xx: int, codes: dict) -> dict:
        return {"requests": {"completed": 12, "failed": 0, "non_2xx": non_2xx},
                "status_codes": codes, "warning_codes": [{"code": "non_2xx",
                                                          "params": {"count": non_2xx, "share": non_2xx / 12}}],
                "per_url": [{"path": "/wp-login.php", "method": "POST", "requests": {"completed": 4, "non_2xx": 4}},
                            {"path": "/wp-login.php", "method": "GET", "requests": {"completed": 4, "non_2xx": 0}}],
                "visit_pages": [{"name": "login", "path": "/wp-login.php", "login": True, "completed": 4,
                                 "failed": 0}]}
    followed = EngineResult.from_doc(doc(4, {"200": 8, "302": 4}))
    assert followed.requests.non_2xx == 0 and followed.caveats == ()
    # Two error pages besides the four redirects: those stay errors, and their caveat says two.
    errors = EngineResult.from_doc(doc(6, {"200": 6, "302": 4, "500": 2}))
    assert errors.requests.non_2xx == 2
    assert [(c.code, c.params["count"], c.params["share"]) for c in errors.caveats] == [("non_2xx", 2, 2 / 12)]
    # Without a login nothing is taken out (a 302 of a page is the engine's to count).
    plain = doc(4, {"200": 8, "302": 4})
    plain["visit_pages"] = []
    assert EngineResult.from_doc(plain).requests.non_2xx == 4

"""`stackbench size` (docs/reference/cli.md, docs/guide/sizing.md): its flags become the sizing
scenario's plan asked of other stacks, page and target — the scenario's defaults where a flag
is left out —, bad input is one line, and its dry run checks every size and says how long. And
`tune --dry-run` refuses a machine this one cannot emulate exactly as `run --dry-run` does.
Nothing here starts a server."""

from __future__ import annotations

import os

import pytest

from stackbench import scenarios
from stackbench.cli import build_parser, main
from stackbench.commands import size
from stackbench.errors import UsageError
from stackbench.planning import sizing as sizing_plan

STACKS = ["nginx-fpm", "apache-prefork-modphp"]
ASK = [*STACKS, "--workload", "wordpress-home", "--target", "180000"]


def planned(*argv: str):
    return size.plan(build_parser().parse_args(["size", *argv]))


def test_the_command_asks_the_sizing_scenarios_question_of_its_own_stacks_and_target():
    plan, reference = planned(*ASK), scenarios.get("sizing").plan()
    q, ref = plan.sizing, reference.sizing
    assert q is not None and ref is not None
    # 180,000 hits a day, the busiest hour at 3× the mean: 6.25 requests/s
    assert q.target.hits_per_day == 180_000 and q.target.rate == pytest.approx(6.25)
    assert [s.as_dict() for s in q.sizes] == [s.as_dict() for s in ref.sizes]  # the scenario's sizes and prices
    assert [(v.id, v.label, v.tuned) for v in plan.stacks] == [(s, s, True) for s in STACKS]
    assert plan.baseline == "nginx-fpm" and plan.workloads == ["wordpress-home"]
    # the rest is the scenario's: its SLO, search, probes, repetitions, tunings' runs, keep-alive
    for attr in ("load", "keepalive", "duration_s", "timeout_s", "repetitions", "tune_repetitions", "syscalls"):
        assert getattr(plan, attr) == getattr(reference, attr), attr
    assert planned(*ASK, "--quick").repetitions == scenarios.get("sizing").plan(quick=True).repetitions == 1
    # the quick form searches for each stack's smallest enough size as the scenario's does
    quick, ref_quick = planned(*ASK, "--quick").sizing, scenarios.get("sizing").plan(quick=True).sizing
    assert quick is not None and ref_quick is not None and quick.until_enough is ref_quick.until_enough is True
    assert q.until_enough is ref.until_enough


def test_its_flags_replace_the_defaults():
    plan = planned("nginx-fpm", "--workload", "php-hello", "--target", "1.5M", "--peak-factor", "2",
                   "--slo", "p99=2s,errors=0", "--sizes", "0.5/512M/6,1/1G")
    q = plan.sizing
    assert q is not None and q.target.rate == pytest.approx(1.5e6 * 2 / 86_400)
    assert [(s.label, s.price) for s in q.sizes] == [("0.5 CPU, 512 MiB", 6.0), ("1 CPU, 1 GiB", None)]
    assert plan.load.slo is not None and plan.load.slo.latency_budget_us == 2_000_000
    # a probe lasts 5 SLO latencies, its search as many probes as the scenario's, its clients wait 2 of them
    assert plan.duration_s == 10.0 and plan.load.search is not None and plan.load.search.budget_s == 120.0
    assert plan.timeout_s == 10.0 and plan.baseline is None


def test_the_help_says_the_defaults_the_scenario_has():
    text = build_parser()._subparsers._group_actions[0].choices["size"].format_help()  # type: ignore[union-attr]
    flat = " ".join(text.split())
    assert "p99=500ms,errors=0" in flat and "0.25/256M/3,0.5/512M/6,1/1G/12" in flat and "(default 3)" in flat
    data = scenarios.get("sizing").data()
    assert data["slo"] == {"p99": "500ms", "errors": 0} and data["sizing"]["target"]["peak_factor"] == 3


@pytest.mark.parametrize("argv, words", [
    (["nginx-php", "--workload", "wordpress-home", "--target", "180000"], "unknown stack 'nginx-php'"),
    (["nginx-fpm", "--workload", "wordpress-homes", "--target", "180000"], "unknown workload 'wordpress-homes'"),
    (["nginx-fpm", "--workload", "wordpress-home", "--target", "lots"], "--target takes hits (requests) a day"),
    (["nginx-fpm", "--workload", "wordpress-home", "--target", "0"], "a number above 0 such as 180000 or 180k"),
    (["nginx-fpm", "--workload", "wordpress-home", "--target", "180000", "--sizes", "0.5:512M:6"],
     "--sizes takes CPUS/MEMORY[/PRICE] separated by commas, e.g. 0.5/512M/6, not '0.5:512M:6'"),
    (["nginx-fpm", "--workload", "wordpress-home", "--target", "180000", "--sizes", "0.5/512X"],
     "--sizes: 0.5/512X: machine.memory: not a size"),
    (["nginx-fpm", "--workload", "wordpress-home", "--target", "180000", "--sizes", "0.5/512M/cheap"],
     "the price a month is a number such as 6"),
    (["nginx-fpm", "--workload", "wordpress-home", "--target", "180000", "--slo", "p97=1s"], "--slo: slo has no key"),
    (["nginx-fpm", "--workload", "wordpress-home", "--target", "180000", "--peak-factor", "0.5"],
     "--peak-factor is the busiest hour's rate over the day's mean: at least 1"),
    (["nginx-fpm", "nginx-fpm", "--workload", "wordpress-home", "--target", "180000"], "named twice"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words, tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    assert main(["size", *argv, "--dry-run", "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and err.startswith("error: ") and len(err.splitlines()) <= 2, err
    assert not db.exists()


def test_a_size_this_machine_cannot_emulate_is_refused_before_anything_is_said(tmp_path, capsys):
    too_many = 4 * len(os.sched_getaffinity(0))
    argv = ["size", "nginx-fpm", "--workload", "wordpress-home", "--target", "180000", "--sizes",
            f"1/512M,{too_many}/1G", "--dry-run", "--db", str(tmp_path / "r.sqlite")]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"machine.cpus = {too_many} leaves no core for the load engine" in err


def test_the_dry_run_says_each_size_and_the_whole_time_tunings_included(tmp_path, capsys):
    assert main(["size", *ASK, "--quick", "--dry-run", "--db", str(tmp_path / "r.sqlite")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sizing: 180,000 hits a day (peak 3× the mean): 6.25 requests/s at peak, on 3 sizes")
    for label in ("— 0.25 CPU, 256 MiB ($3 a month) —", "— 0.5 CPU, 512 MiB ($6 a month) —",
                  "— 1 CPU, 1 GiB ($12 a month) —"):
        assert label in out
    # a WordPress page: each pool tuned on the mix with slow requests, as the sizing scenario's
    assert out.count("nginx-fpm: knobs tuned first for wordpress-mix-slow at 6.25 requests/s") == 3
    last = out.strip().splitlines()[-1]
    assert last.startswith("in all: about ") and "3 sizes' searches, at most, 6 tunings measured first" in last


def test_a_wordpress_page_is_tuned_on_the_slow_mix_unless_asked_otherwise():
    base = scenarios.get("sizing").data(quick=True)
    assert base["tune"]["workload"] == "wordpress-mix-slow"
    for page in ("wordpress-home", "wordpress-mix"):
        assert sizing_plan.tune_workload(page, None, base) == "wordpress-mix-slow"
    # another site's page is tuned on itself: the slow mix is WordPress's
    assert sizing_plan.tune_workload("php-hello", None, base) is None
    assert sizing_plan.tune_workload("php-hello", "php-sleep", base) == "php-sleep"
    assert sizing_plan.tune_workload("wordpress-home", "wordpress-home", base) is None
    assert sizing_plan.tune_workload("wordpress-mix-slow", None, base) is None
    with pytest.raises(UsageError, match="unknown workload 'nope'"):
        sizing_plan.tune_workload("wordpress-home", "nope", base)


def test_tune_workload_reaches_the_plan(tmp_path, capsys):
    argv = ["size", "nginx-fpm", "--workload", "wordpress-home", "--target", "180k", "--tune-workload",
            "wordpress-home", "--quick", "--dry-run", "--db", str(tmp_path / "r.sqlite")]
    assert main(argv) == 0
    assert capsys.readouterr().out.count("nginx-fpm: knobs tuned first for wordpress-home at 6.25 requests/s") == 3


def test_hits_a_day_is_a_target_of_its_own():
    q = sizing_plan.parse({"target": {"hits_per_day": 86_400, "peak_factor": 2},
                           "sizes": [{"cpus": 1, "memory": "1G"}]}, ValueError)
    assert q is not None and q.target.rate == pytest.approx(2.0) and q.target.as_dict()["hits_per_day"] == 86_400
    with pytest.raises(ValueError, match="what a visit costs is the plan's \\[visit\\]"):
        sizing_plan.parse({"target": {"hits_per_day": 9, "requests_per_visit": 2},
                           "sizes": [{"cpus": 1, "memory": "1G"}]}, ValueError)
    with pytest.raises(ValueError, match="takes one of rate"):
        sizing_plan.parse({"target": {"hits_per_day": 9, "rate": 2}, "sizes": [{"cpus": 1, "memory": "1G"}]},
                          ValueError)


@pytest.mark.parametrize("asked", ["whole", "fraction"])
def test_tune_refuses_a_machine_exactly_as_run_does(asked, tmp_path, capsys):
    """The same check (planning/machine.py check), the same sentence and status, whichever
    command asked: more cores than leave the load engine one, whole or as a quota."""
    cores = len(os.sched_getaffinity(0))
    if cores < 2:
        pytest.skip("on one core the stack and the engine share it: every profile is allowed")
    cpus = str(4 * cores) if asked == "whole" else f"{cores - 0.5:g}"
    plan = tmp_path / "p.toml"
    plan.write_text(f'workloads = ["php-hello"]\nmachine = {{ cpus = {cpus} }}\n[[stacks]]\nid = "nginx-fpm"\n')
    db = str(tmp_path / "r.sqlite")
    assert main(["run", str(plan), "--dry-run", "--db", db]) == 2
    by_run = capsys.readouterr().err
    assert main(["tune", "nginx-fpm", "--workload", "php-hello", "-c", "4", "--machine", f"cpus={cpus}",
                 "--dry-run", "--db", db]) == 2
    by_tune = capsys.readouterr().err
    assert "leaves no core for the load engine" in by_run
    assert by_tune.replace("stackbench tune:", "") == by_run.replace(f"{plan}:", "")


def test_visits_a_day_ask_the_visits_scenarios_visit_at_one_share_and_refuse_another_site():
    plan = planned(*STACKS, "--workload", "wordpress-home", "--visits-per-day", "20k", "--logged-in", "10%")
    q = plan.sizing
    assert q is not None and q.target.visits_per_day == 20_000 and q.target.hits_per_day is None
    assert q.target.rate == pytest.approx(20_000 * 3 / 86_400)
    visit = scenarios.get("visits").plan().visit
    assert plan.visit is not None and visit is not None
    assert plan.visit.steps == visit.steps and plan.visit.think == visit.think and plan.visit.logged_in == (0.1,)
    v = q.target.visit
    # the scenario's visit: 1 + 5/6 pages, its 3 fonts, 10 % logging in (3 requests each)
    assert v is not None and v.pages == pytest.approx(11 / 6) and v.assets == 3 and v.logged_in == pytest.approx(0.1)
    assert v.hits == pytest.approx(11 / 6 + 3 + 0.3) and v.php == pytest.approx(11 / 6 + 0.3)
    assert plan.tune_rate == pytest.approx(q.target.rate * v.php)
    for argv, said in ((["--visits-per-day", "20k", "--target", "9"], "not allowed with argument"),
                       (["--target", "9", "--logged-in", "10%"], "--logged-in is the share of the visitors"),
                       (["--visits-per-day", "0"], "--visits-per-day takes visits a day")):
        with pytest.raises((UsageError, SystemExit)) as e:
            planned("nginx-fpm", "--workload", "wordpress-home", *argv)
        if e.type is UsageError:
            assert said in str(e.value)
    with pytest.raises(UsageError, match="'php-hello' is another site"):
        planned("nginx-fpm", "--workload", "php-hello", "--visits-per-day", "20k")

"""One analysis per run: `show`, `export` and `report` analyze each run once
(analysis/run.py) and only render it — the verdicts against the baseline are computed
once per run whatever the command prints of them, and the CSV of cells computes none.
Runs made with the fake Lab (tests/test_report_html.py), two in one store."""

from __future__ import annotations

import pytest

from stackbench.analysis import verdicts
from stackbench.analysis.run import analyze
from stackbench.cli import main
from stackbench.errors import UsageError
from stackbench.store import Store
from tests.test_report_html import make_run
from tests.test_runner_order import lab  # noqa: F401  (the fake Lab fixture)

PLAN = ('concurrency = [4, 16]\nwarmup = "0s"\nduration = "1s"\nsyscalls = false\nkeepalive = [true]\n'
        'workloads = ["php-hello"]\nrepetitions = 2\nbaseline = "A"\n'
        '[[stacks]]\nid = "nginx-fpm"\nlabel = "A"\n[[stacks]]\nid = "apache-prefork-modphp"\nlabel = "B"\n')


@pytest.fixture
def store_of_two_runs(lab, tmp_path):  # noqa: F811
    _, _, fake = lab
    db = tmp_path / "r.sqlite"
    return db, [make_run(db, fake, PLAN), make_run(db, fake, PLAN)]


@pytest.fixture
def calls(monkeypatch):
    """How often each command asked for a run's verdicts (for_run) and how often stacks
    were compared at all (decide: for_run's own work, and nobody else's on these runs)."""
    counted = {"for_run": 0, "decide": 0}
    for name in counted:
        real = getattr(verdicts, name)

        def counting(*args, _real=real, _name=name, **kwargs):
            counted[_name] += 1
            return _real(*args, **kwargs)
        monkeypatch.setattr(verdicts, name, counting)
    return counted


@pytest.mark.parametrize("command", [["show"], ["show", "--all"], ["export", "--verdicts"],
                                     ["export", "--format", "json"]])
def test_a_command_on_one_run_computes_its_verdicts_once(store_of_two_runs, calls, command, capsys):
    db, (run_id, _) = store_of_two_runs
    assert main([command[0], str(run_id), *command[1:], "--db", str(db)]) == 0
    assert "B" in capsys.readouterr().out  # the verdicts were rendered
    assert calls == {"for_run": 1, "decide": 1}


def test_the_report_of_two_runs_computes_each_runs_verdicts_once(store_of_two_runs, calls, tmp_path):
    db, run_ids = store_of_two_runs
    assert main(["report", *map(str, run_ids), "--db", str(db), "-o", str(tmp_path / "r.html")]) == 0
    text = (tmp_path / "r.html").read_text()
    assert all(f'id="r{i}-run"' in text for i in run_ids) and "Verdicts (baseline: A)" in text
    assert calls == {"for_run": 2, "decide": 2}


def test_the_csv_of_cells_computes_no_verdict(store_of_two_runs, calls, capsys):
    db, (run_id, _) = store_of_two_runs
    assert main(["export", str(run_id), "--db", str(db)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 2 * 2 * 2  # head + stacks × levels × repetitions
    assert calls == {"for_run": 0, "decide": 0}


def test_each_part_is_worked_out_once_and_a_wrong_baseline_is_said_first(store_of_two_runs):
    db, (run_id, _) = store_of_two_runs
    store = Store(db)
    run, cells = store.run(run_id), store.cells(run_id)
    a = analyze(run, cells)
    assert a.baseline == "A" and a.verdicts.baseline == "A" and len(a.cells) == 8
    assert a.summaries is a.summaries and a.by_level is a.by_level and a.warnings is a.warnings
    assert [s.stack_label for s in a.summaries] == ["A", "B", "A", "B"]
    assert a.by_level["throughput"][1].value == a.summaries[1].metrics["throughput"]
    with pytest.raises(UsageError, match="has no stack 'C'"):
        analyze(run, cells, baseline="C")

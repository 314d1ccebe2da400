"""The yardstick of a core (stackbench/yardstick/): PHP's answer parsed only when it did the
fixed work whole; several measurements pooled; a run's environment keeps it (on another
host, that host's); `stackbench yardstick` measures it with PHP for real in about a second,
and without PHP says so in one sentence with exit status 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stackbench import yardstick
from stackbench.cli import main
from stackbench.model.environment import Environment
from stackbench.upkeep import environment
from stackbench.upkeep.pinning import Pinning
from stackbench.yardstick import Yardstick

ROOT = Path(__file__).resolve().parent.parent


def _doc(ns: list[int], check: int = yardstick.CHECK) -> str:
    return json.dumps({"ns": ns, "check": check, "php": "8.2.36"}) + "\n"


def test_a_figure_is_thousands_of_units_a_second_the_median_with_its_spread():
    # 35,000 units in 50 ms: 700 thousand a second; 70 ms: 500; 35 ms: 1,000
    found = yardstick.parse(_doc([50_000_000, 70_000_000, 35_000_000]), 3)
    assert found is not None and (found.score, found.low, found.high) == pytest.approx((700, 500, 1000))
    assert found.repetitions == 3 and found.php == "8.2.36" and found.spread == pytest.approx(0.714, abs=0.001)
    assert found.describe() == "700 (spread 500–1000 over 3 repetitions, PHP 8.2.36)"
    assert Yardstick.from_dict(json.loads(json.dumps(found.as_dict()))) == found


@pytest.mark.parametrize("stdout", [
    _doc([50_000_000, 50_000_000, 50_000_000], check=123),  # other work: not this yardstick
    _doc([50_000_000, 50_000_000]),  # a repetition short
    _doc([50_000_000, 0, 50_000_000]),  # a repetition in no time
    "PHP Warning: something\n", "", '{"ns": "x"}\n'])
def test_an_answer_that_is_not_the_fixed_work_whole_is_no_figure(stdout):
    assert yardstick.parse(stdout, 3) is None


def test_several_measurements_of_one_core_pool_into_one():
    a, b, c = (Yardstick(s, s - 50, s + 20, 9, "8.2.36", 0) for s in (600.0, 700.0, 650.0))
    pooled = Yardstick.pooled([a, b, c])
    assert pooled == Yardstick(650.0, 550.0, 720.0, 27, "8.2.36", 0)
    assert Yardstick.pooled([]) is None
    assert Yardstick.pooled([a, Yardstick(700.0, 650.0, 720.0, 9, "8.3.1", 1)]).php is None  # not one PHP


@pytest.mark.slow
def test_php_measures_the_same_work_on_every_machine_and_it_takes_a_second():
    """The real thing: PHP 8.2 runs work.php; its checksum is the one the lab knows."""
    assert yardstick.php_binary(), "php8.2-cli is one of the lab's packages (scripts/setup.sh)"
    cpu = min(os.sched_getaffinity(0))
    t0 = time.monotonic()
    found = yardstick.measure(cpu, repetitions=3)
    assert time.monotonic() - t0 < 10
    assert found.cpu == cpu and found.repetitions == 3 and found.php and found.php.startswith("8.")
    assert 0 < found.low <= found.score <= found.high
    assert yardstick.measure(4095, repetitions=1).cpu is None  # a core there is not: measured unpinned, said so


def test_without_php_it_is_a_missing_package_in_one_sentence(monkeypatch, capsys):
    monkeypatch.setattr(yardstick, "BINARIES", ("no-such-php",))
    assert main(["yardstick"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: php is not installed\nhint: apt-get install php8.2-cli") and "Traceback" not in err
    # before a run it is "not measured", never a failed run
    monkeypatch.delenv(yardstick.SKIP_VAR, raising=False)
    assert yardstick.for_run([0]) is None


def test_a_php_that_does_other_work_is_refused_not_believed(monkeypatch, tmp_path, capsys):
    fake = tmp_path / "php"
    fake.write_text('#!/bin/sh\necho \'{"ns": [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000], '
                    '"check": 7, "php": "0"}\'\n')
    fake.chmod(0o755)
    monkeypatch.setattr(yardstick, "BINARIES", (str(fake),))
    assert main(["yardstick"]) == 3
    assert "did not do the yardstick's work" in capsys.readouterr().err


@pytest.mark.slow
def test_the_command_prints_the_figure_and_how_to_carry_it():
    """As a user runs it: no root needed, no lock, no store; --json for scripts."""
    env = {k: v for k, v in os.environ.items() if k != yardstick.SKIP_VAR}
    out = subprocess.run([sys.executable, "-m", "stackbench", "yardstick"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    first, means, carry = out.stdout.splitlines()
    assert first.startswith("yardstick: ") and float(first.split()[1]) > 0
    assert "thousands of units of a fixed PHP workload a second on PHP 8." in means and "bigger = faster" in means
    assert f"stackbench sizings ID --core {first.split()[1]}" in carry
    js = subprocess.run([sys.executable, "-m", "stackbench", "yardstick", "--json"], cwd=ROOT, capture_output=True,
                        text=True, timeout=60, env=env)
    doc = json.loads(js.stdout)
    assert set(doc) == {"score", "low", "high", "repetitions", "php", "cpu", "cpu_model"} and doc["score"] > 0


@pytest.mark.slow
def test_a_run_records_its_cores_yardstick_and_skips_it_when_told(monkeypatch):
    monkeypatch.setattr(environment.cpu_noise, "measure", lambda cpus: None)  # 2 s not needed here
    monkeypatch.delenv(yardstick.SKIP_VAR, raising=False)
    cpu = min(os.sched_getaffinity(0))
    doc = environment.collect(Pinning([cpu], [cpu]), engine_version=False)
    env = Environment.from_dict(doc)
    assert env.yardstick is not None and env.yardstick.cpu == cpu and env.server_yardstick == env.yardstick
    monkeypatch.setenv(yardstick.SKIP_VAR, "off")
    assert Environment.from_dict(environment.collect(Pinning([cpu], [cpu]), engine_version=False)).yardstick is None


def test_a_stack_on_another_host_is_measured_in_that_hosts_cores():
    here = Yardstick(680.0, 650.0, 700.0, 9, "8.2.36", 0)
    there = Yardstick(1400.0, 1350.0, 1420.0, 9, "8.2.36", 0)
    env = Environment.from_dict({"yardstick": here.as_dict(),
                                 "server_host": {"host": "ssh:web1", "environment": {"yardstick": there.as_dict()}}})
    assert env.yardstick == here and env.server_yardstick == there
    old = Environment.from_dict({"server_host": {"host": "ssh:web1", "environment": {}}})
    assert old.server_yardstick is None and old.yardstick is None  # a run before the yardstick


def test_the_reports_name_the_yardstick_a_run_was_measured_with():
    import io

    from cells import stored_run
    from stackbench.report.html.reproduce import environment_rows
    from stackbench.report.text.table import header

    stick = Yardstick(680.0, 650.0, 700.0, 9, "8.2.36", 0)
    run = stored_run(environment={"yardstick": stick.as_dict(), "pinning": {"server_cpus": [0], "engine_cpus": [1]}})
    out = io.StringIO()
    header(run, out)
    assert "server on cores [0] (yardstick 680), engine on cores [1]" in out.getvalue()
    rows = dict(environment_rows(run.environment))
    assert rows["yardstick of the server's core"].startswith("680 (spread 650–700 over 9 repetitions, PHP 8.2.36)")
    assert "yardstick" not in rows  # named, not left among the record's unnamed keys
    assert "yardstick of the server's core" not in dict(environment_rows(Environment()))  # not measured: no row

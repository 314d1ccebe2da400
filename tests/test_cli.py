"""The command line: bad input gets one clear sentence and the documented exit status."""

from __future__ import annotations

import pytest

from stackbench.cli import main


def test_unknown_stack_in_a_plan(tmp_path, capsys):
    plan = tmp_path / "p.toml"
    plan.write_text('[[stacks]]\nid = "nginx-php"\n')
    assert main(["run", str(plan), "--db", str(tmp_path / "r.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "unknown stack 'nginx-php'" in err and "nginx-fpm" in err and "Traceback" not in err
    assert "hint: `stackbench stacks`" in err


def test_missing_plan_file(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.toml")]) == 2
    assert "cannot read plan" in capsys.readouterr().err


def test_dry_run_lists_cells_without_starting_anything(capsys):
    assert main(["run", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.count("keep-alive") == 54 and "54 cells" in out


def test_read_only_commands_do_not_create_a_store(tmp_path, capsys):
    for argv in (["show"], ["runs"], ["timeline", "1:0"], ["explain", "1:0", "1:1"]):
        assert main(argv + ["--db", str(tmp_path / "absent.sqlite")]) == 2
        assert "no results store at" in capsys.readouterr().err
    assert not (tmp_path / "absent.sqlite").exists()


def test_show_on_an_empty_store(tmp_path, capsys):
    from stackbench.store import Store

    Store(tmp_path / "empty.sqlite").close()
    assert main(["show", "--db", str(tmp_path / "empty.sqlite")]) == 1
    assert "no runs" in capsys.readouterr().err


def test_a_file_that_is_not_a_store(tmp_path, capsys):
    bad = tmp_path / "notes.sqlite"
    bad.write_text("these are my notes, not a database\n" * 50)
    assert main(["runs", "--db", str(bad)]) == 2
    assert "is not a stackbench results store" in capsys.readouterr().err


def test_dry_run_checks_configs_like_a_run(tmp_path, capsys):
    plan = tmp_path / "p.toml"
    plan.write_text('[[stacks]]\nid = "nginx-fpm"\nknobs = { nginx_worker_connections = 0 }\n')
    assert main(["run", "--dry-run", str(plan)]) == 5
    assert "nginx rejected its configuration" in capsys.readouterr().err


def test_stacks_lists_knobs_and_availability(capsys):
    assert main(["stacks"]) == 0
    out = capsys.readouterr().out
    assert "nginx-fpm" in out and "allow_override" in out and ("available" in out or "missing" in out)


# A run's preflight happens under the lab's lock: beside a lab that is measuring, this one
# is refused ("another stackbench run is measuring"), so it is in the servers tier.
@pytest.mark.servers
def test_missing_server_binary_names_the_package(monkeypatch, tmp_path, capsys):
    """A stack whose server is not installed: one line naming the package, exit 3."""
    from stackbench.servers import base
    from stackbench.stacks.registry import STACKS

    stack = STACKS["nginx-fpm"]
    monkeypatch.setattr(type(stack), "requirements",
                        lambda self: [base.Requirement("/nonexistent/sbin/nginx", "nginx")])
    plan = tmp_path / "p.toml"
    plan.write_text('[[stacks]]\nid = "nginx-fpm"\n')
    assert main(["run", str(plan), "--db", str(tmp_path / "r.sqlite")]) == 3
    err = capsys.readouterr().err
    assert "/nonexistent/sbin/nginx is not installed" in err and "apt-get install nginx" in err

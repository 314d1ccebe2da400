"""`stackbench serve` without real servers: bad input is one line and the documented exit
status with nothing started; the start follows a run's order (the lock, the preflight,
up, verify … down) with a fake stack; what it prints."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from stackbench import runner
from stackbench.cli import main
from stackbench.engine.result import Negotiated
from stackbench.errors import ServerExited, UsageError
from stackbench.model.serving import ServedStack
from stackbench.planning import serve as serve_plan
from stackbench.planning.machine import MachineProfile
from stackbench.report.text import serve as serve_text
from stackbench.runner import serve as serve_runner
from stackbench.stacks.registry import STACKS
from stackbench.upkeep.pinning import Pinning

from conftest import hold_run_lock
from test_bad_input import clean_machine, one_error  # noqa: F401 — the fixture and the check of one error line
from test_runner_order import FakeInstance, lab  # noqa: F401 — the fake Lab, logging what happens


# (extra arguments after `serve`, fragment of the one error line, exit status)
ROWS = [
    (["nginx-php"], "unknown stack 'nginx-php'; known stacks:", 2),
    (["nginx-fpm", "--knob", "pm_max_childs=5"], "stack 'nginx-fpm' has no knob 'pm_max_childs'", 2),
    (["nginx-fpm", "--knob", "pm"], "--knob takes key=value pairs", 2),
    (["nginx-fpm", "--workload", "php-helo"], "unknown workload 'php-helo'", 2),
    (["hhvm", "--protocol", "h2"], "stack 'hhvm' cannot serve protocol 'h2'", 2),
    (["nginx-fpm", "--protocol", "spdy"], "unknown protocol 'spdy'", 2),
    (["nginx-fpm", "--workload", "php-hello,wordpress-home"],
     "workload 'wordpress-home' serves a tree of its own and cannot share a stack start with php-hello", 2),
    (["nginx-fpm", "--for", "soon"], "--for: not a duration", 2),
    (["nginx-fpm", "--for", "0s"], "--for must be above 0", 2),
    (["nginx-fpm", "--port", "70000"], "--port must be 1..65535", 2),
    (["nginx-fpm", "--machine", "cpus=64"], "machine.cpus = 64 leaves no core for the load engine", 2),
    (["nginx-fpm", "--app", "/nonexistent/app.toml"], "--app /nonexistent/app.toml: No such file", 2),
    (["nginx-fpm", "--workload", "app"], "workload 'app' is your application: give it with --app PATH", 2),
    (["nginx-fpm", "--knob", "nginx_worker_connections=0"], "nginx rejected its configuration", 5),
]


@pytest.mark.parametrize("extra,fragment,status", ROWS, ids=[r[1][:40] for r in ROWS])
def test_bad_input_is_one_line_and_starts_nothing(extra, fragment, status, clean_machine, capsys):
    d, nothing_started = clean_machine
    assert main(["serve", *extra, "--workdir", str(d)]) == status
    one_error(capsys.readouterr().err, fragment)
    nothing_started()


def test_a_workload_the_stack_cannot_serve(clean_machine, capsys, monkeypatch):
    d, nothing_started = clean_machine
    monkeypatch.setattr(type(STACKS["nginx-fpm"]), "offers", frozenset())
    assert main(["serve", "nginx-fpm", "--workload", "php-hello", "--workdir", str(d)]) == 2
    one_error(capsys.readouterr().err, "stack 'nginx-fpm' cannot serve workload 'php-hello': it has no PHP")
    nothing_started()


def test_a_port_in_use_names_the_flag(clean_machine, capsys):
    d, nothing_started = clean_machine
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert main(["serve", "nginx-fpm", "--port", str(s.getsockname()[1]), "--workdir", str(d)]) == 4
    err = capsys.readouterr().err
    one_error(err, "is already in use")
    assert "leave --port out" in err
    nothing_started()


def test_a_missing_package(clean_machine, capsys, monkeypatch):
    from stackbench.servers import base

    d, nothing_started = clean_machine
    monkeypatch.setattr(type(STACKS["nginx-fpm"]), "requirements",
                        lambda self: [base.Requirement("/nonexistent/sbin/nginx", "nginx")])
    assert main(["serve", "nginx-fpm", "--workdir", str(d)]) == 3
    one_error(capsys.readouterr().err, "/nonexistent/sbin/nginx is not installed")
    nothing_started()


def test_the_lock_taken_says_who_holds_it(clean_machine, capsys):
    d, nothing_started = clean_machine
    holder = hold_run_lock(d / "stackbench.lock")
    try:
        assert main(["serve", "nginx-fpm", "--workdir", str(d)]) == 2
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    one_error(err, f"another stackbench run (pid {holder.pid}: ")
    nothing_started()


def test_an_app_file_without_an_app_table(tmp_path):
    (tmp_path / "plan.toml").write_text('[[stacks]]\nid = "nginx-fpm"\n')
    with pytest.raises(UsageError, match="has no \\[app\\] table"):
        serve_plan.app_table(str(tmp_path / "plan.toml"))


def test_the_app_is_served_alone():
    with pytest.raises(UsageError, match="serves your application"):
        serve_plan.plan("nginx-fpm", workloads=["php-hello"], app={"docroot": "/usr/share/doc"})


def test_the_plan_a_serve_makes():
    plan = serve_plan.plan("nginx-fpm", knobs={"pm": "static"}, protocols=["h2"], port=8080,
                           machine={"cpus": 1})
    assert [v.id for v in plan.stacks] == ["nginx-fpm"] and plan.stacks[0].knobs == {"pm": "static"}
    assert plan.stacks[0].port == 8080 and plan.machine == MachineProfile(cpus=1)
    assert plan.workloads == ["static-12b", "php-hello", "php-100k"]  # a plan's defaults, one start
    assert plan.protocols.uses_tls and not plan.syscalls


# -- the start, with the fake Lab of test_runner_order ------------------------------

class ServedFake(FakeInstance):
    """The fake stack of test_runner_order, with what `serve` tells the user."""

    def __init__(self, log, variant):
        super().__init__(log, variant)
        self.stack = STACKS[variant.id]
        self.ctx = type("Ctx", (), {"rundir": Path("/tmp/rundir"), "docroot": Path("/tmp/rundir/docroot")})()
        self.workloads, self.negotiated, self.tls_port, self.ca_path, self.logins_path = [], {}, None, None, None

    def pids(self):
        return {"fake": [1]}


@pytest.fixture
def fake(lab):
    log, state, fake = lab
    fake.instance = lambda variant, *args, **kwargs: state.setdefault("served", ServedFake(log, variant))
    return log, state, fake


def test_a_serve_starts_as_a_run_and_comes_down(fake):
    log, _, fake = fake
    plan = serve_plan.plan("nginx-fpm", workloads=["static-12b"])
    with serve_runner.up(plan, runner.Options(pinning=Pinning([0], [1])), lab=fake) as serving:
        log.append(("holding", serving.instance.label))
    assert log == [("preflight", "nginx-fpm"), ("up", "nginx-fpm"), ("verify", "nginx-fpm"),
                   ("holding", "nginx-fpm"), ("down", "nginx-fpm")]


def test_ctrl_c_while_held_takes_the_stack_down(fake):
    log, _, fake = fake
    plan = serve_plan.plan("nginx-fpm", workloads=["static-12b"])
    with pytest.raises(KeyboardInterrupt):
        with serve_runner.up(plan, runner.Options(pinning=Pinning([0], [1])), lab=fake):
            raise KeyboardInterrupt
    assert log[-1] == ("down", "nginx-fpm")


def test_the_hold_ends_with_the_time_or_a_dead_server(fake):
    log, _, fake = fake
    plan = serve_plan.plan("nginx-fpm", workloads=["static-12b"])
    now = [0.0]
    with serve_runner.up(plan, runner.Options(pinning=Pinning([0], [1])), lab=fake) as serving:
        serving.hold(2.0, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
        assert now[0] == pytest.approx(2.0)
        serving.instance.die_on_cell, serving.instance.cells_served = 0, 1  # its server is gone
        with pytest.raises(ServerExited):
            serving.hold(None, clock=lambda: now[0], sleep=lambda s: None)
    assert log[-1] == ("down", "nginx-fpm")


# -- what it prints -----------------------------------------------------------------

def served(**kw) -> ServedStack:
    base = dict(label="nginx-fpm", description="nginx + PHP-FPM", url="http://127.0.0.1:8080", tls_url=None,
                ca_file=None, protocols=("http/1.1",), https=None, h2=None, paths={"php-hello": ("/hello.php",)},
                rundir=Path("/tmp/stackbench-nginx-fpm-x"), docroot=Path("/tmp/stackbench-nginx-fpm-x/docroot"),
                files=("nginx/nginx.conf",), pids={"nginx": [10, 11], "php-fpm": [12]}, server_cpus=[0],
                engine_cpus=[1])
    return ServedStack(**(base | kw))


def test_what_it_prints_clear_text(capsys):
    import io

    out = io.StringIO()
    serve_text.render(served(), None, 5.0, {"curl": True, "ab": True, "wrk": False, "h2load": True}, out)
    text = out.getvalue()
    assert "php-hello  http://127.0.0.1:8080/hello.php" in text
    assert "/tmp/stackbench-nginx-fpm-x  (configs: nginx/nginx.conf; logs/)" in text
    assert "nginx 10 11  ·  php-fpm 12" in text and "servers pinned to 0" in text
    assert "curl -i http://127.0.0.1:8080/hello.php" in text
    assert "taskset -c 1 ab -k -c 16 -t 10 http://127.0.0.1:8080/hello.php" in text
    assert "(not installed: apt-get install wrk)" in text
    assert "h2load --h1" in text and "for 5 s, or until Ctrl-C" in text and "run lock" in text
    assert "log in" not in text  # nobody logs in to php-hello


def test_a_site_with_readers_says_where_to_log_in_and_where_their_passwords_are():
    import io

    out = io.StringIO()
    serve_text.render(served(paths={"wordpress-home": ("/",)}, logins=Path("/tmp/stackbench-nginx-fpm-x/logins.json"),
                             login_path="/wp-login.php"), None, None, {}, out)
    assert ("log in         http://127.0.0.1:8080/wp-login.php  (the readers and this start's passwords: "
            "/tmp/stackbench-nginx-fpm-x/logins.json, yours alone)") in out.getvalue()


def test_what_it_prints_over_tls():
    import io

    out = io.StringIO()
    stack = served(tls_url="https://127.0.0.1:8443", ca_file=Path("/tmp/x/tls/ca.pem"), protocols=("h2",),
                   https=Negotiated("http/1.1", "TLSv1.3", "TLS_AES_128_GCM_SHA256", "X25519", 0),
                   h2=Negotiated("h2", "TLSv1.3", "TLS_AES_128_GCM_SHA256", "X25519", 0),
                   server_cpus=[0], engine_cpus=[0])
    serve_text.render(stack, MachineProfile(cpus=1), None, {}, out)
    text = out.getvalue()
    assert "https://127.0.0.1:8443/hello.php" in text
    assert "HTTP/1.1, and HTTP/2 (ALPN h2); TLSv1.3 TLS_AES_128_GCM_SHA256 X25519" in text
    assert "CA to trust    /tmp/x/tls/ca.pem" in text
    assert "curl -i --http2 --cacert /tmp/x/tls/ca.pem https://127.0.0.1:8443/hello.php" in text
    assert "h2load -c 16 -m 10 -D 10 https://127.0.0.1:8443/hello.php" in text
    assert "taskset" not in text  # one core: the tools share it with the servers
    assert "1 CPU" in text and "until Ctrl-C (or SIGTERM)" in text


def test_app_is_a_directory_or_a_plan_files_app_table(tmp_path):
    assert serve_plan.app_table(str(tmp_path)) == {"docroot": str(tmp_path.resolve())}
    (tmp_path / "shop.toml").write_text('[app]\ndocroot = "/srv/shop"\nfront_controller = "/index.php"\n')
    assert serve_plan.app_table(str(tmp_path / "shop.toml")) == {"docroot": "/srv/shop",
                                                                 "front_controller": "/index.php"}

"""Clients on more than one host (hosts/): the plan's [hosts] table, the exact merge of
several engines' results, the clock offset estimate — and the SSH path for real: an
sshd started by the test in a network namespace of its own is the remote host (the
client there, the server here)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import require_stack, stop_lab, wait_until
from sshd_host import HERE
from stackbench.engine import merge, process as engine
from stackbench.engine.process import LoadSpec
from stackbench.errors import PlanError
from stackbench.hosts import clock
from stackbench.hosts.clients import share
import tomllib

from stackbench.planning.plan import parse

ROOT = Path(__file__).resolve().parent.parent


def load_plan(text: str):
    return parse(tomllib.loads(text), "plan.toml")


def plan_text(extra: str, head: str = "") -> str:
    return f"""
name = "hosts"
duration = "1s"
warmup = "0s"
syscalls = false
concurrency = [4]
keepalive = [true]
workloads = ["php-hello"]
{head}
{extra}
[[stacks]]
id = "nginx-fpm"
"""


# -- the plan --------------------------------------------------------------------------
def test_the_default_is_one_local_client():
    plan = load_plan(plan_text(""))
    assert plan.hosts.single_local and not plan.hosts.remote


def test_clients_are_read_with_their_kinds(tmp_path):
    conf = tmp_path / "ssh.conf"
    conf.write_text("Host x\n")
    p = tmp_path / "p.toml"
    p.write_text(plan_text(f'[hosts]\nclient = ["local", "ssh:bench@loadbox"]\nssh_config = "{conf.name}"'))
    from stackbench.planning.plan import load
    plan = load(p)
    assert [c.label for c in plan.hosts.clients] == ["local", "ssh:bench@loadbox"]
    assert plan.hosts.ssh_config == str(conf) and [c.destination for c in plan.hosts.remote] == ["bench@loadbox"]


@pytest.mark.parametrize("table, head, words", [
    ('[hosts]\nserver = "ssh:web1"\ndb = "local"', "", "the database runs beside the stack (leave db out) or on a host"),
    ('[hosts]\ndb = "namespace"', "", "reached over SSH"),
    ('[hosts]\ndb = "ssh:db1"', "", "none of the plan's workloads has one"),
    ('[hosts]\nserver = "ssh:web1"', 'network = "veth"', "a server on another host is reached over the real network"),
    ('[hosts]\nserver = "namespace"', "", "network cannot be \"loopback\""),
    ('[hosts]\nserver = "web1"', "", "the server is one of local, namespace, ssh:DEST"),
    ('[hosts]\nserver_address = "10.0.0.5"', "", 'with hosts.server = "ssh:DEST"'),
    ('[hosts]\nserver = "ssh:web1"\nserver_address = "web1"', "", "is not an IP address"),
    ('[hosts]\ndb_address = "10.0.0.6"', "", 'with hosts.db = "ssh:DEST"'),
    ('[hosts]\nclient = ["ssh:"]', "", "each client is one of local, namespace, ssh:DEST"),
    ('[hosts]\nclient = ["ssh:-oProxyCommand=x"]', "", "each client is one of"),
    ('[hosts]\nclient = ["ssh: -oProxyCommand=x"]', "", "each client is one of"),
    ('[hosts]\nclient = []', "", "hosts.client takes a list"),
    ('[hosts]\nclients = ["local"]', "", "unknown key 'clients'"),
    ('[hosts]\nclient = ["local", "local", "local", "local", "local"]', "", "concurrency 4 cannot be spread over 5 clients"),
    ('[hosts]\nclient = ["ssh:a", "local"]', 'network = "veth"', "network must be \"loopback\""),
    ('[hosts]\nclient = ["namespace"]', "", "network cannot be \"loopback\""),
    ('[hosts]\nssh_config = "/nonexistent/ssh.conf"', "", "no file /nonexistent/ssh.conf"),
])
def test_bad_hosts_tables_are_refused_with_the_reason(table, head, words):
    with pytest.raises(PlanError) as e:
        load_plan(plan_text(table, head))
    assert words in e.value.message


def test_connections_are_shared_out_like_the_engines_threads():
    assert [share(10, 3, k) for k in range(3)] == [4, 3, 3]
    assert sum(share(17, 4, k) for k in range(4)) == 17


def test_two_clients_alike_are_numbered_apart():
    from stackbench.hosts.clients import ClientSession
    plan = load_plan(plan_text('[hosts]\nclient = ["local", "local"]'))
    session = ClientSession.open(plan.hosts)
    assert [f["host"] for f in session.facts()] == ["local #1", "local #2"]
    assert [h.host for h in session.hosts_connected()] == ["local #1", "local #2"]


def test_a_command_for_an_ssh_host_reaches_its_shell_as_the_same_words(tmp_path):
    """The one place a shell is involved (ssh runs the command through the remote login
    shell): every word quoted, so a hostile path stays one word, never code."""
    import shlex

    from stackbench.hosts.ssh import Ssh
    argv = ["stackbench-load", "--url", "/a b;rm -rf /=1", "http://10.0.0.1:80/$(reboot)`id`"]
    command = f"exec {shlex.join(argv)}"
    ssh_argv = Ssh("bench@loadbox", tmp_path).argv(command)
    assert ssh_argv[-3:] == ["--", "bench@loadbox", command]  # the destination is never an option
    assert shlex.split(command)[1:] == argv


def test_the_live_line_sums_every_clients_progress():
    from stackbench.engine.result import Progress
    from stackbench.hosts.clients import _Progress
    shown = []
    progress = _Progress(shown.append, 2)
    progress.update(0, Progress("measure", elapsed_s=1.0, completed=100, failed=1, non_2xx=0, per_s=100.0))
    progress.update(1, Progress("measure", elapsed_s=1.1, completed=90, failed=0, non_2xx=2, per_s=90.0))
    assert shown[-1] == Progress("measure", elapsed_s=1.1, completed=190, failed=1, non_2xx=2, per_s=190.0)


# -- the clock ---------------------------------------------------------------------------
def test_the_offset_comes_from_the_shortest_round_trip():
    # A host 5 ms ahead; round trips of 900, 200 and 600 µs, the 200 µs one asymmetric
    # by at most its own length: the estimate is within ± 100 µs of the truth.
    samples = [(1_000, 1_000 + 5_000 + 300, 1_900), (10_000, 10_000 + 5_000 + 150, 10_200),
               (20_000, 20_000 + 5_000 + 100, 20_600)]
    o = clock.estimate(samples)
    assert (o.best_rtt_us, o.uncertainty_us, o.probes) == (200, 100, 3)
    assert abs(o.offset_us - 5_000) <= o.uncertainty_us


def test_the_engines_clock_probe_agrees_with_this_clock():
    proc = subprocess.Popen([engine.binary(), "--clock"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    o = clock.measure(proc)
    assert o.probes == clock.PROBES
    assert abs(o.offset_us) <= o.uncertainty_us + 50, o  # one clock: the offset is noise


# -- the merge ---------------------------------------------------------------------------
class _Slowish(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 - http.server's name
        time.sleep(0.0005 if self.path == "/fast" else 0.003)
        # One write: head and body apart would meet the client's delayed ACK (40 ms).
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def http_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slowish)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _doc(url: str, n: int) -> dict:
    return engine.run(LoadSpec(url=url, connections=2, duration_s=None, requests=n, histogram=True)).raw


def test_one_result_merged_alone_is_itself(http_server):
    doc = _doc(http_server + "/fast", 400)
    alone = merge.latency([doc["latency_us"]])
    assert alone["percentiles"] == doc["latency_us"]["percentiles"]  # the engine's own rule, bucket for bucket
    assert (alone["count"], alone["min"], alone["max"]) == (doc["latency_us"]["count"], doc["latency_us"]["min"],
                                                           doc["latency_us"]["max"])
    assert alone["mean"] == pytest.approx(doc["latency_us"]["mean"])
    assert alone["stdev"] == pytest.approx(doc["latency_us"]["stdev"], rel=1e-9)


def test_two_results_merge_exactly_not_by_averaging_percentiles(http_server):
    fast, slow = _doc(http_server + "/fast", 600), _doc(http_server + "/slow", 200)
    clients = [{"host": "local"}, {"host": "local"}]
    merged = merge.merge([fast, slow], clients)
    lat = merged["latency_us"]
    assert lat["count"] == 800 == merged["requests"]["completed"]
    # By hand: every bucket of both, in value order, and the engine's rule over them.
    buckets: dict[int, int] = {}
    for d in (fast, slow):
        for v, c in d["latency_us"]["histogram"]:
            buckets[v] = buckets.get(v, 0) + c
    by_hand = sorted(buckets.items())
    assert lat["histogram"] == by_hand
    seen, want = 0, -(-99 * 800 // 100)  # ceil(0.99 × 800) = 792
    p99 = next(v for v, c in by_hand if (seen := seen + c) >= want)
    assert lat["percentiles"]["99"] == min(p99, lat["max"])
    # The p50 of 600 fast and 200 slow ones is the 400th fast one (between the fast
    # engine's p66, its 396th, and its p75); an average of the two p50s is not.
    assert fast["latency_us"]["percentiles"]["66"] <= lat["percentiles"]["50"] <= fast["latency_us"]["percentiles"]["75"]
    assert lat["percentiles"]["50"] < (fast["latency_us"]["percentiles"]["50"] + slow["latency_us"]["percentiles"]["50"]) / 2
    assert lat["mean"] == pytest.approx((fast["latency_us"]["mean"] * 600 + slow["latency_us"]["mean"] * 200) / 800)
    assert merged["requests_per_s"] == pytest.approx(fast["requests_per_s"] + slow["requests_per_s"])
    assert [c["completed"] for c in merged["clients"]] == [600, 200]


def test_moments_pool_exactly_and_phase_medians_are_not_made_up():
    import random
    import statistics
    rng = random.Random(7)
    a, b = [rng.gauss(500, 80) for _ in range(300)], [rng.gauss(3000, 400) for _ in range(100)]
    part = lambda xs: {"count": len(xs), "min": min(xs), "max": max(xs), "mean": statistics.fmean(xs),  # noqa: E731
                       "stdev": statistics.stdev(xs), "median": statistics.median(xs)}
    pooled = merge._summary([part(a), part(b), None])
    assert pooled["count"] == 400 and pooled["median"] is None
    assert pooled["mean"] == pytest.approx(statistics.fmean(a + b), rel=1e-12)
    assert pooled["stdev"] == pytest.approx(statistics.stdev(a + b), rel=1e-9)


def test_one_client_keeps_its_own_document_and_says_where_it_ran(http_server):
    doc = _doc(http_server + "/fast", 50)
    one = merge.merge([doc], [{"host": "ssh:a", "offset_us": 12, "offset_uncertainty_us": 40}])
    assert one["latency_us"] == doc["latency_us"] and one["clients"][0]["host"] == "ssh:a"
    assert one["start_sync"]["clock_uncertainty_us"] == 40


def test_a_url_mix_merges_path_by_path(http_server):
    spec = LoadSpec(url=http_server, connections=2, duration_s=None, requests=200, histogram=True,
                    mix=(("/fast", 3), ("/slow", 1)))
    docs = [engine.run(spec).raw, engine.run(spec).raw]
    merged = merge.merge(docs, [{"host": "local #1"}, {"host": "local #2"}])
    rows = {r["path"]: r for r in merged["per_url"]}
    assert set(rows) == {"/fast", "/slow"}
    for path, row in rows.items():
        parts = [next(r for r in d["per_url"] if r["path"] == path) for d in docs]
        assert row["requests"]["completed"] == sum(r["requests"]["completed"] for r in parts)
        assert row["latency_us"]["count"] == sum(r["latency_us"]["count"] for r in parts)
    assert set(merged["phases_us"]) == {"connect", "waiting", "processing", "total"}
    assert merged["phases_us"]["total"]["count"] == merged["latency_us"]["count"]


def test_a_result_without_buckets_is_not_merged_by_guessing(http_server):
    doc = _doc(http_server + "/fast", 50)
    del doc["latency_us"]["histogram"]
    with pytest.raises(ValueError, match="--histogram"):
        merge.latency([doc["latency_us"], doc["latency_us"]])


# -- the SSH path, for real ------------------------------------------------------------------
def _control_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("stackbench-ssh-*")}


@pytest.mark.servers
def test_a_client_over_ssh_and_a_local_one_make_one_merged_load(ssh_host, workdir):
    require_stack("nginx-fpm")
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(plan_text(f'[hosts]\nclient = ["local", "ssh:remote-test"]\nssh_config = "{ssh_host}/ssh_config"')
                    .replace('duration = "1s"', 'duration = "2s"'))
    before = _control_dirs()
    run = lambda *flags: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db), "--workdir", str(workdir), *flags],
        cwd=ROOT, capture_output=True, text=True, timeout=180)

    refused = run()
    assert refused.returncode == 2 and "--allow-remote-target" in refused.stderr, refused.stderr

    done = run("--allow-remote-target")
    assert done.returncode == 0, done.stderr
    assert "clients: 2, the load spread over them: local; ssh:remote-test (" in done.stdout + done.stderr
    with sqlite3.connect(db) as conn:
        status, doc = conn.execute("SELECT status, engine_json FROM cells WHERE run_id = "
                                   "(SELECT max(id) FROM runs)").fetchone()
    doc = json.loads(doc)
    assert status == "ok"
    assert doc["config"]["url"].startswith(f"http://{HERE}:")  # the stack listened where the remote host reaches it
    local, remote = doc["clients"]
    assert (local["host"], remote["host"]) == ("local", "ssh:remote-test")
    assert local["connections"] == remote["connections"] == 2
    assert local["completed"] > 100 and remote["completed"] > 100, doc["clients"]
    assert doc["requests"]["completed"] == local["completed"] + remote["completed"] == doc["latency_us"]["count"]
    assert sum(c for _, c in doc["latency_us"]["histogram"]) == doc["latency_us"]["count"]
    # One clock (the namespace shares this machine's): the offset is within its bound of 0,
    # and the engines began within a few ms of each other — measured, and reported.
    assert abs(remote["offset_us"]) <= remote["offset_uncertainty_us"] + 100, remote
    assert doc["start_sync"]["spread_us"] < 20_000, doc["start_sync"]
    assert not _control_dirs() - before  # the SSH master connection and its socket are gone
    shown = subprocess.run([sys.executable, "-m", "stackbench", "show", "--db", str(db)], cwd=ROOT,
                           capture_output=True, text=True).stdout
    assert "clients: the load of each cell spread over 2, their latency histograms merged exactly" in shown
    assert "began within" in shown and "µs of each other" in shown


@pytest.mark.servers
def test_a_host_that_cannot_be_reached_stops_the_run_before_it_is_stored(workdir):
    require_stack("nginx-fpm")
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(plan_text('[hosts]\nclient = ["local", "ssh:nobody@no-such-host.invalid"]'))
    before = _control_dirs()
    proc = subprocess.run([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db), "--workdir",
                           str(workdir), "--allow-remote-target"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 8, proc.stderr
    assert "nobody@no-such-host.invalid: SSH failed" in proc.stderr and "without a password" in proc.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    assert _control_dirs() == before


def _remote_engines() -> list[int]:
    """Engines shipped to an SSH host (here: this machine's ~/.cache) still running."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b".cache/stackbench/stackbench-load-" in cmd and b"--watch-stdin" in cmd:  # a load, not a probe
            found.append(int(entry.name))
    return found


@pytest.mark.servers
@pytest.mark.parametrize("how", ["Ctrl-C", "kill -9"])
def test_a_lab_that_stops_stops_its_remote_engine_at_once(how, ssh_host, workdir):
    """The remote engine has no terminal. Ctrl-C: the lab kills its SSH clients; kill -9:
    the kernel does (parent-death signal). Either way the remote end of the engine's
    stdin closes, which stops it (--watch-stdin): it does not go on loading for the rest
    of its 30 s."""
    require_stack("nginx-fpm")
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(plan_text(f'[hosts]\nclient = ["local", "ssh:remote-test"]\nssh_config = "{ssh_host}/ssh_config"')
                    .replace('duration = "1s"', 'duration = "30s"'))
    lab = subprocess.Popen([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db), "--workdir",
                            str(workdir), "--allow-remote-target", "--quiet"], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_until(_remote_engines, 30, while_=lambda: lab.poll() is None), "the remote engine never started"
    time.sleep(1.0)  # loading
    stop_lab(lab, how)
    assert wait_until(lambda: not _remote_engines(), 3), "the remote engine went on loading"
    if how == "Ctrl-C":
        assert "--allow-remote-target" in lab.stderr.read()  # the resume hint says what resuming needs

"""The lab's namespaces for real: a topology leaves nothing behind (normal end, an error
half-way, Ctrl-C of a run, kill -9 of the lab and the next lab's sweep — which removes
only the lab's own), a shaped link gives the rate it asks within 10 %, and slow visitors
beside fast ones hold Apache prefork's workers while nginx + FPM spoon-feeds them."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import require_stack
from stackbench.upkeep import leftovers
from stackbench.network import calibrate, netns
from stackbench.network.profiles import BUILTIN, Profile
from stackbench.network.shape import Shape
from stackbench.network.topology import Topology

pytestmark = pytest.mark.servers


def host_links() -> set[str]:
    return set(subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout.split("\n"))


def lab_namespaces() -> list[str]:
    return [n for n in netns.listed() if netns.owned(n) is not None]


def test_a_topology_is_removed_whole_and_never_touches_the_host():
    before_links, before_ns = host_links(), set(netns.listed())
    topo = Topology.build({"measured": BUILTIN["lan"], "slow": BUILTIN["veth"]}, {"net.ipv4.tcp_wmem": "4096 16384 65536"})
    made = topo.namespaces()
    assert set(made) <= set(netns.listed()) and len(made) == 3
    assert host_links() == before_links  # both ends of every link live in the lab's namespaces
    assert topo.server.read_sysctl("net.ipv4.tcp_wmem").split() == ["4096", "16384", "65536"]
    assert topo.sides["measured"].ns.read_sysctl("net.ipv4.tcp_tw_reuse") == "1"
    topo.close()
    assert set(netns.listed()) == before_ns and host_links() == before_links


def test_a_failure_half_way_removes_what_was_made():
    before = set(netns.listed())
    with pytest.raises(Exception):
        Topology.build({"measured": BUILTIN["veth"]}, {"net.ipv4.no_such_sysctl": "1"})
    assert set(netns.listed()) == before


def test_a_shaped_link_gives_its_rate_within_ten_percent():
    """The limiter caps a link at its rate; what the receiver measures can only fall short
    of it, when this busy 2-core machine schedules the reading thread late (once in about
    ten CI runs: 12 % short). So the best of up to three transfers each way is the link's
    rate — still never above the cap, and within 10 % of it."""
    profile = Profile("r5", Shape(5_000_000), Shape(2_000_000))
    topo = Topology.build({"measured": profile})
    # TCP's goodput is the link rate less its headers (1448 of 1514 bytes a frame)
    want = {"down_bit_s": 5_000_000 * 1448 / 1514, "up_bit_s": 2_000_000 * 1448 / 1514}
    best: dict[str, float] = {}
    try:
        for _ in range(3):
            got = calibrate.link(topo, topo.first)["measured"]
            assert got["rtt_ms"]["answered"] == calibrate.PROBES
            best = {k: max(best.get(k, 0), got[k]) for k in want}
            if all(best[k] == pytest.approx(want[k], rel=0.10) for k in want):
                break
    finally:
        topo.close()
    for k in want:
        assert best[k] == pytest.approx(want[k], rel=0.10), (k, best)


MAKER = """
import sys, time
from stackbench.network.topology import Topology
from stackbench.network.profiles import BUILTIN
t = Topology.build({"measured": BUILTIN["veth"]})
print(" ".join(t.namespaces()), flush=True)
time.sleep(60)
"""


def test_kill_9_leaves_namespaces_that_the_next_lab_sweeps_and_only_those():
    subprocess.run(["ip", "netns", "add", "sbt-not-ours"], check=True)
    try:
        maker = subprocess.Popen([sys.executable, "-c", MAKER, "stackbench"], stdout=subprocess.PIPE, text=True)
        made = maker.stdout.readline().split()
        assert made and all(n in netns.listed() for n in made)
        assert not [x for x in leftovers.stale_namespaces() if x.what in made]  # its lab is alive
        maker.send_signal(signal.SIGKILL)
        maker.wait()
        assert all(n in netns.listed() for n in made)  # kill -9: nothing could clean up
        found = [x for x in leftovers.stale_namespaces() if x.what in made]
        assert sorted(x.what for x in found) == sorted(made)  # what `clean --dry-run` lists; nothing removed yet
        assert all(n in netns.listed() for n in made)
        for x in found:  # what the next lab's sweep (or `stackbench clean`) does
            x.remove()
        assert not any(n in netns.listed() for n in made)
        assert "sbt-not-ours" in netns.listed()
    finally:
        subprocess.run(["ip", "netns", "delete", "sbt-not-ours"])


SLOW = """
name = "slow-real"
workloads = ["php-100k"]
concurrency = [8]
keepalive = [true]
duration = "3s"
warmup = "1s"
syscalls = false
network = "veth"
background = ["none", "slow"]
server_tcp_wmem = "4096 16384 65536"
[visitors.slow]
connections = 40
read_rate = "20kB"
rcvbuf = "16k"
[[stacks]]
id = "apache-prefork-modphp"
label = "prefork"
[[stacks]]
id = "nginx-fpm"
label = "nginx"
"""


def test_slow_visitors_hold_preforks_workers_but_not_nginxs(workdir):
    require_stack("apache-prefork-modphp")
    require_stack("nginx-fpm")
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(SLOW)
    before = set(lab_namespaces())
    proc = subprocess.run([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db), "--quiet",
                           "--workdir", str(workdir)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert set(lab_namespaces()) == before
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        cells = {(r["stack_label"], r["background"]): r for r in conn.execute("SELECT * FROM cells")}
        network = json.loads(conn.execute("SELECT network_json FROM runs").fetchone()[0])
    assert network["veth"]["measured"]["rtt_ms"]["answered"] > 0
    assert all(c["network"] == "veth" for c in cells.values())
    slow = json.loads(cells[("prefork", "slow")]["classes_json"])
    assert slow["slow"]["connections"] == 40
    alone = json.loads(cells[("prefork", "none")]["classes_json"])
    assert alone["server"]["procs_max"] == cells[("prefork", "none")]["procs_max"]
    # prefork gives every slow visitor a child of its own until its spawn rate (doubling
    # each second) catches up: the visitors who read at full speed wait behind them. nginx
    # buffers the responses, so the slow visitors hold FPM's workers only while PHP runs:
    # its pool may grow by a worker or two (48 visitors ask at once, not 8), less than
    # prefork's, and the others barely notice.
    rate = {k: c["requests_per_s"] for k, c in cells.items()}
    grew = {s: cells[(s, "slow")]["procs_max"] - cells[(s, "none")]["procs_max"] for s in ("prefork", "nginx")}
    assert grew["prefork"] >= 4 and grew["nginx"] < grew["prefork"], grew
    assert rate[("prefork", "slow")] < 0.5 * rate[("prefork", "none")], rate
    assert rate[("nginx", "slow")] > 0.5 * rate[("nginx", "none")], rate
    # what a reader sees: the network with its measured figures, the classes, the verdict lines
    shown = subprocess.run([sys.executable, "-m", "stackbench", "show", "--db", str(db)], capture_output=True,
                           text=True).stdout
    assert "network veth: veth pair, unshaped; asked unshaped each way; measured RTT p50" in shown
    assert "visitor classes: the measured visitors alone and with others beside them" in shown
    # prefork beside slow visitors: a comparison with itself alone, or the load it failed
    assert ("prefork · php-100k c=8 veth keep-alive: with slow vs alone" in shown
            or "prefork · php-100k c=8 veth keep-alive: with slow fails this load" in shown), shown
    html = workdir / "r.html"
    subprocess.run([sys.executable, "-m", "stackbench", "report", "--db", str(db), "-o", str(html)], check=True,
                   capture_output=True)
    page = html.read_text()
    assert "Visitor classes (medians over repetitions)" in page and "veth: veth pair, unshaped" in page


# The plan above narrowed to prefork's case: the slow readers beside, alone not measured.
HELD = (SLOW.replace('name = "slow-real"', 'name = "held-real"\nbaseline = "nginx"\ntimeout = "8s"\nrepetitions = 1')
        .replace('duration = "3s"\nwarmup = "1s"', 'duration = "1s"\nwarmup = "0.7s"')
        .replace('background = ["none", "slow"]', 'background = ["slow"]')
        .replace("connections = 40", "connections = 16\nkeepalive = true")
        .replace('label = "prefork"', 'label = "prefork"\nknobs = { start_servers = 16, min_spare_servers = 16, '
                 'max_spare_servers = 16, max_request_workers = 16, keepalive_timeout = 30 }')
        .replace('label = "nginx"', 'label = "nginx"\nknobs = { pm = "static", pm_max_children = 8 }'))
assert HELD.count("held-real") == HELD.count("keepalive_timeout") == HELD.count('["slow"]') == 1


def test_prefork_whose_children_slow_visitors_hold_fails_the_load_and_nginx_serves(workdir):
    """slow-clients' prefork case, narrowed: 16 slow readers (20 kB/s, a 100 kB page each:
    5 s a page, kept alive) hold all 16 children, and the 8 fast visitors get nothing in the
    1 s window. No pace alone is known in this plan, so the lab measures on — the slow
    readers let go and come again, then a window to a second past the 8 s timeout — and
    judges: 0 of 8 served, never "100 % slower". Two things would let the fast visitors in
    before the window's end, and are kept out: the kernel's buffers take a whole page at once
    (~96 kB), so the child waits on the reader in keep-alive, and Debian's 5 s
    KeepAliveTimeout would close it just before the next request (30 s here, as a site
    holding connections for slow phones sets it); and the timeout is the slow readers' too,
    so one queued for a child would time out and free one (no more of them than children;
    their pages take ~5 s, under the 8 s timeout). nginx + FPM spoon-feeds the slow readers
    from its buffers and serves."""
    require_stack("apache-prefork-modphp")
    require_stack("nginx-fpm")
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(HELD)
    proc = subprocess.run([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db), "--quiet",
                           "--workdir", str(workdir)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        cells = {r["stack_label"]: r for r in conn.execute("SELECT * FROM cells")}
    prefork = json.loads(cells["prefork"]["engine_json"])
    assert prefork["duration_us"] >= 9_000_000  # measured on: one second past the deadline
    assert prefork["requests"]["completed"] == 0
    assert json.loads(cells["prefork"]["classes_json"])["slow"]["connections"] == 16  # the readers came again
    assert cells["nginx"]["requests_completed"] > 0
    shown = subprocess.run([sys.executable, "-m", "stackbench", "show", "--db", str(db)], capture_output=True,
                           text=True).stdout
    assert ("prefork fails this load in 1 of 1 run: 0 of 8 measured visitors served in 9 s (past the 8 s the "
            "engine waits for a response)") in shown, shown
    assert "; nginx served " in shown and "% slower" not in shown, shown


INTERRUPTED = SLOW.replace('duration = "3s"', 'duration = "20s"')


def test_ctrl_c_of_a_run_on_namespaces_leaves_none(workdir):
    require_stack("nginx-fpm")
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(INTERRUPTED)
    before = set(lab_namespaces())
    proc = subprocess.Popen([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db), "--quiet",
                             "--workdir", str(workdir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(set(lab_namespaces()) - before) < 2:
        time.sleep(0.2)
    assert len(set(lab_namespaces()) - before) >= 2, "the run never made its namespaces"
    time.sleep(3)  # into the measured load
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert set(lab_namespaces()) == before

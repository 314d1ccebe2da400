"""Network profiles, visitor classes and their plan keys (no namespaces made here;
tests/test_network_real.py makes real ones)."""

from __future__ import annotations

import pytest

from stackbench.planning import plan as plan_mod
from stackbench.analysis import backgrounds, questions
from stackbench.errors import PlanError
from stackbench.network import addresses, netns, profiles, visitors
from stackbench.network.shape import Shape
from stackbench.network.veth import tbf_args
from cells import stored_cell

STACKS = [{"id": "nginx-fpm"}, {"id": "apache-prefork-modphp"}]


def parse(**keys):
    return plan_mod.parse({"stacks": STACKS, "workloads": ["php-hello"], "concurrency": [4], "keepalive": [True],
                           **keys}, "p.toml")


def test_default_is_loopback_and_cells_say_so():
    p = parse()
    assert [n.name for n in p.networks] == ["loopback"] and not p.namespaced
    assert {(c.network, c.background) for c in plan_mod.expand(p)} == {("loopback", "none")}


def test_a_network_sweep_is_a_dimension_inside_each_stack():
    p = parse(network=["loopback", "lan", "mobile-3g"])
    cells = plan_mod.expand(p)
    assert [(c.stack.id, c.network) for c in cells] == [
        ("nginx-fpm", "loopback"), ("nginx-fpm", "lan"), ("nginx-fpm", "mobile-3g"),
        ("apache-prefork-modphp", "loopback"), ("apache-prefork-modphp", "lan"), ("apache-prefork-modphp", "mobile-3g")]
    assert cells[1].level() == "c=4 lan"
    assert p.profile("mobile-3g").delayed and not p.profile("lan").delayed


def test_built_in_profiles_ask_what_their_names_promise():
    b = profiles.BUILTIN
    assert b["lan"].down.rate_bit_s == 1_000_000_000 and b["lan"].down.delay_s == 0
    assert (b["mobile-3g"].down.rate_bit_s, b["mobile-3g"].up.rate_bit_s) == (1_600_000, 768_000)
    assert b["mobile-3g"].down.delay_s + b["mobile-3g"].up.delay_s == pytest.approx(0.300)
    assert "tbf" in b["lan"].emulation and "netshape" in b["mobile-3g"].emulation
    assert b["veth"].emulation == "veth pair, unshaped"


def test_a_queue_or_reordering_asked_of_a_rate_only_link_goes_to_the_forwarder():
    p = parse(network=["plain", "queued", "free"], networks={
        "plain": {"rate": "5mbit"}, "queued": {"rate": "5mbit", "queue": "30kB"},
        "free": {"delay": "5ms", "jitter": "2ms", "order": "free"}})
    plain, queued, free = p.networks
    assert not plain.delayed and "tbf" in plain.emulation  # the lab's tbf sizes its own queue
    assert queued.delayed and queued.down.queue_bytes == 30_000
    assert free.delayed and free.down.reorder


def test_a_plan_defines_its_own_profile_per_direction_or_both_ways():
    p = parse(network=["dsl", "far"], networks={
        "dsl": {"down": {"rate": "8mbit", "delay": "25ms", "jitter": "2ms", "loss": "0.1%"}, "up": {"rate": "1mbit"}},
        "far": {"delay": "40ms"}})
    dsl, far = p.networks
    assert dsl.down == Shape(8_000_000, 0.025, 0.002, 0.001) and dsl.up == Shape(1_000_000)
    assert far.down == far.up == Shape(None, 0.040)


@pytest.mark.parametrize("keys, message", [
    ({"network": "lna"}, "network 'lna' is not a profile (did you mean 'lan'?)"),
    ({"network": 3}, "network must be a profile name or a list of them"),
    ({"network": ["lan", "lan"]}, "network lists a profile twice"),
    ({"networks": {"lan": {"delay": "1ms"}}}, "'lan' is a built-in profile"),
    ({"networks": {"x": {"dealy": "1ms"}}}, "networks.x has an unknown key 'dealy'"),
    ({"networks": {"x": {"delay": "fast"}}}, "networks.x.down: delay: 'fast' is not a number with a unit"),
    ({"networks": {"x": {"rate": "5mbps"}}}, "'5mbps' is not a rate"),
    ({"networks": {"x": {"delay": "1ms", "jitter": "2ms"}}}, "jitter must not exceed delay"),
    ({"networks": {"x": {"loss": "100%"}}}, "must be at least 0 and below 100%"),
    ({"networks": {"x": {"rate": "1mbit", "down": {}}}}, "give either rate/delay/jitter/loss"),
    ({"network": "veth", "visitors": {"slow": {"connections": 0}}, "background": ["slow"]},
     "visitors.slow.connections must be a whole number from 1 to 10000"),
    ({"network": "veth", "visitors": {"slow": {"connections": 5, "speed": 1}}, "background": ["slow"]},
     "visitors.slow has an unknown key 'speed'"),
    ({"network": "veth", "visitors": {"slow": {"connections": 5, "read_rate": "fast"}}, "background": ["slow"]},
     "read_rate 'fast' is not a size"),
    ({"network": "veth", "visitors": {"slow": {"connections": 5, "network": "moon"}}, "background": ["slow"]},
     "visitors.slow.network 'moon' is not a profile"),
    ({"network": "veth", "visitors": {"server": {"connections": 5}}, "background": ["server"]},
     "'server' cannot name a visitor class"),
    ({"network": "veth", "background": ["slow"]}, "background 'slow': no [visitors.slow] table"),
    ({"network": "veth", "visitors": {"slow": {"connections": 5}}}, "background does not use them"),
    ({"visitors": {"slow": {"connections": 5}}, "background": ["slow"]},
     "visitor classes need the stack in a namespace of its own"),
    ({"server_tcp_wmem": "4096 16384", "network": "veth"}, "server_tcp_wmem must be three numbers"),
    ({"server_tcp_wmem": "4096 16384 65536"}, "server_tcp_wmem is set in the stack's own namespace"),
    ({"netwrok": "lan"}, "unknown key 'netwrok' (did you mean 'network'?)"),
])
def test_bad_network_keys_are_one_clear_line(keys, message):
    with pytest.raises(PlanError) as e:
        parse(**keys)
    assert message in e.value.message and "\n" not in e.value.message


def test_visitor_classes_and_their_background_sweep():
    p = parse(network="veth", background=["none", "slow", "slow+bots"], visitors={
        "slow": {"connections": 50, "read_rate": "20kB", "rcvbuf": "16k", "network": "mobile-3g"},
        "bots": {"connections": 4, "keepalive": False}})
    slow = p.visitors["slow"]
    assert (slow.connections, slow.read_rate, slow.rcvbuf, slow.network) == (50, 20_000, 16_000, "mobile-3g")
    assert set(p.links) == {"veth", "mobile-3g"}
    assert [c.background for c in plan_mod.expand(p)][:3] == ["none", "slow", "slow+bots"]
    assert visitors.members("slow+bots") == ["slow", "bots"] and visitors.members("none") == []
    assert visitors.size("16KiB", "x") == 16384 and visitors.size("1M", "x") == 1_000_000


def test_questions_keep_networks_and_backgrounds_apart():
    cells = [stored_cell(seq=i, workload="php-hello", concurrency=4, keepalive=True, network=n, background=b,
                         stack_label="A") for i, (n, b) in enumerate([("loopback", "none"), ("veth", "none"),
                                                                      ("veth", "slow")])]
    assert [q.level() for q in questions.group(cells)] == ["c=4", "c=4 veth", "c=4 veth +slow"]
    # a stored cell from before v9 (the migration's defaults): loopback, nobody beside
    assert questions.of(stored_cell(workload="w", concurrency=1, keepalive=True)).level() == "c=1"


def test_with_against_alone_is_each_stack_against_itself():
    cells = []
    for rep in range(5):
        for bg, rps in (("none", 1000 + rep), ("slow", 400 + rep)):
            cells.append(stored_cell(run_id=1, seq=len(cells), repetition=rep, workload="php-100k", concurrency=16,
                                     keepalive=True, network="veth", background=bg, stack_label="Apache",
                                     status="ok", requests_per_s=rps, requests_completed=5000, requests_failed=0,
                                     non_2xx=0, caveats=[], load="closed"))
    vs = backgrounds.decide(cells)
    (v,) = vs.for_metric("throughput")
    assert (v.candidate, vs.baseline) == ("with slow", "alone")
    assert v.comparison.ratio == pytest.approx(402 / 1002, rel=1e-3) and v.better is False
    assert backgrounds.decide([c for c in cells if c.background == "none"]) is None


def test_tbf_burst_and_queue_are_sized_from_the_rate():
    args = tbf_args(5_000_000)
    burst, limit = int(args[args.index("burst") + 1]), int(args[args.index("limit") + 1])
    assert burst == 3028  # two frames: 4 ms at 5 Mbit/s is less
    assert limit == 65536  # 50 ms at 5 Mbit/s is 31 KB; at least 64 KiB
    big = tbf_args(1_000_000_000)
    assert int(big[big.index("burst") + 1]) == 500_000


def test_addresses_avoid_what_the_host_routes(monkeypatch):
    import ipaddress
    monkeypatch.setattr(addresses, "_in_use", lambda: [ipaddress.ip_network("10.213.0.0/24")])
    server, client = addresses.pick(set(), start=0)
    assert ipaddress.ip_address(server) not in ipaddress.ip_network("10.213.0.0/24")
    assert addresses.subnet_of(server) == addresses.subnet_of(client)
    again = addresses.pick({addresses.subnet_of(server)}, start=0)
    assert addresses.subnet_of(again[0]) != addresses.subnet_of(server)


def test_only_the_labs_own_namespace_names_are_recognised():
    assert netns.owned("stackbench-1234-s0") == 1234
    assert netns.owned("stackbench-1234-c0-1") == 1234
    for other in ("sbt-1", "stackbench-x-s0", "docker-123", "stackbench-12"):
        assert netns.owned(other) is None

"""What the machine allows a plan to ask of the load engine, checked before anything
starts: file descriptors (one per connection) and local ports (one per open client
connection). A plan at 10,000 connections fails here in a second, with what to change,
instead of as connect errors in the middle of a run. And whether this machine can
emulate the plan's machine profile (machine.py) at all."""

from __future__ import annotations

import resource
from pathlib import Path

from stackbench.planning import machine
from stackbench.errors import PlanError
from stackbench.monitor import machine_cgroup

# Descriptors the engine needs besides its connections: stdio, epoll, eventfds, timers
# of its runtimes (loadgen/README.md), with room to spare.
ENGINE_FDS = 64
PORT_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
PAGE_CONNS = 6  # page mode: each visitor opens up to this many connections


def check_machine(plan) -> None:
    """Raise PlanError when the plan's busiest step needs more descriptors than this
    process may open (the engine raises its soft limit to the hard one) or more
    connections than there are local ports."""
    per_visitor = PAGE_CONNS if any(plan.workload(w).page_mode for w in plan.workloads) else 1
    need = plan.load.max_connections() * per_visitor
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and need + ENGINE_FDS > hard:
        raise PlanError(f"{plan.source}: the busiest step opens {need:,} connections, and this machine lets a "
                        f"process open at most {hard:,} files (ulimit -Hn)",
                        hint=f"lower concurrency/rate or connections, or raise the limit (ulimit -n {need + ENGINE_FDS})")
    ports = local_ports()
    if ports is not None and need > ports:
        raise PlanError(f"{plan.source}: the busiest step opens {need:,} connections, more than the "
                        f"{ports:,} local ports of this machine (net.ipv4.ip_local_port_range)",
                        hint="lower concurrency/rate or connections")
    if not plan.hosts.remote_server:  # there, the agent checks it (hosts/agent.py)
        check_profile(plan.machine, plan.source)


def check_profile(profile: machine.MachineProfile | None, source: str) -> None:
    """Whether the machine the stack runs on can emulate the plan's machine profile."""
    machine.check(profile, source)
    reason = machine_cgroup.unavailable_reason(profile)
    if reason is not None:
        raise machine_cgroup.MachineUnavailable(f"{source}: the machine profile ({profile.describe()}) "
                                                f"cannot be set up here: {reason}")


def local_ports() -> int | None:
    try:
        low, high = map(int, PORT_RANGE.read_text().split())
    except (OSError, ValueError):
        return None
    return high - low + 1

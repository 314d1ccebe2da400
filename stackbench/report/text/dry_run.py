"""What `run --dry-run` prints: the load model in one line, one line per cell (a capacity
search as one line with its bounds), and the expected time. It only renders: the time
to measure the network profiles and the cores chosen are handed to it by the command
(commands/measure.py), which asks the network and the machine."""

from __future__ import annotations

from typing import Sequence

from stackbench.planning.machine import MachineProfile
from stackbench.planning.plan import Cell, Plan
from stackbench.report.network import asked
from stackbench.upkeep.pinning import Pinning


def load_line(plan: Plan) -> str:
    m = plan.load
    if m.kind == "capacity":
        s = m.search
        return (f"load: capacity — the highest rate meeting {m.slo.describe()}; rates from {s.start:,g}/s "
                f"(× {s.factor:g}, then bisection to {s.precision:.0%}, low end confirmed {s.confirm} more times), "
                f"between {s.floor:,g} and {s.ceiling:,g}/s, at most {s.budget_s:.0f} s per search")
    if m.kind == "stages":
        return f"load: stages — {len(m.stages)} steps on one running stack"
    what = "open loop (latency from the intended send time)" if m.kind == "rate" else "closed loop"
    ramp = f"; ramp {m.ramp}" + (" on one running stack" if plan.restart == "stack" else "") if m.walk else ""
    return f"load: {what}{ramp}"


def network_lines(plan: Plan) -> list[str]:
    """Where the visitors are, and who else loads the stack, when it is not plain loopback."""
    if not plan.namespaced:
        return []
    out = [f"network: {p.name} — {p.emulation}; asks {asked(p.asked())}" for p in plan.links.values()
           if p.namespaced]
    for v in plan.visitors.values():
        reads = f", each reading at most {v.read_rate:,} B/s" if v.read_rate else ""
        window = f", SO_RCVBUF {v.rcvbuf:,} B" if v.rcvbuf else ""
        out.append(f"visitors {v.name}: {v.connections} connections on {v.network or 'the cell’s network'}{reads}{window}, "
                   f"keep-alive {'on' if v.keepalive else 'off'}; with cells whose background names them")
    if plan.server_tcp_wmem:
        out.append(f"server namespace: net.ipv4.tcp_wmem = {plan.server_tcp_wmem}")
    return out


def cell_line(c: Cell, plan: Plan) -> str:
    rep = f"  rep {c.repetition}" if plan.repetitions > 1 else ""
    ka = f"keep-alive {'on' if c.keepalive else 'off'}"
    if c.load == "capacity" and c.rate is None:
        return f"{c.seq:4d}  {c.stack.label}  {c.workload}  capacity search  {ka}{rep}"
    conns = f" ({c.concurrency} connections)" if c.rate is not None else ""
    step = f"  step {c.step}" if c.step is not None else ""
    dur = f"  {c.duration_s:g} s" if c.duration_s else ""
    return f"{c.seq:4d}  {c.stack.label}  {c.workload}  {c.level()}{conns}  {ka}{step}{dur}{rep}"


def summary_line(plan: Plan, cells: list[Cell], every: list[Cell], calibrations_s: Sequence[float]) -> str:
    """`calibrations_s`: the expected time to measure each network profile the run
    measures (network/calibrate.py), none on loopback."""
    searches = sum(1 for c in cells if c.load == "capacity")
    counted = f"{searches} capacity searches" if searches else f"{len(cells)} cells"
    line = f"{counted}, about {plan.seconds(cells) / 60:.1f} min{' at most' if searches else ''}; configs checked"
    if calibrations_s:
        line += (f"; plus about {sum(calibrations_s):.0f} s to measure "
                 f"{len(calibrations_s)} network profile{'s' if len(calibrations_s) > 1 else ''} (once per run)")
    if plan.adaptive:
        line += (f" (repetitions = \"auto\": {plan.min_repetitions} to {plan.max_repetitions} repetitions, "
                 f"up to {plan.seconds(every) / 60:.1f} min)")
    return line


def clients_line(plan: Plan) -> str:
    n = len(plan.hosts.clients)
    ssh = " (SSH hosts are connected, sent the engine and their clocks probed when the run starts)" \
        if plan.hosts.remote else ""
    return f"clients: {'; '.join(c.label for c in plan.hosts.clients)} — each load spread over the {n}{ssh}"


def machine_line(profile: MachineProfile, pins: Pinning) -> str:
    return (f"machine: {profile.describe()}; the stack on cores {pins.server_cpus}, the load engine on "
            f"{pins.engine_cpus} — OOM kills and memory-limit hits are recorded per cell")

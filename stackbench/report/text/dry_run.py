"""What `run --dry-run` prints: the load model in one line, one line per cell (a capacity
search as one line with its bounds), the expected time, and what the plan's repetitions
can decide. It only renders: the time to measure the network profiles, the cores chosen
and the power of the plan are handed to it by the command (commands/measure.py), which
asks the network, the machine and analysis/power.py."""

from __future__ import annotations

from typing import Sequence

from stackbench.analysis import power
from stackbench.analysis.stats import MIN_RUNS
from stackbench.model.network import Asked
from stackbench.planning import window
from stackbench.planning.estimate import Estimate
from stackbench.planning.machine import MachineProfile
from stackbench.model.tuning import ONE_REQUEST_SUFFIX, StoredTuning
from stackbench.planning import tune as tune_plan
from stackbench.planning.plan import Cell, Plan, StackVariant
from stackbench.planning.tune import TuneQuestion
from stackbench.planning.protocols import CLEAR, PROTOCOLS
from stackbench.report.network import asked
from stackbench.stacks.base import Pool
from stackbench.upkeep.pinning import Pinning


def load_line(plan: Plan) -> str:
    m = plan.load
    if m.kind == "capacity" and m.search is not None and m.slo is not None:  # a capacity load has both
        s = m.search
        confirm = f", low end confirmed {s.confirm} more times" if s.confirm else ""
        return (f"load: capacity — the rate meeting {m.slo.describe()} half the time (the edge, fitted to every "
                f"probe); rates from {s.start:,g}/s (× {s.factor:g}, then bisection to {s.precision:.0%}{confirm}, "
                f"then {s.edge} probes up and down around the edge), between {s.floor:,g} and {s.ceiling:,g}/s, "
                f"at most {s.budget_s:.0f} s per search")
    if m.kind == "stages":
        return f"load: stages — {len(m.stages)} steps on one running stack"
    what = "open loop (latency from the intended send time)" if m.kind == "rate" else "closed loop"
    ramp = f"; ramp {m.ramp}" + (" on one running stack" if plan.restart == "stack" else "") if m.walk else ""
    return f"load: {what}{ramp}"


def window_line(plan: Plan, remeasure: int) -> str | None:
    """How each cell's window is sized (planning/window.py) and how often an invalid
    repetition is measured again (`remeasure`: runner/repetitions.py)."""
    again = (f"; an invalid repetition (the engine at its limit, the hypervisor's steal) is measured again, up to "
             f"{remeasure} more time{'s' if remeasure != 1 else ''} a cell" if remeasure else "")
    if plan.load.kind != "closed" or plan.duration_s is None:
        return again.removeprefix("; ") or None
    return window.describe(plan.duration_s, plan.timeout_s, plan.equivalence) + again


def network_lines(plan: Plan) -> list[str]:
    """Where the visitors are, and who else loads the stack, when it is not plain loopback."""
    if not plan.namespaced:
        return []
    out = [f"network: {p.name} — {p.emulation}; asks {asked(Asked.from_dict(p.asked()))}" for p in plan.links.values()
           if p.namespaced]
    for v in plan.visitors.values():
        reads = f", each reading at most {v.read_rate:,} B/s" if v.read_rate else ""
        window = f", SO_RCVBUF {v.rcvbuf:,} B" if v.rcvbuf else ""
        out.append(f"visitors {v.name}: {v.connections} connections on {v.network or 'the cell’s network'}{reads}{window}, "
                   f"keep-alive {'on' if v.keepalive else 'off'}; with cells whose background names them")
    if plan.server_tcp_wmem:
        out.append(f"server namespace: net.ipv4.tcp_wmem = {plan.server_tcp_wmem}")
    return out


def protocol_line(plan: Plan) -> str | None:
    """What the visitors speak, when it is not only clear HTTP/1.1."""
    asked = plan.protocols
    if asked.names == (CLEAR,):
        return None
    line = "protocols: " + ", ".join(f"{p} ({PROTOCOLS[p].words})" for p in asked.names)
    if asked.tls is not None:
        cert = "an ECDSA P-256" if asked.tls.certificate == "ecdsa" else "an RSA 2048"
        line += (f"; TLS with {cert} certificate of the run's own CA, session tickets "
                 f"{'on' if asked.tls.tickets else 'off'}, handshakes {', '.join(asked.tls.handshake)} "
                 "(resumed / full: a new connection per request); the engine pins the run's leaf certificate")
    if "h2" in asked.names:
        line += (f"; HTTP/2 with {asked.streams} stream{'s' if asked.streams != 1 else ''} per connection, its "
                 "connections kept (the keep-alive handshake only)")
    return line


def tuned_line(v: StackVariant, stored: StoredTuning | None, q: TuneQuestion, pool: Pool) -> str:
    """A tuned stack: the stored tuning it takes, or how long tuning it first may take."""
    if stored is not None:
        extra = ONE_REQUEST_SUFFIX if stored.one_request else ""
        return (f"{v.label}: knobs tuned — stored tuning {stored.id} of this question is reused "
                f"({pool.describe(stored.chosen_size)}{extra})")
    runs = tune_plan.most_runs(q, pool.holds_connections)
    short, long = tune_plan.run_seconds(q), tune_plan.run_seconds(q, longest=True)
    if q.rate is not None:
        return (f"{v.label}: knobs tuned first for {q.workload} at {q.load()} — the smallest pool first "
                f"({q.repetitions} run{'s' if q.repetitions != 1 else ''} of {short:.0f} s); only if it does not "
                "serve the rate with CPU to spare, a pool of 2, and only if that does not, a probe and pools of 4 … "
                f"up to what fits and what the CPU can use: at most {runs} runs, "
                f"{runs * long / 60:.0f} min; stored for the next plan")
    return (f"{v.label}: knobs tuned first for {q.workload} at {q.load()} — a probe, then pools of 1, 2, 4 … up "
            f"to what fits and what the CPU can use: at most {runs} runs of {short:.0f} s (a slow page's up to "
            f"{long:.0f} s), {runs * short / 60:.0f}–{runs * long / 60:.0f} min; stored for the next plan")


def cell_line(c: Cell, plan: Plan) -> str:
    rep = f"  rep {c.repetition}" if plan.repetitions > 1 else ""
    # Over TLS the protocol and its handshake mode say how the visitors connect.
    ka = c.mode() if c.tls else f"keep-alive {'on' if c.keepalive else 'off'}"
    if plan.protocols.uses_tls and not c.tls:
        ka = f"{c.protocol} {ka}"
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
    counted = (f"{searches} capacity searches" if searches else
               f"{len(cells)} cells (each one stack on one workload at one load and connection mode, measured once)")
    line = f"{counted}, about {plan.seconds(cells) / 60:.1f} min{' at most' if searches else ''}"
    longest = plan.longest_seconds(cells)
    if not searches and longest > 1.2 * plan.seconds(cells):
        line += (f" (up to {longest / 60:.1f} min if every window stretches as a slow page's does"
                 + (" and every stack start warms up to its cap)" if plan.steady else ")"))
    line += "; configs checked"
    if calibrations_s:
        line += (f"; plus about {sum(calibrations_s):.0f} s to measure "
                 f"{len(calibrations_s)} network profile{'s' if len(calibrations_s) > 1 else ''} (once per run)")
    if plan.adaptive and plan.budget_s is not None:
        line += (f" (repetitions = \"auto\": {plan.min_repetitions}, then more while a throughput comparison has "
                 f"no verdict, up to {plan.max_repetitions}, none begun that would end past {plan.budget_s:g} s)")
    elif plan.adaptive:
        line += (f" (repetitions = \"auto\": {plan.min_repetitions} to {plan.max_repetitions} repetitions, "
                 f"up to {plan.seconds(every) / 60:.1f} min)")
    return line


def in_all_line(e: Estimate, parts: Sequence[str]) -> str:
    """"in all: about 2–5 min (up to 12 min if every window stretches as a slow page's does):
    the cells, 2 tunings" — the plan's whole time (planning/estimate.py), and what it counts."""
    low, high, worst = (round(s / 60, 1) for s in (e.low_s, e.high_s, e.worst_s))
    text = f"in all: about {low:g} min" if high - low < 0.1 else f"in all: about {low:g}–{high:g} min"
    if worst > 1.2 * high:
        text += f" (up to {worst:g} min if every window stretches as a slow page's does)"
    return text + (f": {', '.join(parts)}" if parts else "")


def budget_line(plan: Plan, least_s: float) -> str:
    """A budget its own minimum repetitions overrun: said plainly, since the run measures them
    anyway."""
    return (f"budget: the budget ({plan.budget_s:g} s) cannot hold this plan — its {plan.min_repetitions} "
            f"repetitions every comparison needs take about {least_s / 60:.0f} min, and are measured whatever "
            "the budget; it bounds only the repetitions after them (ask fewer cells, or a budget of "
            f"{least_s / 60:.0f} min or more)")


def clients_line(plan: Plan) -> str:
    n = len(plan.hosts.clients)
    ssh = " (SSH hosts are connected, sent the engine and their clocks probed when the run starts)" \
        if plan.hosts.remote else ""
    return f"clients: {'; '.join(c.label for c in plan.hosts.clients)} — each load spread over the {n}{ssh}"


def machine_line(profile: MachineProfile, pins: Pinning) -> str:
    return (f"machine: {profile.describe()}; the stack on cores {pins.server_cpus}, the load engine on "
            f"{pins.engine_cpus} — OOM kills and memory-limit hits are recorded per cell")


def idle_line(asked: str, engine_here: bool = True) -> str:
    """`engine_here`: the load engine runs here, on cores of its own (what "auto" holds)."""
    if asked == "auto" and not engine_here:
        return ("idle cores: as the system has them (cpu_idle = \"auto\", the default: the load engine's cores are "
                "held polling only when it runs here on cores of its own; docs/guide/idle-cores.md)")
    if asked == "auto":
        return ("idle cores: the load engine's cores held polling, never halted, for the whole run where this machine "
                "allows it (root, cores of its own), so a server pays nothing to wake its client; the stack's as the "
                "system has them (cpu_idle = \"auto\", the default: docs/guide/idle-cores.md)")
    cores = "the load engine's cores" if asked == "poll-engine" else "every core"
    return (f"idle cores: {cores} held polling, never halted, for the whole run (cpu_idle = \"{asked}\"; on a VM it "
            "moves the stacks' figures, each its own way: docs/guide/idle-cores.md)")


def power_line(pp: power.PlanPower, plan: Plan, repetition_s: float, store: str) -> str:
    """Whether the plan's repetitions can give verdicts: a DETECT difference found 4 times
    in 5 among the plan's comparisons at this machine's noise, or the repetitions that
    would (`repetition_s`: one whole repetition's expected time)."""
    k = pp.family
    comps = f"{k} comparison{'s' if k != 1 else ''} per metric{', Holm-adjusted' if k > 1 else ''}"
    runs = f"{'up to ' if plan.adaptive else ''}{pp.runs} run{'s' if pp.runs != 1 else ''} a side"
    key = "max_repetitions" if plan.adaptive else "repetitions"
    if plan.load.kind == "capacity" and pp.too_few:
        # analysis/capacity_results.decide: with fewer searches a side than a comparison
        # needs, the stacks' fitted edges are compared on their probes
        return (f"verdicts: {comps}; {runs}: the stacks' capacities compared on their probes (a likelihood-ratio "
                f"test of the fitted edges); {key} = {MIN_RUNS} or more compares the searches' edges instead")
    if pp.too_few:
        return (f"verdicts: {comps}; {runs} can give no verdict (a comparison needs {MIN_RUNS} valid runs a side): "
                f"use {key} = {MIN_RUNS} or more")
    where = (f"the median of {pp.measured.groups} stack × question groups in {store}" if pp.measured else
             f"as measured on the 2-core VMs this lab was built on; {store} has no repeated runs yet")
    noise = f"this machine's noise (throughput CV ~{pp.cv:.0%}: {where})"
    detect = f"a {power.DETECT:.0%} difference"
    if pp.enough:
        return f"verdicts: {comps}; {runs} find {detect} {pp.power:.0%} of the time at {noise}"
    s = pp.smallest
    finds = (f"a {1 + s:.2g}× one (+{s:.0%} / −{1 - 1 / (1 + s):.0%}) 4 times in 5" if s is not None
             else "not even a 100-fold one 4 times in 5")
    if pp.needed is None:
        advice = f"{detect} needs more than {power.MAX_RUNS} runs a side: ask fewer questions, or quieten the machine"
    else:
        advice = f"use {key} = {pp.needed} (about {repetition_s * pp.needed / 60:.0f} min) to find it 4 times in 5"
    return f"verdicts: {comps}; at {noise} {runs} find {detect} {pp.power:.0%} of the time, {finds}: {advice}"

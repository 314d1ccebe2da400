"""Plans: what to measure. A TOML file names stacks (with knobs), workloads, concurrency
levels, keep-alive modes and timing; `expand` turns it into the ordered list of cells.

Errors name the file and the key, and suggest the nearest valid word.
"""

from __future__ import annotations

import difflib
import random
import tomllib
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from stackbench import workloads
from stackbench.planning import loads, machine as machine_mod, protocols as protocols_mod, sizing as sizing_mod
from stackbench.planning import steady as steady_mod, visits as visits_mod, window as window_mod
from stackbench.analysis.stats import DEFAULT_EQUIVALENCE, MIN_RUNS
from stackbench.errors import PlanError, UsageError
from stackbench.stacks import registry
from stackbench.units import parse_duration_s, parse_share
from stackbench.upkeep import idle
from stackbench.workloads import app as app_workload
from stackbench.analysis.capacity import MAX_PROBES
from stackbench.planning.loads import LoadModel
from stackbench.network import profiles as network_profiles, visitors as visitor_classes
from stackbench.network.profiles import LOOPBACK, Profile
from stackbench.network.visitors import VisitorClass
from stackbench.planning import hosts as hosts_mod
from stackbench.workloads.base import Workload

TOP_KEYS = {"name", "duration", "requests", "warmup", "concurrency", "keepalive", "workloads",
            "stacks", "repetitions", "order", "seed", "threads", "timeout",
            "sample_interval", "syscalls", "syscall_profile", "restart",
            "baseline", "min_repetitions", "max_repetitions", "target_ci", "equivalence", "scenario", "app",
            "load", "rate", "stages", "ramp", "connections", "slo", "search",
            "network", "networks", "visitors", "background", "server_tcp_wmem", "machine", "hosts",
            "protocol", "tls", "streams", "cpu_idle", "budget", "tune", "sizing", "steady", "visit"}
TUNE_KEYS = {"concurrency", "repetitions", "rate", "workload"}
SCENARIO_KEYS = {"question", "look_at", "claim", "seed", "requires", "quick", "variants", "knobs"}  # seed: claim's older name
RESTARTS = ("cell", "stack")
DEFAULT_WORKLOADS = ("static-12b", "php-hello", "php-100k")  # the seed comparisons
MAX_SECONDS = 3600  # the longest duration or warm-up of one cell, like a stage's
PROBE_BUDGETS = loads.PROBE_BUDGETS  # a capacity probe: at least this many SLO latencies long
START_STOP_S = 0.7  # start + verify + stop of a stack per cell, with perf's teardown
STACK_KEYS = {"id", "label", "knobs", "port"}
TUNED = "tuned"  # knobs = "tuned": the stack's pool sized for the plan's machine and question (runner/tune.py)
# What a workload needs that a stack may lack (Workload.needs, Stack.offers), in words.
NEEDS_WORDS = {"php": "PHP", "front_controller": "rewrite rules for a front controller"}


@dataclass(frozen=True)
class StackVariant:
    """A stack family with knob values: one column of the comparison."""

    id: str
    label: str
    knobs: dict[str, Any]  # only what the plan set; defaults are resolved by the stack
    port: int | None = None
    # knobs = "tuned": the pool is sized for the plan's machine and question before the
    # run (runner/tune.py resolve); then `tuning` names the stored tuning it took
    tuned: bool = False
    tuning: int | None = None


@dataclass(frozen=True)
class Plan:
    name: str
    stacks: list[StackVariant]
    workloads: list[str]
    load: LoadModel
    keepalive: list[bool]
    duration_s: float | None = 2.0
    requests: int | None = None
    warmup_s: float = 0.5
    # `steady`: each stack start's first cell warmed until its throughput is steady, within
    # a cap (planning/steady.py), instead of for warmup_s; its later cells for warmup_s.
    steady: steady_mod.Steady | None = None
    timeout_s: float = 10.0
    repetitions: int = 1
    seed: int = 1
    threads: int | None = None  # engine threads; None = one per engine core
    sample_interval_s: float = 0.1  # how often the stack's cgroup is sampled
    syscalls: bool = True  # count system calls with perf (when available)
    syscall_profile_s: float = 1.0  # length of the separate pass in which they are counted
    # "cell": every cell on a freshly started stack, so no cell inherits the processes an
    # earlier one made grow; "stack": one start per stack and repetition, cells in a row
    # (a ramp: what a lazily growing pool looks like on the way up and down; a walk —
    # ramp, stages, capacity search — gets a start of its own).
    restart: str = "cell"
    # Verdicts: every stack against this one (a stack label); None = no verdicts.
    baseline: str | None = None
    # repetitions = "auto": interleave whole repetitions until every compared pair's CI
    # is narrower than ±target_ci, at least min_repetitions, at most max_repetitions.
    adaptive: bool = False
    min_repetitions: int = 5
    max_repetitions: int = 15
    target_ci: float = 0.03
    # repetitions = "auto" with a time budget (the `budget` key; every scenario's quick
    # form): no repetition is begun that would end past it, and the repetitions stop as
    # soon as every throughput comparison has a verdict (runner/repetitions.py).
    budget_s: float | None = None
    equivalence: float = DEFAULT_EQUIVALENCE  # a difference inside ±this is "equivalent" (practically none)
    scenario: dict[str, Any] | None = None  # the [scenario] table of a named scenario
    app: dict[str, Any] | None = None  # the [app] table: the user's own application
    # Where the visitors are (network profiles, swept in this order) and who else loads
    # the stack while they are measured (visitor classes; "none" = nobody).
    networks: list[Profile] = field(default_factory=lambda: [network_profiles.BUILTIN[LOOPBACK]])
    visitors: dict[str, VisitorClass] = field(default_factory=dict)
    background: list[str] = field(default_factory=lambda: [visitor_classes.NONE])
    server_tcp_wmem: str | None = None  # the server namespace's net.ipv4.tcp_wmem
    links: dict[str, Profile] = field(default_factory=lambda: {LOOPBACK: network_profiles.BUILTIN[LOOPBACK]})  # every profile used
    # A small machine emulated with cgroup limits (machine.py); None = the lab's machine.
    machine: machine_mod.MachineProfile | None = None
    # Where the load's clients run: here (the default), in the lab's client namespace, or
    # on other hosts over SSH (planning/hosts.py).
    hosts: hosts_mod.Hosts = field(default_factory=hosts_mod.Hosts)
    # What the visitors speak (planning/protocols.py): clear HTTP/1.1 by default; TLS
    # cells take a handshake mode in place of keep-alive.
    protocols: protocols_mod.Protocols = field(default_factory=protocols_mod.Protocols)
    # Idle cores during the run (upkeep/idle.py): "auto" (the default: the load engine's
    # held out of halt where the machine allows it), "as-is", "poll" (all held out of
    # halt) or "poll-engine" (the engine's, or refuse); on a VM each moves the figures.
    cpu_idle: str = idle.DEFAULT
    # `tune = { concurrency, repetitions }`: the level a tuned stack is tuned for (None: the
    # plan's largest) and the runs of each candidate (runner/tune.py question_for).
    tune_concurrency: int | None = None
    tune_repetitions: int = 3
    # `tune = { rate }`: tuned stacks tuned for an open loop at this rate instead (a
    # sizing's size plans: planning/sizing.py)
    tune_rate: float | None = None
    # `tune = { workload }`: the workload tuned stacks are tuned on (None: the plan's one) —
    # the traffic a site sees, e.g. a mix with slow requests, while the plan measures its own
    tune_workload: str | None = None
    # `[sizing]`: the machine to buy — this plan is asked of each size (runner/sizing.py)
    sizing: sizing_mod.SizingQuestion | None = None
    # `[visit]`: the load is of visits (planning/visits.py): `concurrency` counts visitors,
    # `rate` visits a second; its logged-in shares are swept like keep-alive
    visit: visits_mod.Visit | None = None
    # A level's modes alternate their order across repetitions (expand); "as-written":
    # the plan's order in every repetition — how runs stored before that were numbered,
    # so a resumed one finds its cells under the seqs they had. Not a plan key.
    mode_order: str = "alternate"
    source: str = "<built-in>"
    raw: dict[str, Any] = field(default_factory=dict)

    def modes(self) -> list[tuple[str, str | None, bool]]:
        """(protocol, handshake, keep-alive) of each question, in run order."""
        return self.protocols.modes(self.keepalive)

    def profile(self, name: str) -> Profile:
        return self.links[name]

    @property
    def namespaced(self) -> bool:
        return any(p.namespaced for p in self.networks)

    @property
    def concurrency(self) -> list[int]:
        """Closed loop's levels (the `concurrency` key)."""
        return list(self.load.concurrency)

    def cell_seconds(self, cell: "Cell | None" = None, fresh: bool = True) -> float:
        """About how long one cell takes: warm-up, load, profile pass, and starting,
        verifying and stopping a fresh stack (~0.7 s here, perf's teardown included;
        measured in bench/RESULTS.md, session 2). For `--dry-run` and the plans' tests.
        A capacity search takes at most its time budget. `fresh`: the cell is the first
        of its stack start (a steady warm-up begins from the cold stack)."""
        if cell is not None and cell.load == "capacity" and cell.rate is None:  # a whole search
            return self.load.search.budget_s + START_STOP_S
        duration = (cell.duration_s if cell is not None and cell.duration_s else None) or self.duration_s or 1.0
        return duration + self.warmup_seconds(cell, fresh) + self.syscall_profile_s + START_STOP_S

    def warmup_seconds(self, cell: "Cell | None" = None, fresh: bool = True, longest: bool = False) -> float:
        """A cell's warm-up: the plan's fixed one; the first cell of a stack start with
        `steady`, as long as its stack takes from a fresh start (Stack.steady_after_s,
        within the cap; at least a stack steady at once takes); `longest`: the cap."""
        rule = self.steady
        if rule is None or not fresh:
            return self.warmup_s
        if longest:
            return rule.cap_s
        least = steady_mod.least_s(rule.window_s)
        after = registry.get(cell.stack.id).steady_after_s if cell is not None else 0.0
        return min(rule.cap_s, max(least, after))

    def start_key(self, cell: "Cell") -> tuple:
        """Cells with the same key share one start of their stack: a walk (ramp, stages, a
        capacity search) has one of its own."""
        if self.restart == "cell":
            return (cell.seq,)
        if self.load.walk:
            return (cell.repetition, cell.stack.label, cell.network, cell.background, cell.workload, cell.keepalive,
                    cell.protocol, cell.handshake)
        return (cell.repetition, cell.stack.label, cell.network, cell.background)

    def fresh(self, cells: list["Cell"]) -> list[bool]:
        """Which of `cells` (in run order) is the first of its stack start."""
        keys = [self.start_key(c) for c in cells]
        return [i == 0 or k != keys[i - 1] for i, k in enumerate(keys)]

    def seconds(self, cells: list["Cell"]) -> float:
        return sum(self.cell_seconds(c, f) for c, f in zip(cells, self.fresh(cells)))

    def longest_seconds(self, cells: list["Cell"]) -> float:
        """`seconds` if every closed-loop window stretched as far as a slow page's may
        (planning/window.py cap_s: a count of responses, or the long window of a stack that
        left clients waiting) and every stack start's steady warm-up lasted to its cap — how
        long a plan of WordPress at many clients, or of stacks that never settle, may take."""
        total = 0.0
        for c, fresh in zip(cells, self.fresh(cells)):
            base = self.cell_seconds(c, fresh) - self.warmup_seconds(c, fresh) + self.warmup_seconds(c, fresh, True)
            if c.load == "closed" and self.requests is None and c.logged_in is None:  # visits keep their window
                d = c.duration_s or self.duration_s or 1.0
                base += window_mod.cap_s(d, self.timeout_s) - d
            total += base
        return total

    def workload(self, wid: str) -> Workload:
        """A workload of this plan: the registry's, or the user's application."""
        return app_workload.build(self.app, self.source) if wid == app_workload.ID else workloads.get(wid)

    def start_groups(self) -> list[list[str]]:
        """The plan's workloads as they can share a stack start: the generated documents
        together, each workload with a tree of its own (WordPress, the application) alone."""
        own = [w for w in self.workloads if self.workload(w).docroot]
        shared = [w for w in self.workloads if w not in own]
        return ([shared] if shared else []) + [[w] for w in own]

    def comparisons(self) -> int:
        """How many comparisons each metric's Holm family will hold, known before the first
        cell (analysis/verdicts.py adjusts them together): the questions the plan asks —
        workload, level, keep-alive, network, other visitors — times its stacks other than
        the baseline. 0 without a baseline (no verdicts)."""
        if not self.baseline:
            return 0
        asked = {(c.workload, c.concurrency, c.keepalive, c.rate, c.leg, c.network, c.background, c.protocol,
                  c.handshake, c.logged_in)
                 for c in expand(self) if c.repetition == 0}
        return len(asked) * (len(self.stacks) - 1)

    @property
    def runs_a_side(self) -> int:
        """The most valid runs a comparison can have a side: the repetitions, or the cap of
        repetitions = "auto"."""
        return self.max_repetitions if self.adaptive else self.repetitions

    def checked(self) -> dict[str, Any]:
        """The plan as it was understood, every default resolved: what the store keeps
        beside the source, so a stored run says exactly what was measured."""
        out = asdict(self)
        out.pop("raw")
        return out


@dataclass(frozen=True)
class Cell:
    """One measurement: a stack variant × workload × load level × keep-alive mode.
    Closed loop: `concurrency` connections. Open loop: `rate` requests/s over
    `concurrency` connections (sized by the lab). A capacity search is one Cell whose
    probes the runner makes as it goes (seq, seq + 1, … up to MAX_PROBES)."""

    seq: int
    repetition: int
    stack: StackVariant
    workload: str
    concurrency: int
    keepalive: bool
    load: str = "closed"
    rate: float | None = None
    leg: str | None = None  # "up" / "down" in an up-then-down ramp
    step: int | None = None  # position in a walk on one running stack (ramp, stages, search)
    duration_s: float | None = None  # a stage's own duration (None: the plan's)
    network: str = LOOPBACK  # the network profile between the measured visitors and the stack
    background: str = visitor_classes.NONE  # visitor classes loading the stack at the same time
    protocol: str = protocols_mod.CLEAR  # what the visitors speak (planning/protocols.py)
    handshake: str | None = None  # TLS: keep-alive | resumed | full (None: clear text)
    logged_in: float | None = None  # visits: the share of visitors who log in (None: not visits)

    @property
    def tls(self) -> bool:
        return protocols_mod.PROTOCOLS[self.protocol].tls

    def mode(self) -> str:
        """"keep-alive", "no keep-alive", "https full handshakes", "h2 keep-alive"."""
        return protocols_mod.mode_words(self.protocol, self.handshake, self.keepalive)

    def level(self) -> str:
        """The load level in words, e.g. "c=16", "500/s", "c=16 down"."""
        text = f"{self.rate:g}/s" if self.rate is not None else f"c={self.concurrency}"
        return (text + (f" {self.leg}" if self.leg else "") + (f" {self.network}" if self.network != LOOPBACK else "")
                + (f" +{self.background}" if self.background != visitor_classes.NONE else "")
                + (f" {visits_mod.share_words(self.logged_in)}" if self.logged_in is not None else ""))


def default_plan_text() -> str:
    return resources.files("stackbench.plans").joinpath("default.toml").read_text()


def load(path: str | Path | None) -> Plan:
    if path is None:
        return parse(tomllib.loads(default_plan_text()), "<default plan>")
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise PlanError(f"cannot read plan {p}: {e.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PlanError(f"{p}: not valid TOML: {e}") from None
    return parse(data, str(p))


def parse(data: dict[str, Any], source: str) -> Plan:
    def fail(msg: str) -> PlanError:
        return PlanError(f"{source}: {msg}")

    _reject_unknown(data, TOP_KEYS, source, "")
    if "sizing" in data:
        return _sizing_plan(data, source, fail)
    try:
        duration = parse_duration_s(data["duration"]) if "duration" in data else None
        warmup = parse_duration_s(data.get("warmup", 0.5))
        timeout = parse_duration_s(data.get("timeout", 10))
        sample_interval = parse_duration_s(data.get("sample_interval", 0.1))
        syscall_profile = parse_duration_s(data.get("syscall_profile", 1.0))
    except ValueError as e:
        raise fail(str(e)) from None
    if not 0.01 <= sample_interval <= 10:
        raise fail("sample_interval must be between 10ms and 10s")
    count_syscalls = data.get("syscalls", True)
    if not isinstance(count_syscalls, bool):
        raise fail(f"syscalls takes true or false, not {count_syscalls!r}")
    if count_syscalls and not 0.3 <= syscall_profile <= 60:
        raise fail("syscall_profile must be between 300ms (three perf intervals) and 60s")
    cpu_idle = data.get("cpu_idle", idle.DEFAULT)
    if cpu_idle not in idle.POLICIES:
        raise fail(f"cpu_idle takes {', '.join(repr(p) for p in idle.POLICIES)}, not {cpu_idle!r}")
    requests = data.get("requests")
    if requests is not None and (not isinstance(requests, int) or isinstance(requests, bool) or requests < 1):
        raise fail(f"requests must be a whole number >= 1, not {requests!r}")
    if duration is None and requests is None:
        duration = 2.0
    # Every load bounded in time: a typo such as "10h" for "10s" is refused, not run.
    if duration is not None and not 0 < duration <= MAX_SECONDS:
        raise fail("duration must be above 0 and at most 1h")
    if not 0 <= warmup <= MAX_SECONDS:
        raise fail("warmup must be between 0s and 1h")
    if not 0 < timeout <= 600:
        raise fail("timeout must be above 0 and at most 10m")

    steady = steady_mod.parse(data.get("steady"), fail)
    load, implied_restart = loads.parse(data, fail)
    if steady and (load.walk or load.kind == "capacity"):
        raise fail(f'steady warms each stack start until its throughput stops moving: a {load.kind} load '
                   "measures how a stack gets there — leave steady out (warmup is each step's)")
    if load.kind == "capacity" and requests is not None:
        raise fail('load = "capacity" probes for a duration: use duration, not requests')
    if load.kind == "capacity" and load.slo is not None and duration is not None:
        budget_s = load.slo.latency_budget_us / 1e6
        if duration < PROBE_BUDGETS * budget_s:
            raise fail(f"duration {duration:g}s is short against the SLO's {budget_s:g} s: a probe must last at "
                       f"least {PROBE_BUDGETS} of it ({PROBE_BUDGETS * budget_s:g}s), or a rate above the capacity "
                       "meets the SLO before its queue has grown past it (docs/guide/load-models.md)")
    keepalive = _list_of(data, "keepalive", bool, [True, False], fail)
    asked_protocols = protocols_mod.parse(data, fail)
    wl = _list_of(data, "workloads", str, list(DEFAULT_WORKLOADS), fail)
    app_table = data.get("app")
    resolved = {}
    for w in wl:
        try:
            resolved[w] = app_workload.build(app_table, source) if w == app_workload.ID else workloads.get(w)
        except UsageError as e:
            raise fail(e.message) if not isinstance(e, PlanError) else e from None
    if app_table is not None and app_workload.ID not in wl:
        raise fail("an [app] table is given but \"app\" is not in workloads")

    restart = data.get("restart", implied_restart or "cell")
    if restart not in RESTARTS:
        raise fail(f"restart must be one of {', '.join(RESTARTS)}, not {restart!r}")
    if load.kind in ("stages", "capacity") and restart != "stack":
        raise fail(f'load = "{load.kind}" runs on one stack start: leave restart out (or restart = "stack")')
    repetitions = data.get("repetitions", 1)
    adaptive = repetitions == "auto"
    min_reps = _whole(data, "min_repetitions", 5, fail)
    max_reps = _whole(data, "max_repetitions", 15, fail)
    if adaptive:
        if min_reps > max_reps:
            raise fail(f"min_repetitions ({min_reps}) is above max_repetitions ({max_reps})")
        if min_reps < MIN_RUNS:
            raise fail(f"min_repetitions must be at least {MIN_RUNS}: with fewer runs a side no verdict is possible")
        repetitions = max_reps
    elif not isinstance(repetitions, int) or isinstance(repetitions, bool) or repetitions < 1:
        raise fail(f"repetitions must be a whole number >= 1 or \"auto\", not {repetitions!r}")
    budget = None
    if "budget" in data:
        if not adaptive:
            raise fail('budget bounds repetitions = "auto": give repetitions = "auto" or leave budget out')
        try:
            budget = parse_duration_s(data["budget"])
        except ValueError as e:
            raise fail(str(e)) from None
        if not 0 < budget <= 24 * 3600:
            raise fail("budget must be above 0 and at most 24h")
    target_ci = _share(data, "target_ci", 0.03, fail)
    equivalence = _share(data, "equivalence", DEFAULT_EQUIVALENCE, fail)
    scenario = data.get("scenario")
    if scenario is not None:
        if not isinstance(scenario, dict):
            raise fail("scenario must be a table: [scenario] with question = \"...\"")
        _reject_unknown(scenario, SCENARIO_KEYS, source, "scenario.")
    if isinstance(data.get("machine"), dict):
        _reject_unknown(data["machine"], machine_mod.KEYS, source, "machine.")
    machine = machine_mod.parse(data.get("machine"), fail)
    threads = data.get("threads")
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise fail(f"threads must be a whole number >= 1, not {threads!r}")

    raw_stacks = data.get("stacks")
    if not raw_stacks or not isinstance(raw_stacks, list):
        raise fail("a plan needs at least one [[stacks]] entry with an id")
    variants = [_variant(entry, i, source) for i, entry in enumerate(raw_stacks)]
    for v in variants:
        stack = registry.get(v.id)
        _check_protocols(stack, v, asked_protocols, fail)
        for w in resolved.values():
            missing = w.needs() - stack.offers
            if missing:
                raise fail(f"stack {v.label!r} cannot serve workload {w.id!r}: it has no "
                           + " and no ".join(sorted(NEEDS_WORDS.get(m, m) for m in missing)))
    if restart == "stack" and not load.walk and len(wl) > 1 and any(w.docroot for w in resolved.values()):
        own = next(w.id for w in resolved.values() if w.docroot)
        raise fail(f"workload {own!r} serves a tree of its own, so it cannot share a stack start with "
                   'other workloads: use restart = "cell", or a plan per workload')
    tune = data.get("tune", {})
    if not isinstance(tune, dict):
        raise fail("tune must be a table, e.g. tune = { concurrency = 64, repetitions = 3 }")
    _reject_unknown(tune, TUNE_KEYS, source, "tune.")
    tune_concurrency, tune_repetitions = tune.get("concurrency"), tune.get("repetitions", 3)
    for key, value in (("concurrency", tune_concurrency), ("repetitions", tune_repetitions)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise fail(f"tune.{key} must be a whole number >= 1, not {value!r}")
    tune_rate = tune.get("rate")
    if tune_rate is not None and (not isinstance(tune_rate, (int, float)) or isinstance(tune_rate, bool)
                                  or not tune_rate > 0):
        raise fail(f"tune.rate must be a number of requests/s above 0, not {tune_rate!r}")
    tune_workload = tune.get("workload")
    if tune_workload is not None:
        if not isinstance(tune_workload, str) or tune_workload == app_workload.ID:
            raise fail(f"tune.workload names one of the lab's workloads, not {tune_workload!r}")
        try:
            workloads.get(tune_workload)  # a tuned stack has a pool of PHP workers: it serves any of them
        except UsageError as e:
            raise fail(f"tune.workload: {e.message}") from None
    if any(v.tuned for v in variants):
        by_rate = tune_rate is not None and load.kind in ("rate", "capacity")
        if len(wl) != 1 or not (load.kind == "closed" or by_rate):
            raise fail('knobs = "tuned" sizes a pool for one question: one workload, clients in a closed loop '
                       "(the largest concurrency level is the one tuned for), or an open loop at tune.rate")
    labels = [v.label for v in variants]
    dup = next((lbl for lbl in labels if labels.count(lbl) > 1), None)
    if dup:
        raise fail(f"two stacks have the label {dup!r}; give one a different `label` or different knobs")
    baseline = data.get("baseline")
    if baseline is not None and baseline not in labels:
        close = difflib.get_close_matches(str(baseline), labels, n=1)
        raise fail(f"baseline {baseline!r} is not one of the plan's stacks"
                   + (f" (did you mean {close[0]!r}?)" if close else f"; its stacks are: {', '.join(labels)}"))

    networks, known_networks = network_profiles.parse(data, fail)
    visitors, background = visitor_classes.parse(data, set(known_networks), fail)
    links = {p.name: p for p in networks} | {v.network: known_networks[v.network] for v in visitors.values() if v.network}
    if visitors and not all(p.namespaced for p in networks):
        raise fail("visitor classes need the stack in a namespace of its own: network cannot be \"loopback\" "
                   "(e.g. network = \"veth\")")
    if any(v.network == LOOPBACK for v in visitors.values()):
        raise fail("a visitor class cannot be on \"loopback\" while the stack is in a namespace")
    if steady and any(b != visitor_classes.NONE for b in background):
        raise fail("steady lasts as long as the stack takes, and visitors beside the measured ones last a fixed "
                   "time: leave steady out with background visitors")
    wmem = data.get("server_tcp_wmem")
    if wmem is not None:
        if not (isinstance(wmem, str) and len(wmem.split()) == 3 and all(x.isdigit() for x in wmem.split())):
            raise fail(f"server_tcp_wmem must be three numbers of bytes \"min default max\", not {wmem!r}")
        if not all(p.namespaced for p in networks):
            raise fail("server_tcp_wmem is set in the stack's own namespace: network cannot be \"loopback\"")

    hosts = hosts_mod.parse(data, source, fail)
    _check_hosts(hosts, networks, load, wl, fail)
    visit = visits_mod.parse(data.get("visit"), fail)
    if visit is not None:
        _check_visit(visit, resolved, load, requests, asked_protocols, hosts, background, steady, variants,
                     tune_rate is not None, fail)
    if asked_protocols.uses_tls and hosts.remote_server:
        raise fail("TLS cells are measured on a stack on this machine: a server on another host serves clear "
                   "HTTP/1.1 only (leave \"https\" and \"h2\" out of protocol)")
    if asked_protocols.uses_tls and (len(hosts.clients) > 1 or hosts.remote):
        # The engine pins the run's leaf, a file of the run directory here, and several
        # engines' handshake times are not merged yet (engine/merge.py).
        raise fail("TLS cells are loaded by one engine on this machine: leave hosts.client out (or one "
                   "\"local\" client), or \"https\" and \"h2\" out of protocol")

    return Plan(
        hosts=hosts, networks=networks, visitors=visitors, background=background, server_tcp_wmem=wmem, links=links,
        name=str(data.get("name", Path(source).stem)), stacks=variants, workloads=wl,
        load=load, keepalive=keepalive, duration_s=duration, requests=requests,
        warmup_s=warmup, steady=steady, timeout_s=timeout, repetitions=repetitions,
        seed=int(data.get("seed", 1)), threads=threads, sample_interval_s=sample_interval,
        syscalls=count_syscalls, syscall_profile_s=syscall_profile if count_syscalls else 0.0, restart=restart,
        baseline=baseline, adaptive=adaptive, min_repetitions=min_reps, max_repetitions=max_reps,
        target_ci=target_ci, budget_s=budget, equivalence=equivalence, scenario=scenario, app=app_table, source=source, raw=data,
        machine=machine, protocols=asked_protocols, cpu_idle=cpu_idle, tune_concurrency=tune_concurrency,
        tune_repetitions=tune_repetitions, tune_rate=float(tune_rate) if tune_rate is not None else None,
        tune_workload=tune_workload, visit=visit,
    )


def _check_visit(visit: visits_mod.Visit, resolved: dict[str, Workload], load: LoadModel, requests: int | None,
                 asked: protocols_mod.Protocols, hosts: hosts_mod.Hosts, background: list[str],
                 steady: steady_mod.Steady | None, variants: list[StackVariant], tuned_at_rate: bool,
                 fail: Callable[[str], PlanError]) -> None:
    """What visits cannot be asked with yet, each refused in one line."""
    if load.kind not in ("closed", "rate", "capacity"):
        raise fail(f'[visit] runs visitors in a closed loop, visits at a rate or a capacity in visits: load = '
                   f'"{load.kind}" is not measured in visits yet (load = "closed", "rate" or "capacity")')
    if load.kind == "capacity" and len(visit.logged_in) != 1:
        # One search a stack: its probes are pooled into one capacity (analysis/capacity_results.py).
        raise fail('[visit]: a capacity in visits is searched at one logged-in share: logged_in = "10%", not a list '
                   "of several")
    if requests is not None:
        raise fail("[visit] measures visits for a duration: use duration, not requests")
    if "h2" in asked.names:
        raise fail('[visit]: the load engine makes visits over HTTP/1.1 (clear or https): leave "h2" out of protocol')
    if len(hosts.clients) > 1 or hosts.remote:
        raise fail("[visit]: visits are made by the engines on this machine (a visitor's logins file is here): "
                   "leave hosts.client out")
    if any(b != visitor_classes.NONE for b in background):
        raise fail("[visit]: visitor classes beside visits are not measured yet: leave background out")
    if steady is not None:
        raise fail("[visit]: a visit's windows are not judged steady yet: leave steady out (warmup is each cell's)")
    if any(v.tuned for v in variants) and not tuned_at_rate:
        # A sizing in visits tunes at the PHP requests its visits make (planning/sizing.py tune_rate).
        raise fail('[visit]: a pool is tuned on requests, not visits: give the stacks knobs, or tune.rate '
                   '(requests/s), not knobs = "tuned" alone')
    if visit.assets is True:
        bare = [w.id for w in resolved.values() if not w.assets]
        if bare:
            raise fail(f"visit.assets = true fetches the workload's page assets, and {bare[0]!r} has none: "
                       "list the assets' paths instead, e.g. assets = [\"/style.css\"]")
    if any(s > 0 for s in visit.logged_in):
        if hosts.remote_server:
            raise fail("visit.logged_in: a stack on another host keeps its readers' passwords there; logged-in "
                       "visits are made to a stack on this machine (leave hosts.server out, or logged_in = \"0%\")")
        anonymous = [w.id for w in resolved.values() if w.login is None]
        if anonymous:
            raise fail(f"visit.logged_in: workload {anonymous[0]!r} has no accounts to log in to "
                       "(WordPress has: wordpress-home, wordpress-mix); use logged_in = \"0%\"")


def _sizing_plan(data: dict[str, Any], source: str, fail: Callable[[str], PlanError]) -> Plan:
    """A plan with `[sizing]`: the plan of its first size, carrying the question; every
    size's plan parsed here too, so a size this plan cannot run on fails before anything
    starts (runner/sizing.py runs them)."""
    if "machine" in data:
        raise fail("a plan with [sizing] is asked of each of its sizes: leave machine out (sizing.sizes has them)")
    if data.get("load", "capacity") != "capacity":
        raise fail('a plan with [sizing] searches each size\'s capacity: leave load out (or load = "capacity")')
    if "slo" not in data:
        raise fail('a plan with [sizing] needs an slo: what serving the target means, e.g. slo = { p99 = "1s" }')
    visit = visits_mod.parse(data.get("visit"), fail)
    q = sizing_mod.parse(data["sizing"], fail, visits_asked=visit is not None)
    assert q is not None
    if visit is not None and q.target.visits_per_day is not None:
        q = replace(q, target=replace(q.target, visit=_visit_model(data, visit, fail)))
    plans = [parse(sizing_mod.size_plan(data, q, s), source) for s in q.sizes]
    return replace(plans[0], sizing=q, raw=data, name=str(data.get("name", Path(source).stem)))


def _visit_model(data: dict[str, Any], visit: visits_mod.Visit,
                 fail: Callable[[str], PlanError]) -> sizing_mod.VisitModel:
    """The visit model of a sizing in visits: its one workload's visit at its one share."""
    wl = data.get("workloads") or []
    if len(wl) != 1:
        raise fail("a sizing in visits sizes one site: give one workload (the visit's pages are on it)")
    if len(visit.logged_in) != 1:
        raise fail('a sizing in visits is asked at one logged-in share: logged_in = "10%", not a list')
    assets = tuple(u.path for u in workloads.get(wl[0]).assets) if wl[0] in workloads.IDS else ()
    return sizing_mod.visit_model(visit, assets)


def _check_protocols(stack: Any, variant: StackVariant, asked: protocols_mod.Protocols,
                     fail: Callable[[str], Exception]) -> None:
    """A protocol the stack cannot be asked for is refused before anything starts.
    (HTTP/2 asked of a stack that falls back to HTTP/1.1 — Apache prefork — is in its
    set: what it negotiates is a measured result.)"""
    wanted = [p for p in asked.names if p != protocols_mod.CLEAR]
    if not wanted:
        return
    offered = stack.protocols(stack.resolve_knobs(variant.knobs))
    missing = [p for p in wanted if p not in offered]
    if missing:
        p = protocols_mod.PROTOCOLS[missing[0]]
        raise fail(f"stack {variant.label!r} cannot serve protocol {p.name!r} ({p.words}); it serves "
                   + ", ".join(sorted(offered)))


def _check_hosts(hosts: hosts_mod.Hosts, networks: list[Profile], load: LoadModel, workload_ids: list[str],
                 fail: Callable[[str], Exception]) -> None:
    n = len(hosts.clients)
    if hosts.server.kind == "namespace" and not all(p.namespaced for p in networks):
        raise fail('hosts.server = "namespace" puts the stack in the server namespace of a network profile: network '
                   'cannot be "loopback" (e.g. network = "veth")')
    if hosts.remote_db and any(p.namespaced for p in networks):
        raise fail("a database on another host is reached over the real network: network must be \"loopback\" "
                   "(the stack's namespace reaches nothing outside this machine)")
    if hosts.remote_db and not any(workloads.get(w).services for w in workload_ids if w in workloads.IDS):
        raise fail("hosts.db names a host for the workloads' database, and none of the plan's workloads has one "
                   "(WordPress has: wordpress-home, wordpress-mix, wordpress-mix-slow)")
    if hosts.remote_server:
        if any(p.namespaced for p in networks):
            raise fail("a server on another host is reached over the real network: network must be \"loopback\" "
                       "(the network profiles shape links inside one machine)")
        if app_workload.ID in workload_ids:
            raise fail(f"workload {app_workload.ID!r} serves a tree on this machine: a server on another host "
                       "serves the lab's own workloads only (its documents, WordPress)")
    if hosts.remote and any(p.namespaced for p in networks):
        raise fail("clients on other hosts reach the stack over the real network: network must be \"loopback\" "
                   "(the network profiles shape links inside this machine)")
    if any(c.kind == "namespace" for c in hosts.clients) and not all(p.namespaced for p in networks):
        raise fail('a "namespace" client runs in the client namespace of the network profile: network cannot be '
                   '"loopback" (e.g. network = "veth")')
    if n > 1:
        if load.kind in ("stages", "capacity"):
            raise fail(f"load = \"{load.kind}\" runs on one client: leave hosts.client out, or use one client")
        if load.kind == "rate":
            small = [r for r in load.rates if load.connections_for(r) < n]
            if small:
                raise fail(f"rate {small[0]:g}/s is sized to {load.connections_for(small[0])} connection(s), fewer than "
                           f"the {n} clients: set connections = {n} or more")
        small = [c for c in load.concurrency if c < n] if load.kind == "closed" else []
        if small:
            raise fail(f"concurrency {small[0]} cannot be spread over {n} clients: every level needs at least {n}")


def expand(plan: Plan) -> list[Cell]:
    """Cells in run order. Repetitions are the outer loop, so stacks alternate A B A B
    across repetitions (drift then hits every stack alike). Within a stack, cells are
    consecutive, so with restart = "stack" the stack starts once per repetition; a
    level's modes run in the plan's order on even repetitions and reversed on odd ones.
    A walk (ramp, stages) is one mode's (protocol, keep-alive or handshake) steps in a row; a capacity search is
    one placeholder cell that owns the next MAX_PROBES seqs for its probes.
    With repetitions = "auto" this is every repetition up to the cap; the runner stops
    early when the intervals are narrow enough. A cell's seq does not depend on how many
    repetitions run, so a resumed run numbers its cells as the first attempt did."""
    rng = random.Random(plan.seed)
    model = plan.load
    # Each question's protocol and connection mode: clear text per keep-alive mode, TLS per
    # handshake mode (which decides keep-alive), so no cell is asked twice.
    modes = plan.modes()
    cells: list[Cell] = []
    seq = 0
    for rep in range(plan.repetitions):
        # Counterbalanced: the modes in the plan's order on even repetitions, reversed on
        # odd ones. With restart = "stack" a later cell meets a server its earlier cells
        # warmed (the http2 quick form's prefork, whose h2 cell is HTTPS/1.1 as its other,
        # came out 17-20 % faster always running second); alternating, that favours
        # neither side of a protocol comparison. The levels keep their order (small-vps
        # climbs from 16 to 64 clients on one machine).
        rep_modes = modes[::-1] if rep % 2 and plan.mode_order == "alternate" else modes
        for variant, net, bg in ((v, n.name, b) for v in plan.stacks for n in plan.networks for b in plan.background):
            for wl in plan.workloads:
                if model.kind == "capacity":
                    for proto, hs, ka in rep_modes:
                        cells.append(Cell(seq, rep, variant, wl, 0, ka, load="capacity", network=net, background=bg,
                                          protocol=proto, handshake=hs,
                                          logged_in=plan.visit.logged_in[0] if plan.visit else None))
                        seq += MAX_PROBES
                    continue
                steps = list(enumerate(model.steps(rng)))
                pairs = ([(s, m) for m in rep_modes for s in steps] if model.walk
                         else [(s, m) for s in steps for m in rep_modes])
                shares: list[float | None] = list(plan.visit.logged_in) if plan.visit else [None]
                for (i, step), (proto, hs, ka) in pairs:
                    conc = step.concurrency if step.rate is None else model.connections_for(step.rate)
                    for share in shares:
                        cells.append(Cell(seq, rep, variant, wl, conc, ka, load=model.kind, rate=step.rate,
                                          leg=step.leg, step=i if model.walk else None, duration_s=step.duration_s,
                                          network=net, background=bg, protocol=proto, handshake=hs, logged_in=share))
                        seq += 1
    return cells


def _variant(entry: Any, index: int, source: str) -> StackVariant:
    where = f"{source}: stacks[{index}]"
    if not isinstance(entry, dict) or "id" not in entry:
        raise PlanError(f"{where}: each [[stacks]] entry needs an id")
    _reject_unknown(entry, STACK_KEYS, source, f"stacks[{index}].")
    try:
        stack = registry.get(entry["id"])
        knobs = entry.get("knobs", {})
        tuned = knobs == TUNED
        if tuned:
            if stack.pool is None:
                raise PlanError(f"knobs = \"tuned\": stack {stack.id!r} has no pool of PHP workers to size")
            knobs = {}
        if not isinstance(knobs, dict):
            raise PlanError("knobs must be a table, e.g. knobs = { pm = \"static\" }, or \"tuned\"")
        resolved = stack.resolve_knobs(knobs)
    except UsageError as e:
        raise PlanError(f"{where}: {e.message}", hint=e.hint) from None
    defaults = {k.name: k.default for k in stack.knobs}
    changed = [f"{k}={v}" for k, v in resolved.items() if v != defaults[k]]
    label = entry.get("label") or " ".join([stack.id] + changed)
    port = entry.get("port")
    if port is not None and (not isinstance(port, int) or not 1 <= port <= 65535):
        raise PlanError(f"{where}: port must be 1..65535, not {port!r}")
    return StackVariant(stack.id, str(label), dict(knobs), port, tuned)


def _whole(data: dict, key: str, default: int, fail) -> int:
    value = data.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise fail(f"{key} must be a whole number >= 1, not {value!r}")
    return value


def _share(data: dict, key: str, default: float, fail) -> float:
    """A relative width: 0.03 or "3%"."""
    try:
        return parse_share(data.get(key, default))
    except ValueError:
        raise fail(f"{key} takes a share such as 0.03 or \"3%\", not {data.get(key)!r}") from None


def _list_of(data: dict, key: str, kind: type, default: list, fail) -> list:
    value = data.get(key, default)
    if not isinstance(value, list):
        value = [value]
    if not value:
        raise fail(f"{key} must not be empty")
    for v in value:
        if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
            raise fail(f"{key} takes {kind.__name__} values, not {v!r}")
    return value


def _reject_unknown(data: dict, known: set[str], source: str, prefix: str) -> None:
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise PlanError(f"{source}: unknown key {prefix}{key!r}{hint}")

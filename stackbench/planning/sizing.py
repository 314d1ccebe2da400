"""The machine to buy: a plan's `[sizing]` table — a target (requests a second at peak,
hits — requests, page views and assets each one — a day with a peak factor, or visits a day
with the plan's [visit]: the rates then in visits a second, the pools tuned at the PHP
requests the visits make: docs/methods/sizing.md, "Visits a day"), the machine
sizes to try (CPUs × memory, a price a month if known), and optionally the yardstick of the
user's own core to say the answer in (`core`, docs/methods/sizing.md). A size is enough
when the capacity's 95 % interval lies above the target. The plan's own `slo`,
`search`, `workloads` and `stacks` say what "serves" means and who is sized; each size is
an ordinary capacity plan on that machine profile (runner/sizing.py), its tuned stacks tuned
for the target rate on it (`tune = { rate }`), and analysis/sizing.py picks the smallest
size that meets the target (docs/guide/sizing.md).

Parsing and the checks only: what runs is the runner's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from stackbench import units, workloads
from stackbench.model.sizing import VisitModel
from stackbench.planning import loads, machine as machine_mod, visits

KEYS = {"target", "sizes", "core", "until_enough"}
TARGET_KEYS = {"rate", "hits_per_day", "visits_per_day", "peak_factor"}
# What a visit costs in requests is the plan's visit model's to say ([visit]), not a number
# (the key of sizings stored before hits were named: model/sizing.py).
NOT_KEYS = {"requests_per_visit"}
SIZE_KEYS = machine_mod.KEYS | {"price", "label"}
DAY_S = 86_400
# The seeds' own reading of a day's traffic: its busiest hour carries several times the
# day's mean rate. The default when a target is in hits a day and names no peak factor.
DEFAULT_PEAK_FACTOR = 3.0

Fail = Callable[[str], Exception]


def visit_model(visit: visits.Visit, workload_assets: tuple[str, ...]) -> VisitModel:
    """The model of the plan's visit to its workload, at its one logged-in share."""
    share = visit.logged_in[0]
    assets = len(visit.asset_paths(workload_assets))
    return VisitModel(visit.pages_a_visit(), assets, visit.think.words(), share,
                      visit.hits_a_visit(assets, share), visit.php_a_visit(share))


@dataclass(frozen=True)
class Target:
    """The peak rate a machine must serve, and how it was asked: directly, as hits a day
    (rate = hits × peak factor / 86,400 s; a hit is one request: a page or one of its
    assets, as the seeds' "hits a day" table counts them), or as visits a day (rate in
    visits a second, each visit as the plan's [visit] says: `visit`)."""

    rate: float
    hits_per_day: float | None = None
    peak_factor: float = DEFAULT_PEAK_FACTOR
    visits_per_day: float | None = None
    visit: VisitModel | None = None  # set with visits_per_day, from the plan's [visit]

    @property
    def tune_rate(self) -> float:
        """The rate each stack's pool is tuned at: the target's requests a second, or for
        visits the PHP requests they make a second (docs/methods/sizing.md)."""
        return self.rate * self.visit.php if self.visit is not None else self.rate

    def hits(self, rate: float) -> float:
        """The hits a day a sustained peak `rate` carries, on this target's day."""
        return rate * DAY_S / self.peak_factor

    def describe(self) -> str:
        """"20 requests/s at peak", "500,000 hits a day (peak 3× the mean): 17.4
        requests/s at peak" or "20,000 visits a day (peak 3× the mean): 0.694 visits/s at peak"."""
        if self.visits_per_day is not None:
            return (f"{self.visits_per_day:,.0f} visits a day (peak {self.peak_factor:g}× the mean): "
                    f"{self.rate:.3g} visits/s at peak")
        peak = f"{self.rate:.3g} requests/s at peak"
        if self.hits_per_day is None:
            return peak
        return f"{self.hits_per_day:,.0f} hits a day (peak {self.peak_factor:g}× the mean): {peak}"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rate": self.rate, "hits_per_day": self.hits_per_day, "peak_factor": self.peak_factor}
        if self.visits_per_day is not None:
            out |= {"visits_per_day": self.visits_per_day, "visit": self.visit.as_dict() if self.visit else None}
        return out


@dataclass(frozen=True)
class Size:
    """One machine to try: its profile as a plan's `machine` table, a price a month, a name."""

    machine: dict[str, Any]
    profile: machine_mod.MachineProfile
    price: float | None = None
    label: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"machine": self.machine, "price": self.price, "label": self.label}


@dataclass(frozen=True)
class SizingQuestion:
    target: Target
    sizes: tuple[Size, ...]
    core: float | None = None  # the yardstick of the user's core, to say the answer in
    # Each stack's smallest enough size is searched for (`Bisection`: the middle size
    # first), not every size measured (what larger sizes carry is not): the quick form's.
    until_enough: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"target": self.target.as_dict(), "sizes": [s.as_dict() for s in self.sizes], "core": self.core,
                "until_enough": self.until_enough}


def first(n: int) -> int:
    """The size `until_enough` measures first of `n` (the plan's order): the middle one."""
    return (n - 1) // 2


class Bisection:
    """`until_enough`'s order of sizes: per stack, a binary search over the plan's sizes
    (smallest first) for the smallest enough one, assuming a larger size never carries less.
    It starts at the middle size; enough, it measures the next smaller half, else the next
    larger — so the size just below the answer is always measured (the borderline rule
    needs it: analysis/sizing.py) and 3 sizes take 2 a stack, not up to 3. Stacks that want
    the same size next are measured together; of different sizes, the smaller first."""

    def __init__(self, stacks: list[str], n: int) -> None:
        self.stacks = list(stacks)
        self.bounds = {st: [0, n - 1] for st in stacks}  # the answer lies in [lo, hi]; lo > hi: none
        self.measured: dict[str, set[int]] = {st: set() for st in stacks}

    def wants(self, stack: str) -> int | None:
        lo, hi = self.bounds[stack]
        if lo < hi:
            return (lo + hi) // 2
        return lo if lo == hi and lo not in self.measured[stack] else None

    def next(self) -> tuple[int, list[str]] | None:
        """The next size to measure and the stacks (in the plan's order) measured on it;
        None: every stack's search has ended."""
        wanted = {st: i for st in self.stacks if (i := self.wants(st)) is not None}
        if not wanted:
            return None
        i = min(wanted.values())
        return i, [st for st in self.stacks if wanted.get(st) == i]

    def record(self, index: int, stacks: list[str], enough: set[str]) -> None:
        """Size `index` measured for `stacks`, of which `enough` were enough on it."""
        for st in stacks:
            self.measured[st].add(index)
            if st in enough:
                self.bounds[st][1] = index
            else:
                self.bounds[st][0] = index + 1


def parse(value: Any, fail: Fail, visits_asked: bool = False) -> SizingQuestion | None:
    """The plan's `[sizing]` table (None: the plan has none). Each size is checked as a
    machine profile; what this machine can give is the runner's check, size by size.
    `visits_asked`: the plan has a [visit], which a target in visits needs (its model is
    set by the plan's parser, which knows the workload: `visit_model`)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail("sizing must be a table: [sizing] with target and sizes")
    unknown = sorted(set(value) - KEYS)
    if unknown:
        raise fail(f"unknown key sizing.{unknown[0]!r} (it takes {', '.join(sorted(KEYS))})")
    if "target" not in value or "sizes" not in value:
        raise fail("sizing needs a target (e.g. target = { rate = 20 }) and sizes "
                   "(e.g. sizes = [{ cpus = 0.5, memory = \"512M\" }, { cpus = 1, memory = \"1G\" }])")
    core = value.get("core")
    if core is not None and (not _number(core) or not core > 0):
        raise fail(f"sizing.core is the yardstick of your core (`stackbench yardstick` there), a number above 0, "
                   f"not {core!r}")
    until = value.get("until_enough", False)
    if not isinstance(until, bool):
        raise fail(f"sizing.until_enough is true or false, not {until!r}")
    return SizingQuestion(_target(value["target"], fail, visits_asked), _sizes(value["sizes"], fail),
                          float(core) if core is not None else None, until)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _target(t: Any, fail: Fail, visits_asked: bool = False) -> Target:
    if not isinstance(t, dict):
        raise fail("sizing.target must be a table: { rate = 20 }, { hits_per_day = 500000, peak_factor = 3 } "
                   "or { visits_per_day = 20000, peak_factor = 3 }")
    refused = sorted(set(t) & NOT_KEYS)
    if refused:
        raise fail(f"sizing.target.{refused[0]}: what a visit costs is the plan's [visit] (its pages, assets, "
                   "think time, logged-in share); give visits_per_day with a [visit], or hits_per_day")
    unknown = sorted(set(t) - TARGET_KEYS)
    if unknown:
        raise fail(f"unknown key sizing.target.{unknown[0]!r} (it takes {', '.join(sorted(TARGET_KEYS))})")
    for key in TARGET_KEYS & set(t):
        if not _number(t[key]) or not t[key] > 0:
            raise fail(f"sizing.target.{key} must be a number above 0, not {t[key]!r}")
    asked = [k for k in ("rate", "hits_per_day", "visits_per_day") if k in t]
    if len(asked) != 1:
        raise fail("sizing.target takes one of rate (requests/s at peak), hits_per_day (requests a day) or "
                   "visits_per_day (visits a day, with the plan's [visit])"
                   + (f", not {' and '.join(asked)}" if asked else ""))
    if "visits_per_day" in t and not visits_asked:
        raise fail("sizing.target.visits_per_day needs the plan's [visit]: what a visit is (pages, assets, think "
                   "time, logged-in share), e.g. [visit] pages = [\"/\", \"/?p=1\"]; or give hits_per_day")
    peak = float(t.get("peak_factor", DEFAULT_PEAK_FACTOR))
    if "rate" in t:
        if "peak_factor" in t:
            raise fail("sizing.target: peak_factor turns hits_per_day into a rate; with rate it means nothing")
        return Target(float(t["rate"]))
    if peak < 1:
        raise fail(f"sizing.target.peak_factor is the busiest hour's rate over the day's mean: at least 1, not {peak:g}")
    if "visits_per_day" in t:
        visits_n = float(t["visits_per_day"])
        return Target(visits_n * peak / DAY_S, None, peak, visits_n)
    hits = float(t["hits_per_day"])
    return Target(hits * peak / DAY_S, hits, peak)


def _sizes(sizes: Any, fail: Fail) -> tuple[Size, ...]:
    if not isinstance(sizes, list) or not sizes:
        raise fail('sizing.sizes must be a list of machines, e.g. [{ cpus = 0.5, memory = "512M" }]')
    out = []
    for i, s in enumerate(sizes):
        where = f"sizing.sizes[{i}]"
        if not isinstance(s, dict):
            raise fail(f"{where} must be a table such as {{ cpus = 1, memory = \"1G\" }}")
        unknown = sorted(set(s) - SIZE_KEYS)
        if unknown:
            raise fail(f"unknown key {where}.{unknown[0]!r} (it takes {', '.join(sorted(SIZE_KEYS))})")
        if "cpus" not in s or "memory" not in s:
            raise fail(f"{where} needs cpus and memory: a machine to buy has both")
        table = {k: s[k] for k in machine_mod.KEYS if k in s}
        profile = machine_mod.parse(table, lambda m: fail(f"{where}: {m}"))
        if profile is None:
            raise fail(f"{where} needs cpus and memory")
        price = s.get("price")
        if price is not None and (not _number(price) or price < 0):
            raise fail(f"{where}.price is a price a month, a number >= 0, not {price!r}")
        label = s.get("label", _name(profile))
        if not isinstance(label, str) or not label:
            raise fail(f"{where}.label must be a non-empty string")
        out.append(Size(table, profile, float(price) if price is not None else None, label))
    labels = [s.label for s in out]
    dup = next((lbl for lbl in labels if labels.count(lbl) > 1), None)
    if dup:
        raise fail(f"two sizes are both {dup!r}: give one a label")
    return tuple(out)


def _name(p: machine_mod.MachineProfile) -> str:
    """"0.5 CPU, 512 MiB": a size as a table's column names it."""
    cpus = f"{p.cpus:g} CPU{'s' if p.cpus > 1 else ''}" if p.cpus is not None else "?"
    return f"{cpus}, {machine_mod.format_size(p.memory_bytes)}" if p.memory_bytes else cpus


def size_plan(raw: dict[str, Any], q: SizingQuestion, size: Size, tune_repetitions: int | None = None,
              stacks: list[str] | None = None) -> dict[str, Any]:
    """The capacity plan of one size: the plan's own keys on that machine, without the
    sizing table, its search starting at the target (the bracket then forms around the
    question's rate) and its tuned stacks tuned for the target on that machine; `stacks`:
    only these (the plan's labels; `until_enough` leaves out the stacks already enough)."""
    data = {k: v for k, v in raw.items() if k != "sizing"}
    if stacks is not None:
        data["stacks"] = [st for st in raw.get("stacks", []) if st.get("label", st.get("id")) in stacks]
        if data.get("baseline") not in stacks:
            data.pop("baseline", None)
    data["machine"] = dict(size.machine)
    data["name"] = f"{raw.get('name', 'sizing')}: {size.label}"
    data["load"] = "capacity"
    search = dict(data.get("search") or {})
    search.setdefault("start", q.target.rate)
    if q.target.visit is not None:
        # A site's visits a second are few (20,000 a day at peak 3× is 0.69/s): the search
        # may go below the requests' floor of 1/s.
        search.setdefault("min", round(min(1.0, q.target.rate / 8), 3))
    data["search"] = search
    tune = dict(data.get("tune") or {})
    tune["rate"] = q.target.tune_rate
    if tune_repetitions is not None:
        tune.setdefault("repetitions", tune_repetitions)
    data["tune"] = tune
    return data


def asked(base: dict[str, Any], stacks: list[str], workload: str, target: dict[str, Any],
          slo: dict[str, Any] | None = None, sizes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`stackbench size`'s plan: a sizing plan (`base`, the sizing scenario's) asked of other
    stacks, a workload, a target, and optionally an SLO and sizes of the user's. The stacks are
    tuned for the target on each size, the first the baseline of the comparisons. A longer SLO
    lengthens each probe to loads.PROBE_BUDGETS of it (shorter would read rates
    above the capacity as met), its search's budget with it (the same number of probes), and
    the clients' timeout to twice it."""
    data = {k: v for k, v in base.items() if k not in ("scenario", "stacks", "baseline", "sizing")}
    data["name"] = f"size {' '.join(stacks)} for {workload}"
    data["workloads"] = [workload]
    data["stacks"] = [{"id": s, "label": s, "knobs": "tuned"} for s in stacks]
    if len(stacks) > 1:
        data["baseline"] = stacks[0]
    if slo is not None:
        data["slo"] = slo
        latency_s = loads.parse_slo(slo, lambda m: ValueError(m)).latency_budget_us / 1e6
        duration_s = units.parse_duration_s(str(data.get("duration", "2s")))
        longer = max(duration_s, loads.PROBE_BUDGETS * latency_s)
        if longer > duration_s:
            data["duration"] = f"{longer:g}s"
            search = dict(data.get("search") or {})
            if "budget" in search:
                search["budget"] = f"{units.parse_duration_s(str(search['budget'])) * longer / duration_s:g}s"
            data["search"] = search
        timeout_s = units.parse_duration_s(str(data.get("timeout", "10s")))
        data["timeout"] = f"{max(timeout_s, 2 * latency_s):g}s"
    # the reference's order of sizes too: its quick form searches for the smallest enough one
    order = {k: v for k, v in base["sizing"].items() if k == "until_enough"}
    data["sizing"] = {"target": target, "sizes": sizes if sizes is not None else base["sizing"]["sizes"], **order}
    return data


def tune_workload(workload: str, asked: str | None, base: dict[str, Any]) -> str | None:
    """The workload each stack's pool is tuned on (None: the page itself): `--tune-workload`,
    else the reference plan's (the WordPress mix with slow requests) where the page is on
    the same site — a slow request holds a pool the same way whatever page is measured —
    else the page."""
    if asked is not None:
        workloads.get(asked)  # an unknown workload: one line naming the known ones
        return None if asked == workload else asked
    theirs = (base.get("tune") or {}).get("workload")
    if theirs is None:
        return None
    return theirs if same_site(workload, theirs) and theirs != workload else None


def same_site(workload: str, other: str) -> bool:
    """Two of the lab's workloads served from one site: a tree of its own, the same one
    (WordPress's pages)."""
    mine, site = workloads.get(workload), workloads.get(other)
    return mine.docroot is not None and mine.docroot is site.docroot

"""Load models of a plan: how the engine is driven in each cell.

- `closed` (default): `concurrency = [...]` connections, each sending its next request
  when the previous answer is in (ab, wrk).
- `rate`: open loop, `rate = [...]` requests/s; latency from the intended send time, so
  a stalled server cannot hide the requests it prevented (coordinated omission). The lab
  sizes the engine's connections (`connections` overrides) and the engine counts the
  requests it could not send in time.
- `stages`: a list of steps `{ duration, concurrency | rate }` on one running stack.
- `capacity`: the rate at which the stack meets `slo` half the time (its edge, with a
  95 % interval), found by a search (analysis/capacity.py) and fitted to its probes
  (analysis/capacity_edge.py), bounded by `search.budget`.

`ramp` orders a closed or open loop's levels — up, down, up then down, shuffled — and
makes one stack live through the whole ramp (restart = "stack" unless the plan says
otherwise). Parsing only: the runner turns steps into cells.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from stackbench.analysis.capacity import PERCENTILES, SLO, SearchParams, open_loop_connections
from stackbench.units import parse_duration_s, parse_share

# A capacity probe lasts at least this many of the SLO's latency budgets: at a rate r above
# the sustained capacity c the queue grows by r − c a second, so the newest request of a
# probe of T seconds waits (r − c)·T/c — a probe reads rates up to c·(1 + budget/T) as
# met. Five budgets bound that to +20 % (bench/RESULTS.md, "The machine to buy").
PROBE_BUDGETS = 5
LOADS = ("closed", "rate", "stages", "capacity")
RAMPS = ("up", "down", "updown", "shuffled")
LEGACY_ORDER = {"ascending": "up", "descending": "down", "shuffled": "shuffled"}  # the older `order` key
SLO_COUNTS = ("errors", "unserved")
SEARCH_KEYS = {"start", "factor", "precision", "confirm", "max", "min", "budget", "edge"}
STAGE_KEYS = {"duration", "concurrency", "rate"}
MAX_CONNECTIONS = 100_000
MAX_RATE = 1_000_000.0
# Open loop: the latency the engine's connections are sized for when no SLO says
# otherwise (analysis/capacity.open_loop_connections): rate × 2 × this.
OPEN_LOOP_LATENCY_S = 0.05

Fail = Callable[[str], Exception]


@dataclass(frozen=True)
class Step:
    """One load level: closed loop with `concurrency` connections, or open loop at
    `rate` requests/s. `leg` is "up" or "down" in an up-then-down ramp (the same level
    is asked twice, and the answers must stay apart); `duration_s` is a stage's own."""

    concurrency: int | None = None
    rate: float | None = None
    duration_s: float | None = None
    leg: str | None = None


@dataclass(frozen=True)
class LoadModel:
    kind: str = "closed"
    concurrency: tuple[int, ...] = (1, 16, 64)
    rates: tuple[float, ...] = ()
    stages: tuple[Step, ...] = ()
    ramp: str = "up"
    connections: int | None = None  # open loop: the engine's connections (None: sized by the lab)
    slo: SLO | None = None
    search: SearchParams | None = None
    # The levels are a walk on one running stack (a ramp, stages, a capacity search):
    # each walk gets its own stack start, and its steps follow each other on it.
    walk: bool = False

    @property
    def open_loop(self) -> bool:
        return self.kind in ("rate", "capacity") or any(s.rate is not None for s in self.stages)

    def steps(self, rng: random.Random) -> list[Step]:
        """The levels one stack start walks through, in order (capacity: none — the
        search decides them while it runs)."""
        if self.kind == "stages":
            return list(self.stages)
        if self.kind == "capacity":
            return []
        if self.kind == "rate":
            levels: list = sorted(self.rates)
            make = lambda v, leg=None: Step(rate=v, leg=leg)  # noqa: E731
        else:
            levels = sorted(self.concurrency)
            make = lambda v, leg=None: Step(concurrency=v, leg=leg)  # noqa: E731
        if self.ramp == "down":
            levels.reverse()
        elif self.ramp == "shuffled":
            rng.shuffle(levels)
        elif self.ramp == "updown":
            # Up, then down without asking the peak twice: 1 16 64 256 64 16 1.
            return [make(v, "up") for v in levels] + [make(v, "down") for v in reversed(levels[:-1])]
        return [make(v) for v in levels]

    def connections_for(self, rate: float) -> int:
        """The engine's connections for an open loop at `rate`."""
        if self.connections is not None:
            return self.connections
        budget_s = self.slo.latency_budget_us / 1e6 if self.slo else OPEN_LOOP_LATENCY_S
        return open_loop_connections(rate, budget_s)

    def max_connections(self) -> int:
        """The most connections any step asks of the engine (for the descriptor and port
        checks before a run). Capacity: at the search's ceiling."""
        if self.kind == "closed":
            return max(self.concurrency)
        if self.kind == "rate":
            return max(self.connections_for(r) for r in self.rates)
        if self.kind == "stages":
            return max(s.concurrency if s.concurrency is not None else self.connections_for(s.rate)
                       for s in self.stages)
        return self.connections_for(self.search.ceiling)


def parse(data: dict[str, Any], fail: Fail) -> tuple[LoadModel, str | None]:
    """The plan's load keys → a LoadModel, and the restart policy the load model implies
    when the plan sets none (None: the plan's default)."""
    kind = data.get("load", "closed")
    if kind not in LOADS:
        raise fail(f"load must be one of {', '.join(LOADS)}, not {kind!r}")
    for key, only in (("rate", ("rate",)), ("stages", ("stages",)), ("slo", ("capacity",)),
                      ("search", ("capacity",)), ("connections", ("rate", "capacity", "stages"))):
        if key in data and kind not in only:
            raise fail(f"{key} is read only with load = {' or '.join(repr(o) for o in only)} (this plan's load is {kind!r})")
    if "concurrency" in data and kind != "closed":
        raise fail(f"concurrency is for load = \"closed\"; with load = {kind!r} "
                   + ("each stage names its own" if kind == "stages" else
                      "the lab sizes the engine's connections from the rate (set `connections` to choose)"))
    ramp = _ramp(data, kind, fail)
    connections = data.get("connections")
    if connections is not None and (not _whole(connections) or not 1 <= connections <= MAX_CONNECTIONS):
        raise fail(f"connections must be a whole number from 1 to {MAX_CONNECTIONS:,}, not {connections!r}")

    concurrency = tuple(_list(data, "concurrency", [1, 16, 64], fail, _positive_int(fail, "concurrency")))
    rates: tuple[float, ...] = ()
    stages: tuple[Step, ...] = ()
    slo = search = None
    if kind == "rate":
        if "rate" not in data:
            raise fail('load = "rate" needs rate = [...] (requests/s, e.g. rate = [500, 1000, 2000])')
        rates = tuple(_list(data, "rate", [], fail, _rate(fail, "rate")))
    elif kind == "stages":
        stages = _stages(data.get("stages"), fail)
    elif kind == "capacity":
        if "slo" not in data:
            raise fail('load = "capacity" needs slo = { p99 = "50ms", errors = 0 } (the target a rate must meet)')
        slo = parse_slo(data["slo"], fail)
        search = _search(data.get("search", {}), fail)
    walk = kind in ("stages", "capacity") or "ramp" in data
    model = LoadModel(kind, concurrency, rates, stages, ramp, connections, slo, search, walk)
    return model, "stack" if walk else None


def parse_slo(table: Any, fail: Fail) -> SLO:
    if not isinstance(table, dict) or not table:
        raise fail('slo must be a table such as slo = { p99 = "50ms", errors = 0 }')
    latency: dict[str, int] = {}
    counts: dict[str, int | None] = {"errors": None, "unserved": None}
    for key, value in table.items():
        if key in SLO_COUNTS:
            if not _whole(value) or value < 0:
                raise fail(f"slo.{key} takes a whole number >= 0 (how many are allowed), not {value!r}")
            counts[key] = value
            continue
        p = "100" if key == "max" else key[1:] if key.startswith("p") else None
        if p not in PERCENTILES:
            known = ", ".join(["max"] + [f"p{x}" for x in PERCENTILES[:-1]] + list(SLO_COUNTS))
            raise fail(f"slo has no key {key!r}: it takes {known} (quote dotted ones: \"p99.9\" = \"100ms\")")
        try:
            seconds = parse_duration_s(value)
        except ValueError as e:
            raise fail(f"slo.{key}: {e}") from None
        if seconds <= 0:
            raise fail(f"slo.{key} must be above 0")
        latency[p] = round(seconds * 1e6)
    if not latency:
        raise fail('slo needs a latency target, e.g. p99 = "50ms"')
    # An SLO that does not mention errors still allows none: a stack that answers fast
    # with errors has not sustained the rate.
    return SLO(latency, 0 if counts["errors"] is None else counts["errors"], counts["unserved"])


def _search(table: Any, fail: Fail) -> SearchParams:
    if not isinstance(table, dict):
        raise fail('search must be a table, e.g. search = { budget = "3m", precision = "5%" }')
    for key in table:
        if key not in SEARCH_KEYS:
            raise fail(f"search has no key {key!r}: it takes {', '.join(sorted(SEARCH_KEYS))}")
    d = SearchParams()
    try:
        budget = parse_duration_s(table.get("budget", d.budget_s))
    except ValueError as e:
        raise fail(f"search.budget: {e}") from None
    start = _rate(fail, "search.start")(table.get("start", d.start))
    ceiling = _rate(fail, "search.max")(table.get("max", d.ceiling))
    floor = _rate(fail, "search.min")(table.get("min", d.floor))
    factor = table.get("factor", d.factor)
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 1.1 <= factor <= 10:
        raise fail(f"search.factor must be a number from 1.1 to 10, not {factor!r}")
    confirm = table.get("confirm", d.confirm)
    if not _whole(confirm) or not 0 <= confirm <= 10:
        raise fail(f"search.confirm must be a whole number from 0 to 10, not {confirm!r}")
    edge = table.get("edge", d.edge)
    if not _whole(edge) or not 0 <= edge <= 40:
        raise fail(f"search.edge (probes around the edge) must be a whole number from 0 to 40, not {edge!r}")
    try:
        precision = parse_share(table.get("precision", d.precision))
    except ValueError:
        raise fail(f"search.precision takes a share such as \"5%\", not {table.get('precision')!r}") from None
    if not floor <= start <= ceiling:
        raise fail(f"search.start ({start:g}/s) must lie between search.min ({floor:g}) and search.max ({ceiling:g})")
    if budget < 10:
        raise fail("search.budget must be at least 10s (a probe takes seconds)")
    return SearchParams(start, float(factor), precision, confirm, ceiling, floor, budget, edge)


def _ramp(data: dict, kind: str, fail: Fail) -> str:
    if "ramp" in data and "order" in data:
        raise fail("ramp and order say the same thing: keep ramp (order is its older name)")
    if "order" in data:
        order = data["order"]
        if order not in LEGACY_ORDER:
            raise fail(f"order must be one of {', '.join(LEGACY_ORDER)}, not {order!r}")
        return LEGACY_ORDER[order]
    ramp = data.get("ramp", "up")
    if ramp not in RAMPS:
        raise fail(f"ramp must be one of {', '.join(RAMPS)}, not {ramp!r}")
    if "ramp" in data and kind not in ("closed", "rate"):
        raise fail(f"ramp orders a list of concurrency or rate levels; load = {kind!r} has none "
                   + ("(stages run in the order written)" if kind == "stages" else "(the search picks its rates)"))
    return ramp


def _stages(raw: Any, fail: Fail) -> tuple[Step, ...]:
    if not isinstance(raw, list) or not raw:
        raise fail('load = "stages" needs stages = [{ duration = "10s", concurrency = 16 }, '
                   '{ duration = "10s", rate = 500 }, ...]')
    out = []
    for i, st in enumerate(raw):
        where = f"stages[{i}]"
        if not isinstance(st, dict):
            raise fail(f"{where} must be a table such as {{ duration = \"10s\", concurrency = 16 }}")
        unknown = set(st) - STAGE_KEYS
        if unknown:
            raise fail(f"{where} has no key {sorted(unknown)[0]!r}: a stage takes duration and concurrency or rate")
        if ("concurrency" in st) == ("rate" in st):
            raise fail(f"{where} needs exactly one of concurrency (closed loop) or rate (open loop)")
        if "duration" not in st:
            raise fail(f"{where} needs a duration")
        try:
            duration = parse_duration_s(st["duration"])
        except ValueError as e:
            raise fail(f"{where}.duration: {e}") from None
        if not 0.1 <= duration <= 3600:
            raise fail(f"{where}.duration must be between 100ms and 1h")
        if "rate" in st:
            out.append(Step(rate=_rate(fail, f"{where}.rate")(st["rate"]), duration_s=duration))
        else:
            out.append(Step(concurrency=_positive_int(fail, f"{where}.concurrency")(st["concurrency"]),
                            duration_s=duration))
    return tuple(out)


def _list(data: dict, key: str, default: list, fail: Fail, item: Callable[[Any], Any]) -> list:
    value = data.get(key, default)
    if not isinstance(value, list):
        value = [value]
    if not value:
        raise fail(f"{key} must not be empty")
    return [item(v) for v in value]


def _positive_int(fail: Fail, key: str) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if not _whole(v) or not 1 <= v <= MAX_CONNECTIONS:
            raise fail(f"{key} takes whole numbers from 1 to {MAX_CONNECTIONS:,}, not {v!r}")
        return v
    return check


def _rate(fail: Fail, key: str) -> Callable[[Any], float]:
    def check(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= MAX_RATE:
            raise fail(f"{key} takes requests/s above 0 and at most {MAX_RATE:,.0f}, not {v!r}")
        return float(v)
    return check


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)

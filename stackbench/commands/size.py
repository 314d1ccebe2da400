"""`stackbench size STACK… --workload W --target HITS`: the machine to buy in one command —
the sizing scenario's plan (stackbench/scenarios/sizing.toml: its sizes, SLO, peak factor,
search and tuned stacks are the defaults) asked of these stacks, this page and this many
hits a day, then run as `run` runs a plan with `[sizing]` (commands/measure.py): each size's
stacks tuned for the target, each one's capacity searched, the smallest enough size named
(docs/guide/sizing.md)."""

from __future__ import annotations

import argparse
import re
from typing import Any

from stackbench import scenarios
from stackbench.commands import measure
from stackbench.commands.tune import pairs
from stackbench.errors import PlanError, UsageError
from stackbench.planning import loads, machine, plan as plan_mod, sizing as sizing_plan
from stackbench.stacks import registry

REFERENCE = "sizing"  # the scenario whose plan the command asks its question of
VISITS = "visits"  # the scenario whose visit --visits-per-day counts
VISITS_SITE = "wordpress-home"  # a page of the site that visit is made to
SOURCE = "stackbench size"
_COUNT = re.compile(r"^(\d+(?:\.\d+)?)([kKmM]?)$")


def cmd_size(args: argparse.Namespace) -> int:
    return measure.run_asked(plan(args), args)


def plan(args: argparse.Namespace) -> plan_mod.Plan:
    """The question checked, one line for each thing wrong, then the plan it makes."""
    for stack in args.stacks:
        registry.get(stack)  # an unknown stack: one line naming the known ones
    twice = next((s for s in args.stacks if args.stacks.count(s) > 1), None)
    if twice:
        raise UsageError(f"stack {twice!r} is named twice: each stack is sized once")
    visits = getattr(args, "visits_per_day", None)
    if getattr(args, "logged_in", None) is not None and visits is None:
        raise UsageError("--logged-in is the share of the visitors who log in: give it with --visits-per-day")
    target: dict[str, Any] = ({"visits_per_day": hits(visits, "--visits-per-day", "visits")} if visits is not None
                              else {"hits_per_day": hits(args.target)})
    if args.peak_factor is not None:
        target["peak_factor"] = args.peak_factor
    slo = None
    if args.slo:
        slo = pairs(args.slo, "--slo")
        loads.parse_slo(slo, lambda m: UsageError(f"--slo: {m}"))
    base = scenarios.get(REFERENCE).data(quick=args.quick)
    data = sizing_plan.asked(base, args.stacks, args.workload, target, slo, sizes(args.sizes) if args.sizes else None)
    data["tune"] = {k: v for k, v in (data.get("tune") or {}).items() if k != "workload"} | (
        {"workload": tuned} if (tuned := sizing_plan.tune_workload(args.workload, args.tune_workload, base)) else {})
    if visits is not None:
        data["visit"] = visit(args.workload, args.logged_in or "0%")
    try:
        return plan_mod.parse(data, SOURCE)
    except PlanError as e:
        # The plan's keys are the flags' here: say it of the flags.
        said = e.message.replace("sizing.target.peak_factor", "--peak-factor").replace("visit.logged_in", "--logged-in")
        raise UsageError(said, hint=e.hint) from None


def hits(text: str, flag: str = "--target", what: str = "hits (requests)") -> float:
    """"180000", "180k", "1.5M" → hits (requests) a day, or with `flag` visits a day."""
    m = _COUNT.match(text.replace(",", "").replace("_", "").strip())
    n = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6}[m.group(2).lower()] if m else 0.0
    if not n > 0:
        raise UsageError(f"{flag} takes {what} a day, a number above 0 such as 180000 or 180k, not {text!r}")
    return n


def visit(workload: str, logged_in: str) -> dict[str, Any]:
    """The visit `--visits-per-day` counts: the visits scenario's (stackbench/scenarios/
    visits.toml) at one logged-in share — its pages are WordPress's, so the page must be."""
    if not sizing_plan.same_site(workload, VISITS_SITE):
        raise UsageError(f"--visits-per-day counts the visits scenario's visit to WordPress, and {workload!r} is "
                         "another site: write a plan with [visit] and [sizing] for it (docs/guide/sizing.md)")
    return dict(scenarios.get(VISITS).data()["visit"]) | {"logged_in": [logged_in]}


def sizes(text: str) -> list[dict[str, Any]]:
    """"0.25/256M/3,1/1G/12" → the sizes as a plan's `sizing.sizes` (CPUs, memory, price a month)."""
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        fields = part.split("/")
        if len(fields) not in (2, 3) or not all(f.strip() for f in fields):
            raise UsageError(f"--sizes takes CPUS/MEMORY[/PRICE] separated by commas, e.g. 0.5/512M/6, not {part!r}")
        cpus, memory = pairs(f"cpus={fields[0]}", "--sizes")["cpus"], fields[1].strip()
        size: dict[str, Any] = {"cpus": cpus, "memory": memory}
        fail = lambda m, part=part: UsageError(f"--sizes: {part}: {m}")  # noqa: E731
        machine.parse(size, fail)
        if len(fields) == 3:
            price = pairs(f"price={fields[2]}", "--sizes")["price"]
            if isinstance(price, bool) or not isinstance(price, (int, float)):
                raise fail(f"the price a month is a number such as 6, not {fields[2]!r}")
            size["price"] = price
        out.append(size)
    if not out:
        raise UsageError("--sizes names no size: give CPUS/MEMORY[/PRICE] separated by commas, e.g. 0.5/512M/6")
    return out


def defaults() -> dict[str, str]:
    """What the flags default to, in their own syntax, read from the reference plan (for
    --help and the manual)."""
    base = scenarios.get(REFERENCE).data()
    slo = ",".join(f"{k}={v}" for k, v in base["slo"].items())
    shown = ",".join(f"{s['cpus']:g}/{s['memory']}" + (f"/{s['price']:g}" if "price" in s else "")
                     for s in base["sizing"]["sizes"])
    peak = base["sizing"]["target"].get("peak_factor", sizing_plan.DEFAULT_PEAK_FACTOR)
    tuned = (base.get("tune") or {}).get("workload", "the page itself")
    return {"slo": slo, "sizes": shown, "peak_factor": f"{peak:g}", "tune_workload": tuned}

"""A plan's visit (planning/visits.py) as the load engine is asked for it: the anonymous
visitors' journey, and — when a share logs in — the logged-in visitors' journey, whose
login posts one of the start's accounts, drawn per visit. The accounts are read from the
start's logins file (RUNDIR/logins.json, 0600: workloads/login.py); their passwords go
to the engine in a file of its run only (engine/process.py), never on a command line, in
output or in the store (the engine writes the forms' values as "*")."""

from __future__ import annotations

import math
from pathlib import Path

from stackbench.analysis import capacity
from stackbench.engine.journey import Choice, Exit, Journey, Login, Page, Think
from stackbench.errors import StackbenchError
from stackbench.planning import visits
from stackbench.planning.loads import OPEN_LOOP_LATENCY_S
from stackbench.planning.plan import Plan
from stackbench.workloads import login as login_mod
from stackbench.workloads.base import Workload

MAX_SLOTS = 2_000  # visitor slots of a probe, at most (each opens up to page_conns connections)


def think(t: visits.Think) -> Think | None:
    if t.kind == "none":
        return None
    if t.kind == "fixed":
        return Think.fixed(t.mean_s * 1000)
    if t.kind == "uniform":
        return Think.uniform((t.min_s or 0) * 1000, (t.max_s or 0) * 1000)
    return Think.exponential(t.mean_s * 1000, t.max_s * 1000 if t.max_s is not None else None)


def journey(visit: visits.Visit, workload: Workload, login: Login | None = None) -> Journey:
    """The journey of a visit to `workload`, logging in first when `login` is given."""
    assets = visit.asset_paths(tuple(u.path for u in workload.assets))
    steps: list[Page | Choice] = []
    for step in visit.steps:
        if not step.choice:
            steps.append(Page(step.options[0].path or "/", assets=assets))
            continue
        steps.append(Choice(tuple(Exit(o.weight) if o.path is None else Page(o.path, assets=assets, weight=o.weight)
                                  for o in step.options)))
    return Journey(tuple(steps), think=think(visit.think), login=login)


def login(workload: Workload, logins_file: Path | None) -> Login:
    """The login of the workload's visitors, one form per account of the start's logins
    file: the form's page first (WordPress sets its test cookie there)."""
    how = workload.login
    if how is None or logins_file is None:
        raise StackbenchError(f"workload {workload.id!r} has no accounts on this start to log in with")
    accounts = login_mod.read(logins_file)
    if not accounts:
        raise StackbenchError(f"the start's logins file has no accounts of workload {workload.id!r}")
    forms = tuple(tuple((k, v.replace("{user}", a.user).replace("{password}", a.password)) for k, v in how.fields)
                  for a in accounts)
    return Login(how.path, form_page=how.path, forms=forms, name="login")


def probe_load(visit: visits.Visit, rate: float, share: float, budget_s: float, at_least_s: float,
               connections: int | None = None) -> tuple[int, float, float]:
    """A capacity probe of `rate` visits a second: its visitor slots, its measured window
    and the engine's warm-up before it (docs/methods/capacity.md, "Visits"). The warm-up
    (`Visit.lead_s`, each page at the SLO's budget) lets the visits begun before the window
    reach their later pages, so that the window sees their pages at the steady rate and is
    judged on the pages due in it (analysis/capacity_served.py); the window holds
    capacity.PROBE_RESPONSES pages; the slots are twice what a visit of that length holds
    at the rate (Little's law), and `connections` when the plan set them."""
    lead = visit.lead_s(budget_s, share)
    pages_per_s = rate * visit.pages_a_visit()
    window = capacity.probe_seconds(pages_per_s, at_least_s)
    slots = connections if connections is not None else min(MAX_SLOTS, max(4, math.ceil(2 * rate * lead) + 1))
    return slots, window, lead


def budget_s(plan: Plan) -> float:
    """The loosest latency a probe's SLO allows, in seconds: the time a page of a probe
    that meets it takes at most, which its visits' length is reckoned with."""
    slo = plan.load.slo
    return slo.latency_budget_us / 1e6 if slo is not None else OPEN_LOOP_LATENCY_S

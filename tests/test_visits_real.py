"""Visits through the lab's path on real stacks (integration): a plan's [visit] made into
the engine's journeys by the runner (runner/cell.py load_spec), a logged-in share run as
two visitor classes and merged (engine/logged_in.py). Through each cache in front, every
request of a logged-in visitor — the login, its redirect, the pages — reaches PHP (the
cache's X-Cache never says HIT for them), the anonymous visitors beside them are served
from the cache, and after the visits an anonymous visitor still gets the anonymous page,
no reader's. (That a logged-in reader's page carries their name is the lab's own check
when the stack is verified: workloads/verify.py verify_login, run here too.)"""

from __future__ import annotations

from dataclasses import replace

import pytest

from stackbench import workloads
from stackbench.engine import logged_in, process as engine
from stackbench.planning import plan as plan_mod
from stackbench.planning.plan import Cell, StackVariant
from stackbench.runner.cell import load_spec
from stackbench.upkeep.pinning import Pinning
from test_logins_real import fetch, personalised
from test_workloads_real import instance, require_wordpress

pytestmark = pytest.mark.servers
HOME = workloads.get("wordpress-home")


def visits(inst, share: float, visitors: int, count: int):
    """`count` visits of `visitors` at this logged-in share, as a run would ask for them."""
    plan = plan_mod.parse({"stacks": [{"id": inst.stack.id}], "workloads": [HOME.id], "duration": "1s",
                           "warmup": "0s", "visit": {"pages": ["/", "/?s=cache"], "logged_in": [share]}}, "test")
    cell = Cell(0, 0, StackVariant(inst.stack.id, inst.label, {}), HOME.id, visitors, True, logged_in=share)
    spec = load_spec(cell, plan, inst, Pinning([0], [1]))
    return logged_in.run(engine.run, replace(spec, duration_s=None, requests=count), [1])


@pytest.mark.parametrize("stack_id, knobs, passed", [
    ("varnish-apache", {}, {"PASS"}),
    # nginx: a logged-in visitor's requests bypass the cache; the login page's answer sets
    # a cookie, so nginx never stores it (MISS); the login's POST never meets the cache, and
    # nginx then sends no X-Cache at all (the engine's "(none)")
    ("nginx-cache-apache", {"cache_ttl": 60}, {"BYPASS", "MISS", "(none)"}),
])
def test_logged_in_visitors_reach_php_and_anonymous_ones_the_cache(stack_id, knobs, passed, workdir):
    require_wordpress()
    with instance(stack_id, HOME, workdir, **knobs) as inst:
        inst.verify([HOME.id])  # the lab's check: a reader's page carries their name, nobody else's
        readers = inst.accounts(HOME.id)
        # Every visitor logged in: nothing of theirs comes from the cache.
        result = visits(inst, 1.0, visitors=2, count=4)
        v = result.visits
        assert v is not None and (v.completed, v.failed) == (4, 0)
        login = next(p for p in v.per_page if p.login)
        assert login.completed == 4
        answers = result.header_counts["X-Cache"]
        assert "HIT" not in answers and set(answers) <= passed, answers
        # Half logged in: the anonymous half's pages are the cache's, the others' PHP's.
        half = visits(inst, 0.5, visitors=4, count=8)
        answers = half.header_counts["X-Cache"]
        assert answers.get("HIT", 0) > 0 and sum(answers.get(p, 0) for p in passed) >= 2 * 4, answers
        assert [c["host"] for c in half.raw["clients"]] == ["anonymous", "logged in"]
        assert half.visits is not None and half.visits.failed == 0
        # No reader's page was left in the cache for an anonymous visitor.
        status, headers, body = fetch(inst)
        assert status == 200 and headers.get("x-cache") == "HIT"
        assert not any(personalised(body, r) for r in readers)

"""Caching stacks report what their cache did (integration): the runner asks the engine
to count X-Cache, the counts are stored with the cell, and a mostly-cached cell carries a
warning, so a cache is never mistaken for a fast PHP stack. Varnish counts itself too
(varnishstat over the cell's window, stored with the cell): its count agrees with the
answers' headers."""

from __future__ import annotations

import pytest

from conftest import run_real_plan

pytestmark = pytest.mark.servers

PLAN = """
name = "cache"
duration = "1s"
warmup = "0.2s"
concurrency = [4]
keepalive = [true]
workloads = ["php-hello"]
syscalls = false
[[stacks]]
id = "varnish-apache"
[[stacks]]
id = "varnish-apache"
knobs = { varnish_mode = "pass-php" }
"""


def test_x_cache_is_counted_and_a_cached_cell_is_flagged():
    _, (cached, passed) = run_real_plan(PLAN, "cache.toml", "varnish-apache")
    hits = cached.engine.header_counts["X-Cache"]
    assert hits.get("HIT", 0) > 0.9 * cached.engine.requests.completed
    assert any(c.code == "cache_hits" for c in cached.caveats)
    assert passed.engine.header_counts["X-Cache"] == {"PASS": passed.engine.requests.completed}
    assert not any(c.code == "cache_hits" for c in passed.caveats)
    own, own_passed = cached.cost.cache, passed.cost.cache
    assert own.server == own_passed.server == "varnishd"
    # The window's requests, as Varnish counted them: those the engine saw answered, give or
    # take the few in flight at the window's edges (4 connections).
    assert abs(own.answered - cached.engine.requests.completed) <= 8
    assert abs(own.hits - hits["HIT"]) <= 8 and own.hit_ratio > 0.9
    assert own_passed.passes == own_passed.answered and abs(own_passed.passes - passed.engine.requests.completed) <= 8

"""Caching stacks report what their cache did (integration): the runner asks the engine
to count X-Cache, the counts are stored with the cell, and a mostly-cached cell carries a
warning, so a cache is never mistaken for a fast PHP stack."""

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

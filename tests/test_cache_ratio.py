"""How often a cache answered, two ways (analysis/cache.py): the X-Cache answers the
engine counted, and the cache's own count beside them (Varnish's varnishstat, stored with
the cell), with the share it passed to the back end — in the words both reports show."""

from __future__ import annotations

import io

from cells import stored_cell
from stackbench.analysis import cache
from stackbench.model.cost import CacheCounts
from stackbench.report.text import cache as cache_text
from stackbench.report.words import cache as words
from stackbench.servers.varnish import parse_varnishstat


def varnish(seq: int, hits: int, misses: int, passes: int, header: dict | None = None, **kw):
    own = {"server": "varnishd", "hits": hits, "misses": misses, "passes": passes}
    return stored_cell(seq=seq, repetition=seq, stack_id="varnish-apache", stack_label="varnish-apache",
                       workload="wordpress-home", cache=own,
                       engine={"header_counts": {"X-Cache": header}} if header is not None else {}, **kw)


def test_the_caches_own_count_sits_beside_the_header_over_the_same_runs():
    cells = [varnish(0, 80, 5, 15, {"HIT": 80, "MISS": 5, "PASS": 15}),
             varnish(1, 60, 10, 30, {"HIT": 60, "MISS": 10, "PASS": 30}),
             varnish(2, 70, 0, 30, {"HIT": 70, "PASS": 30})]
    (row,) = cache.by_question(cells)
    assert row.header == "X-Cache" and row.server == "varnishd"
    assert row.ratio.median == 0.7 and row.server_ratio.median == 0.7 and row.server_passes.median == 0.3
    assert row.ratio.n == row.server_ratio.n == 3
    (shown,) = words.rows([row])
    assert shown[:4] == ("varnish-apache", "wordpress-home", "c=16", "3")
    assert shown[4] == "70%" and shown[6] == "70% (varnishd)" and shown[7] == "30%"


def test_a_cache_counted_only_by_itself_still_has_its_row_and_one_never_counted_has_none():
    own_only = cache.by_question([varnish(0, 9, 1, 0), varnish(1, 8, 2, 0)])
    assert [(r.header, round(r.ratio.median, 6), round(r.server_ratio.median, 6)) for r in own_only] == [
        (None, 0.85, 0.85)]
    assert words.rows(own_only)[0][4:7] == ("-", "-", "85% (varnishd)")  # no header: its column says nothing
    assert words.header_of(own_only[0]) == "varnishd's own count"
    nginx = stored_cell(seq=0, stack_label="nginx-cache-apache", engine={"header_counts": {"X-Cache": {"HIT": 3, "BYPASS": 1}}})
    (row,) = cache.by_question([nginx])
    assert row.server is None and row.server_ratio is None and words.rows([row])[0][6:] == ("-", "-")
    assert cache.by_question([stored_cell(seq=0)]) == []  # no cache: no row
    assert CacheCounts("varnishd", 0, 0, 0).hit_ratio is None  # handled nothing: not computable, never 0


def test_the_terminal_table_and_its_legend():
    out = io.StringIO()
    cache_text.render(cache.by_question([varnish(0, 1, 0, 3, {"HIT": 1, "PASS": 3})]), out, explain=False)
    text = out.getvalue()
    assert "how often each cache answered" in text and "25% (varnishd)" in text and "75%" in text
    assert "cache's own count = the hits it counted itself (varnishstat)" in text
    empty = io.StringIO()
    cache_text.render([], empty)
    assert empty.getvalue() == ""


def test_varnishstat_documents_old_and_new():
    new = ('{"version": 1, "timestamp": "2026-11-28T23:00:00", "counters": {'
           '"MAIN.cache_hit": {"description": "Cache hits", "flag": "c", "format": "i", "value": 12},'
           '"MAIN.cache_miss": {"value": 3}, "MAIN.s_pass": {"value": 5}}}')
    assert parse_varnishstat(new) == {"hits": 12, "misses": 3, "passes": 5}
    old = '{"timestamp": "x", "MAIN.cache_hit": {"value": 1}, "MAIN.cache_miss": {"value": 2}, "MAIN.s_pass": {"value": 0}}'
    assert parse_varnishstat(old) == {"hits": 1, "misses": 2, "passes": 0}
    assert parse_varnishstat('{"counters": {"MAIN.cache_hit": {"value": 1}}}') is None  # a counter missing
    assert parse_varnishstat("not json") is None


def test_questions_that_differ_in_their_connection_mode_say_it_in_the_load_column():
    # tls-offload --quick: hitch → Varnish → Apache kept alive and with full handshakes
    # printed two identical rows "php-hello c=16"
    cells = [varnish(0, 0, 0, 100, {"PASS": 100}), varnish(1, 0, 0, 100, {"PASS": 100}, keepalive=False)]
    rows = words.rows(cache.by_question(cells))
    assert len(rows) == 2 and rows[0] != rows[1]
    assert {r[2] for r in rows} == {"c=16 keep-alive", "c=16 no keep-alive"}, rows
    (one,) = words.rows(cache.by_question(cells[:1]))
    assert one[2] == "c=16"  # one mode: the level alone, as before

"""Store migrations, each tested on a real store file of its version (tests/data/):
tests/data/store-v3.sqlite was written by stackbench at commit 3128f59 (schema 3) running
a real 8-cell plan (nginx-fpm and Apache prefork AllowOverride All, static-12b and
php-hello, c = 1 and 32) — two cells with unserved clients, every cell with a caveat."""

from __future__ import annotations

import json
from dataclasses import replace
import shutil
import sqlite3
from pathlib import Path

import pytest

from stackbench.analysis import figures
from stackbench.errors import UsageError
from stackbench.analysis import cells as analyzed_cells
from stackbench.report.text import table
from stackbench.store import SCHEMA_VERSION, Store
from stackbench.store import migrations

V3 = Path(__file__).parent / "data" / "store-v3.sqlite"


@pytest.fixture
def v3(tmp_path) -> Path:
    path = tmp_path / "results.sqlite"
    shutil.copy(V3, path)
    return path


def test_v3_store_is_migrated_and_reads_like_before(v3):
    before = sqlite3.connect(v3)
    old_cells = before.execute("SELECT seq, requests_per_s, cpu_total_us, warnings_json FROM cells ORDER BY seq").fetchall()
    before.close()
    store = Store(v3)
    assert store.migrated_from == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    cells = store.cells(1)
    assert len(cells) == len(old_cells) == 8
    for cell, (seq, rps, cpu, _) in zip(cells, old_cells):
        assert (cell.seq, cell.engine.requests_per_s, cell.cost.cpu_total_us) == (seq, rps, cpu)
        # the stored sentences are kept, now as caveats with the code "text"
        assert cell.caveats and all(c.code == "text" and c.params["text"] for c in cell.caveats)
    # the new columns are filled from the stored engine documents
    for column in ("connections_measured", "connections_without_response"):
        pairs = store.db.execute(f"SELECT {column}, json_extract(engine_json, '$.{column}') FROM cells").fetchall()
        assert all(a == b for a, b in pairs)
    unserved = [figures.of(c).unserved for c in cells]
    assert sum(1 for u in unserved if u and u.without_response) == 2
    assert store.run(1).plan_checked is None  # a v3 run did not store it: not invented
    # a copy of the old store was kept, and it is still version 3
    backup = sqlite3.connect(store.backup_path)
    assert backup.execute("PRAGMA user_version").fetchone()[0] == 3
    lines = table.rows(analyzed_cells.of(cells))
    assert any("27/32 !" in r for r in lines)


def test_migration_is_idempotent_and_new_runs_can_be_added(v3):
    Store(v3).close()
    store = Store(v3)
    assert store.migrated_from == [] and store.backup_path is None
    run_id = store.begin_run("p", "s", {}, {}, {})
    assert run_id == 2 and store.runs()[0]["cells"] == 8


def test_a_failing_step_leaves_the_store_as_it_was(v3, monkeypatch):
    def broken(db):
        db.execute("ALTER TABLE runs ADD COLUMN plan_checked_json TEXT")
        raise RuntimeError("disk full")

    monkeypatch.setitem(migrations.STEPS, 3, broken)
    with pytest.raises(RuntimeError):
        Store(v3)
    db = sqlite3.connect(v3)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 3
    columns = [r[1] for r in db.execute("PRAGMA table_info(runs)")]
    assert "plan_checked_json" not in columns  # the ALTER TABLE was rolled back too


def test_pre_release_schemas_are_refused(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE runs (id INTEGER)")
    db.execute("PRAGMA user_version = 2")
    db.close()
    with pytest.raises(UsageError, match="pre-release"):
        Store(path)


def test_every_version_since_the_oldest_has_a_step():
    assert sorted(migrations.STEPS) == list(range(migrations.OLDEST_MIGRATABLE, SCHEMA_VERSION))


V6 = Path(__file__).parent / "data" / "store-v6.sqlite"  # written by the commit before v7 (nginx-fpm, 2 cells)


def test_v6_store_gains_page_php_and_service_columns_without_inventing_values(tmp_path):
    path = tmp_path / "results.sqlite"
    shutil.copy(V6, path)
    # A page-mode engine document in a v6 store (the engine had page mode; plans could
    # not ask for it): the step fills the page figures from it.
    db = sqlite3.connect(path)
    doc = json.loads(db.execute("SELECT engine_json FROM cells WHERE seq = 1").fetchone()[0])
    doc["pages"] = {"completed": 40, "failed": 1, "per_s": 20.0}
    doc["page_load_us"] = {**doc["latency_us"], "percentiles": {"50": 1500, "99": 9000}}
    db.execute("UPDATE cells SET engine_json = ? WHERE seq = 1", (json.dumps(doc),))
    db.commit()
    before = db.execute("SELECT seq, requests_per_s, cpu_total_us FROM cells ORDER BY seq").fetchall()
    db.close()
    store = Store(path)
    assert store.migrated_from == [6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]
    cells = store.cells(1)
    assert [(c.seq, c.engine.requests_per_s, c.cost.cpu_total_us) for c in cells] == before
    static, php = cells
    assert static.engine.pages is None and static.php is None and static.cost.service_cpu_us is None
    pages = php.engine.pages
    assert (pages.completed, pages.failed, pages.per_s) == (40, 1, 20.0)
    assert (pages.load_p50_us, pages.load_p99_us) == (1500, 9000)
    assert php.php is None  # not read back by v6: unknown, not "off"
    # the new columns are filled from the stored engine documents
    columns = "pages_completed, pages_failed, pages_per_s, page_load_p50_us, page_load_p99_us"
    assert [tuple(r) for r in store.db.execute(f"SELECT {columns} FROM cells ORDER BY seq")] == \
        [(None,) * 5, (40, 1, 20.0, 1500, 9000)]


V7 = Path(__file__).parent / "data" / "store-v7.sqlite"  # written by the commit before v8 (2 cells, php-hello c=4)


def test_v7_store_becomes_closed_loop_cells_and_gains_searches(tmp_path):
    path = tmp_path / "results.sqlite"
    shutil.copy(V7, path)
    # An open-loop engine document in a v7 store (the engine had --rate; plans could not
    # ask for it): the step files that cell under load "rate" with its rate and counts.
    db = sqlite3.connect(path)
    doc = json.loads(db.execute("SELECT engine_json FROM cells WHERE seq = 1").fetchone()[0])
    doc["config"]["rate"] = 500.0
    doc["requests"].update({"due": 1000, "not_sent": 12})
    db.execute("UPDATE cells SET engine_json = ? WHERE seq = 1", (json.dumps(doc),))
    db.commit()
    before = db.execute("SELECT seq, stack_label, requests_per_s, latency_p99_us, cpu_total_us FROM cells ORDER BY seq").fetchall()
    db.close()
    store = Store(path)
    assert store.migrated_from == [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]
    cells = store.cells(1)
    assert [(c.seq, c.stack_label, c.engine.requests_per_s, c.engine.latency.p99_us, c.cost.cpu_total_us)
            for c in cells] == before
    closed, opened = cells
    assert (closed.load, closed.rate, closed.leg, closed.step) == ("closed", None, None, None)
    # closed loop: not computable
    assert (closed.engine.requests.due, closed.engine.requests.not_sent) == (None, None)
    assert (opened.load, opened.rate, opened.engine.requests.due, opened.engine.requests.not_sent) == \
        ("rate", 500.0, 1000, 12)
    assert [tuple(r) for r in store.db.execute("SELECT requests_due, requests_not_sent FROM cells ORDER BY seq")] \
        == [(None, None), (1000, 12)]
    assert store.searches(1) == {}
    # the same table as before, through the new code
    assert [r[4] for r in table.rows(analyzed_cells.of(cells))] == ["nginx + FPM", "Apache mod_php"]


V8 = Path(__file__).parent / "data" / "store-v8.sqlite"  # written by the commit before v9 (nginx-fpm, 2 cells, php-hello c=4)


def test_v8_store_cells_ran_on_loopback_without_limits(tmp_path):
    path = tmp_path / "results.sqlite"
    shutil.copy(V8, path)
    db = sqlite3.connect(path)
    before = db.execute("SELECT seq, stack_label, requests_per_s, latency_p99_us, cpu_total_us FROM cells ORDER BY seq").fetchall()
    db.close()
    store = Store(path)
    assert store.migrated_from == [8, 9, 10, 11, 12, 13, 14, 15, 16, 17]
    cells = store.cells(1)
    assert [(c.seq, c.stack_label, c.engine.requests_per_s, c.engine.latency.p99_us, c.cost.cpu_total_us)
            for c in cells] == before
    for c in cells:
        assert (c.network, c.background) == ("loopback", "none")
        assert (c.classes, c.cost.memory_events, c.cost.oom_kills) == (None, None, None)
    assert store.run(1).network is None


V9 = Path(__file__).parent / "data" / "store-v9.sqlite"  # written by the commit before v10 (nginx-fpm, 2 cells, php-hello c=4)


def test_v9_store_cells_spoke_clear_http_1_1(tmp_path):
    path = tmp_path / "results.sqlite"
    shutil.copy(V9, path)
    db = sqlite3.connect(path)
    before = db.execute("SELECT seq, stack_label, requests_per_s, latency_p99_us, cpu_total_us FROM cells ORDER BY seq").fetchall()
    db.close()
    store = Store(path)
    assert store.migrated_from == [9, 10, 11, 12, 13, 14, 15, 16, 17]
    cells = store.cells(1)
    assert [(c.seq, c.stack_label, c.engine.requests_per_s, c.engine.latency.p99_us, c.cost.cpu_total_us)
            for c in cells] == before
    for c in cells:
        assert (c.protocol, c.handshake, c.streams, c.negotiated) == ("http/1.1", None, None, None)
        assert (c.engine.protocol, c.engine.tls) == (None, None)  # that engine spoke HTTP/1.1 and did not say
    rows = store.db.execute("SELECT protocol, protocol_spoken, tls_full, handshake_p99_us FROM cells").fetchall()
    assert [tuple(r) for r in rows] == [("http/1.1", None, None, None)] * 2


V10 = Path(__file__).parent / "data" / "store-v10.sqlite"  # written by the commit before v11 (nginx-fpm, 2 cells, php-hello c=4)


def migrated_like_before(store_file: Path, tmp_path: Path, passed: list[int]) -> Store:
    """A copy of `store_file` opened (so migrated: through the versions `passed`), its cells
    reading as they did before."""
    path = tmp_path / "results.sqlite"
    shutil.copy(store_file, path)
    db = sqlite3.connect(path)
    before = db.execute("SELECT seq, stack_label, requests_per_s, cpu_total_us FROM cells ORDER BY seq").fetchall()
    db.close()
    store = Store(path)
    assert store.migrated_from == passed
    assert [(c.seq, c.stack_label, c.engine.requests_per_s, c.cost.cpu_total_us) for c in store.cells(1)] == before
    return store


def test_v10_store_gains_an_empty_tunings_table_and_reads_like_before(tmp_path):
    store = migrated_like_before(V10, tmp_path, [10, 11, 12, 13, 14, 15, 16, 17])
    assert store.tunings() == []
    key = {"stack": "nginx-fpm", "concurrency": 4}
    tid = store.record_tuning(None, 1, "nginx-fpm", "php-hello", key, {**key, "repetitions": 3}, None,
                              {"4 workers": 4}, 4, {"pm": "static", "pm_max_children": 4}, "only")
    assert store.latest_tuning({"concurrency": 4, "stack": "nginx-fpm"}).id == tid  # key order does not matter
    assert store.latest_tuning({**key, "concurrency": 8}) is None
    assert store.tuning(tid).knobs == {"pm": "static", "pm_max_children": 4}
    # v12: an empty sizings table, written and read back
    from stackbench.model.sizing import SizeRun

    assert store.sizings() == []
    sid = store.record_sizing("s", {"target": {"rate": 7.0}, "sizes": []}, ["nginx-fpm"], [])
    store.update_sizing(sid, [SizeRun("1 CPU, 1 GiB", 1)])
    assert store.sizing(sid).runs == (SizeRun("1 CPU, 1 GiB", 1),) and store.sizing(sid).target_rate == 7.0


# The default plan's run (`stackbench run`, 72 cells, 8 repetitions), written by the commit
# before v13 on the 2-core VM of bench/RESULTS.md; gzipped (1 MB as a store).
V12 = Path(__file__).parent / "data" / "store-v12-default.sqlite.gz"


def unpack_v12(tmp_path: Path) -> Path:
    import gzip

    path = tmp_path / "results.sqlite"
    path.write_bytes(gzip.decompress(V12.read_bytes()))
    return path


def test_v12_store_keeps_each_process_total_pss_and_invents_no_parts(tmp_path):
    path = unpack_v12(tmp_path)
    db = sqlite3.connect(path)
    before = db.execute("SELECT cell_id, pid, comm, rss_bytes, pss_bytes FROM processes ORDER BY cell_id, pid").fetchall()
    db.close()
    store = Store(path)
    assert store.migrated_from == [12, 13, 14, 15, 16, 17]
    after = [(c.id, p.pid, p.comm, p.rss_bytes, p.pss_bytes, p.pss_anon_bytes, p.own_bytes)
             for c in store.cells(1) for p in store.processes(c.id)]
    assert [a[:5] for a in after] == [tuple(b) for b in before] and len(after) == 1416
    assert all(a[5] is None and a[6] is None for a in after)  # not read then: unknown, never guessed
# Written by the commit before v13 (1195bcc): store-v10.sqlite brought to v12 by that lab,
# and a sizing of its run 1 as a v12 lab stored it (a target of 180,000 one-request visits a day).
V12_SIZING = Path(__file__).parent / "data" / "store-v12.sqlite"


def test_v12_sizing_gains_an_unknown_yardstick_and_reads_its_visits_as_hits(tmp_path):
    from stackbench.model.environment import Yardstick
    from stackbench.model.sizing import SizeRun

    path = tmp_path / "results.sqlite"
    shutil.copy(V12_SIZING, path)
    store = Store(path)
    assert store.migrated_from == [12, 13, 14, 15, 16, 17]
    (old,) = store.sizings()
    assert old.yardstick is None  # not measured then: never invented
    assert old.runs == (SizeRun("1 CPU, 1 GiB", 1),) and old.target_rate == 6.25
    assert old.hits_per_day == 180_000  # a visit was one request: the same count, named as hits
    assert old.cpus("1 CPU, 1 GiB") == 1.0 and old.core is None
    stick = Yardstick(680.0, 650.0, 701.0, 9, "8.2.36", 0)
    store.update_sizing(old.id, list(old.runs), stick)
    assert store.sizing(old.id).yardstick == stick
    assert [(c.seq, c.stack_label) for c in store.cells(1)] == [(0, "nginx-fpm"), (1, "nginx-fpm")]


V14 = Path(__file__).parent / "data" / "store-v14.sqlite"  # written by the commit before v15 (nginx-fpm, 2 cells, php-hello c=4, warmup 0.2 s)


def test_v14_store_keeps_its_cells_and_their_warm_ups_are_not_invented(tmp_path):
    from stackbench.analysis import warmup as warmup_analysis
    from stackbench.model.warmup import StoredWarmup, WarmupWindow

    store = migrated_like_before(V14, tmp_path, [14, 15, 16, 17])
    cells = store.cells(1)
    # the plan's fixed warm-up was not kept with its cells: unknown, not "none"
    assert [c.warmup for c in cells] == [None, None]
    rows = store.db.execute("SELECT warmup_json, warmup_us, steady FROM cells").fetchall()
    assert [tuple(r) for r in rows] == [(None, None, None)] * 2
    assert warmup_analysis.of(cells) == []
    # a new cell's warm-up is written and read back as it was, its columns for SQL readers
    warmed = StoredWarmup(3.5, False, True, (WarmupWindow(1.0, 900), WarmupWindow(2.5, 4000)), 0.05, 3.5, 0.31)
    new = store.record_cell(1, replace(cells[0], seq=7, warmup=warmed))
    assert store.cells(1)[-1].warmup == warmed and new.warmup == warmed
    assert tuple(store.db.execute("SELECT warmup_us, steady FROM cells WHERE seq = 7").fetchone()) == (3500000, 0)


# Written by the commit before v15 (9f761b7): store-v12.sqlite brought to v14 by that lab.
V14_CACHES = Path(__file__).parent / "data" / "store-v14-caches.sqlite"


def test_v14_cells_have_no_cache_counts_and_a_new_cell_keeps_its_own(tmp_path):
    from dataclasses import replace

    from stackbench.model.cost import CacheCounts

    path = tmp_path / "results.sqlite"
    shutil.copy(V14_CACHES, path)
    store = Store(path)
    assert store.migrated_from == [14, 15, 16, 17]
    old = store.cells(1)
    assert [(c.seq, c.stack_label) for c in old] == [(0, "nginx-fpm"), (1, "nginx-fpm")]
    assert all(c.cost.cache is None for c in old)  # not read then: unknown, never guessed
    counts = CacheCounts("varnishd", hits=9, misses=1, passes=0)
    kept = store.record_cell(1, replace(old[0], seq=2, cost=replace(old[0].cost, cache=counts)))
    assert store.cells(1)[-1].cost.cache == counts and kept.seq == 2


# Written by the commit before the slow cost (411aa03): store-v12.sqlite brought to v14 by that lab,
# and a tuning of its run 1 as a v14 lab stored it (small-vps's question, on the home page).
V14_TUNING = Path(__file__).parent / "data" / "store-v14-tuning.sqlite"


def test_v14_tuning_gains_an_unknown_slow_cost_and_a_new_one_keeps_it(tmp_path):
    from stackbench.model.tuning import SlowCost, SlowPool

    path = tmp_path / "results.sqlite"
    shutil.copy(V14_TUNING, path)
    store = Store(path)
    assert store.migrated_from == [14, 15, 16, 17]
    (old,) = store.tunings()
    assert old.slow_cost is None and old.slow_paths == {}  # its workload had no slow request: never invented
    assert (old.workload, old.chosen_size, old.knobs) == ("wordpress-home", 1, {"pm": "static", "pm_max_children": 1})
    assert old.memory is not None and old.memory.bound == 27
    cost = SlowCost(1000, 0.02, 63.0, SlowPool(1, False, 16.1, 4_200_000, 4_900_000, 0.31),
                    SlowPool(2, False, 22.9, 3_000_000, 1_400_000, 0.07))
    key = {**old.key, "workload": "wordpress-mix-slow"}
    tid = store.record_tuning(1, 1, "nginx-fpm", "wordpress-mix-slow", key,
                              {**old.question, **key, "slow": {"/?s=cache&stackbench_slow=1000": 1000}}, None,
                              {"1 worker": 1, "2 workers": 2}, 2, {"pm": "static", "pm_max_children": 2}, "best", cost)
    back = store.tuning(tid)
    assert back.slow_cost == cost and back.slow_paths == {"/?s=cache&stackbench_slow=1000": 1000}
    assert store.tuning(old.id).slow_cost is None
    assert [(c.seq, c.stack_label) for c in store.cells(1)] == [(0, "nginx-fpm"), (1, "nginx-fpm")]


# Written by the commit before v18 (d0003b0): store-v14.sqlite brought to v17 by that lab.
V17 = Path(__file__).parent / "data" / "store-v17.sqlite"


def test_v17_cells_were_not_visits_and_a_new_cell_keeps_its_logged_in_share(tmp_path):
    store = migrated_like_before(V17, tmp_path, [17])
    cells = store.cells(1)
    assert [c.logged_in for c in cells] == [None, None]  # no visits then: unknown is None, never 0
    new = store.record_cell(1, replace(cells[0], seq=9, logged_in=0.5))
    assert new.logged_in == 0.5 and store.cells(1)[-1].logged_in == 0.5
    assert store.db.execute("SELECT logged_in FROM cells WHERE seq = 9").fetchone()[0] == 0.5

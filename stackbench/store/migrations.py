"""Bringing an older results store up to the current schema, so a new stackbench never
orphans the results a user already measured.

Each step takes the store from version N to N + 1 (PRAGMA user_version) inside one
transaction: a step either lands whole or not at all. Steps are never edited once
released; a schema change adds a step. Each is tested on a real store file of its
version kept under tests/data/ (tests/test_migrations.py).

Versions 1 and 2 were development-only and never released: they are refused.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Callable

from stackbench.store.schema import SCHEMA, VERSION

OLDEST_MIGRATABLE = 3


def _v3_to_v4(db: sqlite3.Connection) -> None:
    """v4: warnings become caveats {code, params} (stored v3 sentences are kept under
    the code `text`); the unserved counts get their own columns (read from the stored
    engine document); runs keep the checked plan beside its source (NULL here: a v3
    run did not store it)."""
    db.execute("ALTER TABLE runs ADD COLUMN plan_checked_json TEXT")
    db.execute("ALTER TABLE cells ADD COLUMN connections_measured INTEGER")
    db.execute("ALTER TABLE cells ADD COLUMN connections_without_response INTEGER")
    db.execute("""UPDATE cells SET
                    connections_measured = json_extract(engine_json, '$.connections_measured'),
                    connections_without_response = json_extract(engine_json, '$.connections_without_response')
                  WHERE engine_json IS NOT NULL""")
    rows = db.execute("SELECT id, warnings_json FROM cells").fetchall()
    for cell_id, raw in rows:
        caveats = [{"code": "text", "params": {"text": w}} if isinstance(w, str) else w
                   for w in json.loads(raw or "[]")]
        db.execute("UPDATE cells SET warnings_json = ? WHERE id = ?", (json.dumps(caveats), cell_id))


def _v4_to_v5(db: sqlite3.Connection) -> None:
    """v5: runs say how many repetitions ran and why they stopped (adaptive
    repetitions); NULL for older runs."""
    db.execute("ALTER TABLE runs ADD COLUMN stop_json TEXT")


def _v5_to_v6(db: sqlite3.Connection) -> None:
    """v6: the share of the server cores' time the hypervisor took (steal) per cell."""
    db.execute("ALTER TABLE cells ADD COLUMN server_steal_share REAL")


def _v6_to_v7(db: sqlite3.Connection) -> None:
    """v7: page-mode figures (pages/s, page load time; filled from the stored engine
    document), PHP's state in force and the services' cost (NULL before: not read)."""
    for column in ("pages_completed INTEGER", "pages_failed INTEGER", "pages_per_s REAL",
                   "page_load_p50_us INTEGER", "page_load_p99_us INTEGER", "php_json TEXT",
                   "service_mem_peak_bytes INTEGER", "service_cpu_us INTEGER"):
        db.execute(f"ALTER TABLE cells ADD COLUMN {column}")
    db.execute("""UPDATE cells SET
                    pages_completed = json_extract(engine_json, '$.pages.completed'),
                    pages_failed = json_extract(engine_json, '$.pages.failed'),
                    pages_per_s = json_extract(engine_json, '$.pages.per_s'),
                    page_load_p50_us = json_extract(engine_json, '$.page_load_us.percentiles."50"'),
                    page_load_p99_us = json_extract(engine_json, '$.page_load_us.percentiles."99"')
                  WHERE engine_json IS NOT NULL AND json_extract(engine_json, '$.pages') IS NOT NULL""")


def _v7_to_v8(db: sqlite3.Connection) -> None:
    """v8: load models. Every older cell was a closed loop at its concurrency (`load`
    'closed', no rate, leg or step); open-loop counts are read from the stored engine
    document (NULL in closed loop and for engines before 0.4); capacity searches get
    their table."""
    for column in ("load TEXT NOT NULL DEFAULT 'closed'", "rate REAL", "leg TEXT", "step INTEGER",
                   "requests_due INTEGER", "requests_not_sent INTEGER"):
        db.execute(f"ALTER TABLE cells ADD COLUMN {column}")
    db.execute("""UPDATE cells SET rate = json_extract(engine_json, '$.config.rate'),
                    requests_due = json_extract(engine_json, '$.requests.due'),
                    requests_not_sent = json_extract(engine_json, '$.requests.not_sent')
                  WHERE engine_json IS NOT NULL""")
    db.execute("UPDATE cells SET load = 'rate' WHERE rate IS NOT NULL")
    db.execute("""CREATE TABLE searches (
        run_id INTEGER NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL, repetition INTEGER NOT NULL,
        stack_label TEXT NOT NULL, workload TEXT NOT NULL, keepalive INTEGER NOT NULL, stopped TEXT NOT NULL,
        seconds REAL, PRIMARY KEY (run_id, seq))""")


def _v8_to_v9(db: sqlite3.Connection) -> None:
    """v9: where the clients were and what the machine allowed. Every older cell ran on
    loopback with no visitor classes and no machine limits; runs get the network
    profiles' calibration (NULL: loopback, nothing to calibrate)."""
    db.execute("ALTER TABLE runs ADD COLUMN network_json TEXT")
    for column in ("network TEXT NOT NULL DEFAULT 'loopback'", "background TEXT NOT NULL DEFAULT 'none'", "classes_json TEXT",
                   "memory_events_json TEXT", "oom_kills INTEGER"):
        db.execute(f"ALTER TABLE cells ADD COLUMN {column}")


def _v9_to_v10(db: sqlite3.Connection) -> None:
    """v10: protocols (HTTPS, HTTP/2). Every older cell spoke HTTP/1.1 in clear text
    (`protocol` 'http/1.1', no handshake, no streams, nothing negotiated); what the engine
    spoke is read from its stored document where it said (NULL for engines before TLS)."""
    for column in ("protocol TEXT NOT NULL DEFAULT 'http/1.1'", "handshake TEXT", "streams INTEGER",
                   "negotiated_json TEXT", "protocol_spoken TEXT", "tls_full INTEGER", "tls_resumed INTEGER",
                   "handshake_p50_us INTEGER", "handshake_p99_us INTEGER"):
        db.execute(f"ALTER TABLE cells ADD COLUMN {column}")
    db.execute("""UPDATE cells SET protocol_spoken = json_extract(engine_json, '$.protocol')
                  WHERE engine_json IS NOT NULL""")


def _v10_to_v11(db: sqlite3.Connection) -> None:
    """v11: tunings (`stackbench tune`). An older store has none. (The table as v11 made
    it, written out: a later schema's must not leak into this step.)"""
    db.execute("""CREATE TABLE tunings (
        id INTEGER PRIMARY KEY, probe_run_id INTEGER REFERENCES runs(id), run_id INTEGER NOT NULL REFERENCES runs(id),
        stack_id TEXT NOT NULL, workload TEXT NOT NULL, key_json TEXT NOT NULL, question_json TEXT NOT NULL,
        memory_json TEXT, sizes_json TEXT NOT NULL, chosen_size INTEGER NOT NULL, knobs_json TEXT NOT NULL,
        reason TEXT NOT NULL, created_at TEXT NOT NULL)""")


def _v11_to_v12(db: sqlite3.Connection) -> None:
    """v12: sizings (a plan's [sizing]). An older store has none."""
    db.execute("""CREATE TABLE sizings (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL, question_json TEXT NOT NULL, stacks_json TEXT NOT NULL,
        runs_json TEXT NOT NULL, created_at TEXT NOT NULL)""")


def _v12_to_v13(db: sqlite3.Connection) -> None:
    """v13: PSS's parts per process (anonymous, shmem, file-backed). An older store's
    processes have the total only (NULL parts: not read then, never guessed)."""
    for column in ("pss_anon_bytes INTEGER", "pss_shmem_bytes INTEGER", "pss_file_bytes INTEGER"):
        db.execute(f"ALTER TABLE processes ADD COLUMN {column}")


def _v13_to_v14(db: sqlite3.Connection) -> None:
    """v14: a sizing keeps the yardstick of the core its sizes were measured on
    (stackbench/yardstick/). An older sizing's is not known: NULL (its runs did not
    measure one either)."""
    db.execute("ALTER TABLE sizings ADD COLUMN yardstick_json TEXT")


def _v14_to_v15(db: sqlite3.Connection) -> None:
    """v15: how each cell's stack was warmed (a fixed time, or until steady). An older
    cell's warm-up was the plan's fixed one, not kept with the cell: NULL."""
    for column in ("warmup_json TEXT", "warmup_us INTEGER", "steady INTEGER"):
        db.execute(f"ALTER TABLE cells ADD COLUMN {column}")


def _v15_to_v16(db: sqlite3.Connection) -> None:
    """v16: a cache in front's own counts per cell (Varnish's hits, misses and passes).
    An older cell's were not read: NULL (its X-Cache answers, counted by the engine, are
    in its engine document as before)."""
    db.execute("ALTER TABLE cells ADD COLUMN cache_json TEXT")


def _v16_to_v17(db: sqlite3.Connection) -> None:
    """v17: a tuning keeps what one deliberately slow request cost the other visitors (a
    workload with slow requests: analysis/slow_requests.py). An older tuning's workload had
    none, or it was not measured then: NULL."""
    db.execute("ALTER TABLE tunings ADD COLUMN slow_cost_json TEXT")


def _v17_to_v18(db: sqlite3.Connection) -> None:
    """v18: a cell of visits keeps its share of logged-in visitors (a plan's [visit]). An
    older store has no visits: NULL."""
    db.execute("ALTER TABLE cells ADD COLUMN logged_in REAL")


# from version -> the step that makes version + 1
STEPS: dict[int, Callable[[sqlite3.Connection], None]] = {
    3: _v3_to_v4,
    4: _v4_to_v5,
    5: _v5_to_v6,
    6: _v6_to_v7,
    7: _v7_to_v8,
    8: _v8_to_v9,
    9: _v9_to_v10,
    10: _v10_to_v11,
    11: _v11_to_v12,
    12: _v12_to_v13,
    13: _v13_to_v14,
    14: _v14_to_v15,
    15: _v15_to_v16,
    16: _v16_to_v17,
    17: _v17_to_v18,
}


class TooNew(Exception):
    pass


class TooOld(Exception):
    pass


def pending(db: sqlite3.Connection) -> int | None:
    """The version of a store that migrate() would change, else None."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    return version if OLDEST_MIGRATABLE <= version < VERSION else None


def migrate(db: sqlite3.Connection) -> list[int]:
    """Bring `db` to VERSION; returns the versions it passed through (empty if none).
    An empty file gets the current schema directly."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version == 0 and not db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone():
        with db:
            db.executescript(SCHEMA)
            db.execute(f"PRAGMA user_version = {VERSION}")
        return []
    if version > VERSION:
        raise TooNew(version)
    if version < OLDEST_MIGRATABLE:
        raise TooOld(version)
    passed = []
    while version < VERSION:
        step = STEPS[version]
        # One explicit transaction per step: Python's sqlite3 would run ALTER TABLE in
        # autocommit mode, and a step must land whole or not at all.
        db.execute("BEGIN")
        try:
            step(db)
            db.execute(f"PRAGMA user_version = {version + 1}")
            db.commit()
        except BaseException:
            db.rollback()
            raise
        passed.append(version)
        version += 1
    return passed

"""The results store: SQLite, in this one module (STYLE.md).

A run id on every row; one transaction per cell, so a cell is stored whole or not at all
and an interrupted plan keeps everything measured before the interruption; the schema
version lives in PRAGMA user_version. Measurement writes here; reports only read.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from stackbench.errors import UsageError
from stackbench.monitor.session import CellCost

SCHEMA_VERSION = 3

SCHEMA = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL,           -- UTC, ISO 8601
    finished_at TEXT,
    status TEXT NOT NULL,               -- running | complete | interrupted | failed
    error TEXT,
    plan_name TEXT NOT NULL,
    plan_source TEXT NOT NULL,
    plan_json TEXT NOT NULL,
    environment_json TEXT NOT NULL
);
CREATE TABLE configs (                  -- rendered config files, stored once per content
    hash TEXT PRIMARY KEY,
    files_json TEXT NOT NULL            -- {relative path: text}
);
CREATE TABLE cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    seq INTEGER NOT NULL,
    repetition INTEGER NOT NULL,
    stack_id TEXT NOT NULL,
    stack_label TEXT NOT NULL,
    knobs_json TEXT NOT NULL,           -- every knob, defaults resolved
    workload TEXT NOT NULL,
    concurrency INTEGER NOT NULL,
    keepalive INTEGER NOT NULL,
    status TEXT NOT NULL,               -- ok | failed
    error TEXT,
    config_hash TEXT REFERENCES configs(hash),
    versions_json TEXT NOT NULL,
    pinning_json TEXT NOT NULL,
    started_unix_us INTEGER,
    duration_us INTEGER,
    requests_completed INTEGER,
    requests_failed INTEGER,
    non_2xx INTEGER,
    requests_per_s REAL,
    latency_mean_us REAL,
    latency_p50_us INTEGER,
    latency_p99_us INTEGER,
    engine_json TEXT,                   -- the engine's whole result document
    warnings_json TEXT NOT NULL DEFAULT '[]',
    -- what the stack cost during the measured window (NULL = not measured)
    mem_peak_bytes INTEGER,             -- cgroup peak, page cache included
    mem_rss_peak_bytes INTEGER,         -- highest sampled anonymous memory (+ shmem)
    cpu_user_us INTEGER,
    cpu_system_us INTEGER,              -- user/system: USER_HZ resolution (10 ms) on cgroup v1
    cpu_total_us INTEGER,               -- user + system, exact (cpuacct.usage)
    cpu_window_us INTEGER,              -- wall time the CPU figures cover
    procs_max INTEGER,
    threads_max INTEGER,
    syscalls_total INTEGER,             -- over syscalls_window_us of the profile pass
    syscalls_window_us INTEGER,
    syscalls_requests_per_s REAL,       -- the profile pass's throughput (perf slows it)
    engine_cpu_us INTEGER,
    monitor_notes_json TEXT NOT NULL DEFAULT '[]',
    UNIQUE (run_id, seq)
);
CREATE INDEX cells_by_run ON cells(run_id, seq);
CREATE TABLE samples (                  -- the stack's cgroup, every sampling interval
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    t_unix_us INTEGER NOT NULL,         -- same clock as the engine's started_unix_us
    mem_usage_bytes INTEGER,
    mem_rss_bytes INTEGER,
    mem_shmem_bytes INTEGER,
    mem_cache_bytes INTEGER,
    cpu_usage_us INTEGER,               -- cumulative since the cgroup was made
    cpu_user_us INTEGER,
    cpu_system_us INTEGER,
    procs INTEGER,
    threads INTEGER
);
CREATE INDEX samples_by_cell ON samples(cell_id, t_unix_us);
CREATE TABLE processes (                -- one snapshot per cell, right after the load
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    pid INTEGER NOT NULL,
    ppid INTEGER NOT NULL,
    comm TEXT NOT NULL,
    rss_bytes INTEGER,
    pss_bytes INTEGER,
    threads INTEGER
);
CREATE TABLE status_samples (          -- the servers' own status pages, about once a second
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    t_unix_us INTEGER NOT NULL,
    server TEXT NOT NULL,
    values_json TEXT NOT NULL
);
CREATE TABLE syscalls (                 -- counts over the cell's syscalls_window_us (profile pass)
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    name TEXT NOT NULL,                 -- a call, "total" (all calls) or "other"
    count INTEGER NOT NULL,
    PRIMARY KEY (cell_id, name)
);
"""


@dataclass
class CellRecord:
    """What the runner learned about one cell."""

    seq: int
    repetition: int
    stack_id: str
    stack_label: str
    knobs: dict[str, Any]
    workload: str
    concurrency: int
    keepalive: bool
    status: str
    versions: dict[str, str | None]
    pinning: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)
    engine: dict[str, Any] | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    cost: "CellCost | None" = None


class Store:
    def __init__(self, path: str | Path = ":memory:", *, must_exist: bool = False):
        """`must_exist`: for commands that only read, so that a mistyped --db is an
        error rather than a new empty file."""
        self.path = str(path)
        if must_exist and self.path != ":memory:" and not Path(self.path).exists():
            raise UsageError(f"no results store at {self.path}", hint="`stackbench run` makes one; --db names another")
        try:
            self.db = sqlite3.connect(self.path)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.DatabaseError as e:
            raise UsageError(f"{self.path} is not a stackbench results store ({e})",
                             hint="name another file with --db") from None

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version != 0:
            raise UsageError(f"{self.path} has results-store schema {version}; this stackbench reads {SCHEMA_VERSION}",
                             hint="use another --db file")
        with self.db:
            self.db.executescript(SCHEMA)
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        self.db.close()

    # -- writing -----------------------------------------------------------------------
    def begin_run(self, plan_name: str, plan_source: str, plan: dict, environment: dict) -> int:
        with self.db:
            cur = self.db.execute(
                "INSERT INTO runs (started_at, status, plan_name, plan_source, plan_json, environment_json)"
                " VALUES (?, 'running', ?, ?, ?, ?)",
                (_now(), plan_name, plan_source, json.dumps(plan), json.dumps(environment)))
        return int(cur.lastrowid)

    def finish_run(self, run_id: int, status: str, error: str | None = None) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET status = ?, error = ?, finished_at = ? WHERE id = ?",
                            (status, error, _now(), run_id))

    def record_cell(self, run_id: int, rec: CellRecord) -> int:
        """One transaction: the config files (deduplicated) and the cell row."""
        doc = rec.engine or {}
        lat = doc.get("latency_us") or {}
        pct = lat.get("percentiles") or {}
        req = doc.get("requests") or {}
        config_hash = None
        with self.db:
            if rec.files:
                blob = json.dumps(rec.files, sort_keys=True)
                config_hash = hashlib.sha256(blob.encode()).hexdigest()
                self.db.execute("INSERT OR IGNORE INTO configs (hash, files_json) VALUES (?, ?)", (config_hash, blob))
            cur = self.db.execute(
                """INSERT INTO cells (run_id, seq, repetition, stack_id, stack_label, knobs_json, workload,
                   concurrency, keepalive, status, error, config_hash, versions_json, pinning_json,
                   started_unix_us, duration_us, requests_completed, requests_failed, non_2xx,
                   requests_per_s, latency_mean_us, latency_p50_us, latency_p99_us, engine_json, warnings_json)
                   VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                (run_id, rec.seq, rec.repetition, rec.stack_id, rec.stack_label, json.dumps(rec.knobs),
                 rec.workload, rec.concurrency, int(rec.keepalive), rec.status, rec.error, config_hash,
                 json.dumps(rec.versions), json.dumps(rec.pinning),
                 doc.get("started_unix_us"), doc.get("duration_us"), req.get("completed"), req.get("failed"),
                 req.get("non_2xx"), doc.get("requests_per_s"), lat.get("mean"), pct.get("50"), pct.get("99"),
                 json.dumps(rec.engine) if rec.engine is not None else None, json.dumps(rec.warnings)))
            cell_id = int(cur.lastrowid)
            if rec.cost is not None:
                self._record_cost(cell_id, rec.cost, (doc.get("engine_cpu") or {}))
        return cell_id

    def _record_cost(self, cell_id: int, cost: CellCost, engine_cpu: dict) -> None:
        s = cost.samples
        rss = [x.mem_rss_bytes + (x.mem_shmem_bytes or 0) for x in s if x.mem_rss_bytes is not None]
        sc = cost.syscalls
        engine_us = None
        if engine_cpu.get("user_us") is not None:
            engine_us = engine_cpu["user_us"] + engine_cpu.get("system_us", 0)
        self.db.execute(
            """UPDATE cells SET mem_peak_bytes = ?, mem_rss_peak_bytes = ?, cpu_user_us = ?, cpu_system_us = ?,
               cpu_total_us = ?, cpu_window_us = ?, procs_max = ?, threads_max = ?, syscalls_total = ?, syscalls_window_us = ?,
               syscalls_requests_per_s = ?,
               engine_cpu_us = ?, monitor_notes_json = ? WHERE id = ?""",
            (cost.peak_mem_bytes, max(rss) if rss else None,
             _cpu_us(s, "user"), _cpu_us(s, "system"), _cpu_us(s, "usage"),
             (s[-1].t_unix_us - s[0].t_unix_us) if len(s) > 1 else None,
             max((x.procs for x in s if x.procs is not None), default=None),
             max((x.threads for x in s if x.threads is not None), default=None),
             sc.counts.get("total") if sc else None, int(sc.seconds * 1e6) if sc else None,
             cost.syscalls_requests_per_s if sc else None,
             engine_us, json.dumps(cost.notes), cell_id))
        self.db.executemany(
            "INSERT INTO samples VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [(cell_id, x.t_unix_us, x.mem_usage_bytes, x.mem_rss_bytes, x.mem_shmem_bytes, x.mem_cache_bytes,
              x.cpu_usage_us, x.cpu_user_us, x.cpu_system_us, x.procs, x.threads) for x in s])
        self.db.executemany(
            "INSERT INTO processes VALUES (?,?,?,?,?,?,?)",
            [(cell_id, p.pid, p.ppid, p.comm, p.rss_bytes, p.pss_bytes, p.threads) for p in cost.processes])
        self.db.executemany(
            "INSERT INTO status_samples VALUES (?,?,?,?)",
            [(cell_id, x.t_unix_us, x.server, json.dumps(x.values)) for x in cost.status])
        if sc:
            named = {k: v for k, v in sc.counts.items() if k != "total"}
            rows = list(named.items()) + [("total", sc.counts.get("total", 0)),
                                          ("other", max(0, sc.counts.get("total", 0) - sum(named.values())))]
            self.db.executemany("INSERT INTO syscalls VALUES (?,?,?)", [(cell_id, k, v) for k, v in rows])

    # -- reading -----------------------------------------------------------------------
    def run(self, run_id: int) -> dict:
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise UsageError(f"no run {run_id} in {self.path}", hint="`stackbench runs` lists the stored runs")
        d = dict(row)
        d["plan"] = json.loads(d.pop("plan_json"))
        d["environment"] = json.loads(d.pop("environment_json"))
        return d

    def runs(self) -> list[dict]:
        rows = self.db.execute(
            "SELECT r.id, r.started_at, r.finished_at, r.status, r.plan_name, "
            "(SELECT COUNT(*) FROM cells c WHERE c.run_id = r.id) AS cells FROM runs r ORDER BY r.id").fetchall()
        return [dict(r) for r in rows]

    def latest_run_id(self) -> int | None:
        row = self.db.execute("SELECT MAX(id) FROM runs").fetchone()
        return row[0]

    def cells(self, run_id: int) -> list[dict]:
        return list(self._cells(run_id))

    def _cells(self, run_id: int) -> Iterator[dict]:
        for row in self.db.execute("SELECT * FROM cells WHERE run_id = ? ORDER BY seq", (run_id,)):
            d = dict(row)
            d["keepalive"] = bool(d["keepalive"])
            for key in ("knobs", "versions", "pinning", "engine", "warnings", "monitor_notes"):
                raw = d.pop(f"{key}_json")
                d[key] = json.loads(raw) if raw is not None else None
            yield d

    def samples(self, cell_id: int) -> list[dict]:
        rows = self.db.execute("SELECT * FROM samples WHERE cell_id = ? ORDER BY t_unix_us", (cell_id,))
        return [dict(r) for r in rows]

    def processes(self, cell_id: int) -> list[dict]:
        rows = self.db.execute("SELECT * FROM processes WHERE cell_id = ? ORDER BY pid", (cell_id,))
        return [dict(r) for r in rows]

    def status_samples(self, cell_id: int) -> list[dict]:
        rows = self.db.execute("SELECT * FROM status_samples WHERE cell_id = ? ORDER BY t_unix_us", (cell_id,))
        return [{**dict(r), "values": json.loads(r["values_json"])} for r in rows]

    def syscalls(self, cell_id: int) -> dict[str, int]:
        rows = self.db.execute("SELECT name, count FROM syscalls WHERE cell_id = ?", (cell_id,))
        return {r["name"]: r["count"] for r in rows}

    def cell(self, run_id: int, seq: int) -> dict:
        self.run(run_id)  # "no run N" before "no cell"
        for c in self._cells(run_id):
            if c["seq"] == seq:
                return c
        raise UsageError(f"run {run_id} has no cell {seq}", hint="`stackbench show RUN` lists the cells")

    def config_files(self, config_hash: str) -> dict[str, str]:
        row = self.db.execute("SELECT files_json FROM configs WHERE hash = ?", (config_hash,)).fetchone()
        return json.loads(row[0]) if row else {}


def _cpu_us(samples: list, kind: str) -> int | None:
    """CPU time over the sampled window: last cumulative value minus the first."""
    vals = [getattr(x, f"cpu_{kind}_us") for x in samples]
    if len(vals) < 2 or vals[0] is None or vals[-1] is None:
        return None
    return vals[-1] - vals[0]


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")

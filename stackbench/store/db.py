"""The results store: SQLite, spoken only in this package (docs/architecture.md).

A run id on every row; one transaction per cell, so a cell is stored whole or not at all
and an interrupted plan keeps everything measured before the interruption; WAL, so a
kill -9 at any moment leaves a consistent file. The schema version lives in PRAGMA
user_version; older stores are migrated (migrations.py). Measurement writes the model's
types here (a StoredCell, with the runner's EngineResult and the monitor's StoredCost,
and the monitor's readings beside it); analysis reads the same types back (rows.py);
nothing here computes a figure.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Iterator

from stackbench.engine.result import Negotiated
from stackbench.errors import StorageError, UsageError
from stackbench.model.cell import StoredCell
from stackbench.model.cost import CgroupSample, ProcessMemory, StoredCost
from stackbench.model.environment import Yardstick
from stackbench.model.run import StoredRun, StoredSearch
from stackbench.model.sizing import SizeRun, StoredSizing
from stackbench.model.tuning import SlowCost, StoredTuning
from stackbench.monitor.session import CellReadings
from stackbench.states import CellStatus, RunStatus
from stackbench.store import migrations
from stackbench.store.schema import VERSION as SCHEMA_VERSION
from stackbench.store.rows import cell_of, process_of, run_of, sample_of, search_of, sizing_of, tuning_of

CRASHED_ERROR = "the lab stopped without a word (killed with -9, out of memory, or the machine went down)"


class Store:
    def __init__(self, path: str | Path = ":memory:", *, must_exist: bool = False):
        """`must_exist`: for commands that only read, so that a mistyped --db is an
        error rather than a new empty file."""
        self.path = str(path)
        if must_exist and self.path != ":memory:" and not Path(self.path).exists():
            raise UsageError(f"no results store at {self.path}", hint="`stackbench run` makes one; --db names another")
        try:
            self.db = sqlite3.connect(self.path, factory=_Connection)
            self.db.store_path = self.path
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA foreign_keys = ON")
            old = migrations.pending(self.db)
            if old is not None and self.path != ":memory:":
                # A copy of the store as it was, before the first write of a migration.
                self.backup_path: str | None = f"{self.path}.v{old}.bak"
                with sqlite3.connect(self.backup_path) as copy:
                    self.db.backup(copy)
            else:
                self.backup_path = None
            self.migrated_from = migrations.migrate(self.db)
            if self.path != ":memory:":
                # WAL + synchronous NORMAL: a committed cell survives kill -9 of the lab.
                # Only once the version is known: a store this stackbench refuses is
                # left byte for byte as it was.
                self.db.execute("PRAGMA journal_mode = WAL")
        except migrations.TooNew as e:
            raise UsageError(f"{self.path} was written by a newer stackbench (store schema {e.args[0]}; "
                             f"this one reads up to {SCHEMA_VERSION})",
                             hint="upgrade stackbench, or name another file with --db") from None
        except migrations.TooOld as e:
            raise UsageError(f"{self.path} has a pre-release store schema ({e.args[0]}) that cannot be migrated",
                             hint="name another file with --db") from None
        except sqlite3.OperationalError as e:  # the file could not be opened at all
            raise StorageError(f"cannot open the results store {self.path}: {e}",
                               hint="--db names a file in a directory that exists and is writable") from None
        except sqlite3.DatabaseError as e:
            raise UsageError(f"{self.path} is not a stackbench results store ({e})",
                             hint="name another file with --db") from None

    def close(self) -> None:
        self.db.close()

    def ensure_writable(self) -> None:
        """Before a run starts anything: a store that cannot be written (read-only, a
        full disk) fails now, in one sentence, not after its first cell. Rewrites the
        schema version it already has."""
        with self.db:
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            self.db.execute(f"PRAGMA user_version = {int(version)}")

    # -- writing -----------------------------------------------------------------------
    def begin_run(self, plan_name: str, plan_source: str, plan: dict[str, Any], plan_checked: dict[str, Any],
                  environment: dict[str, Any]) -> int:
        with self.db:
            cur = self.db.execute(
                "INSERT INTO runs (started_at, status, plan_name, plan_source, plan_json, plan_checked_json,"
                " environment_json) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (_now(), RunStatus.RUNNING.value, plan_name, plan_source, json.dumps(plan),
                 json.dumps(plan_checked), json.dumps(environment)))
        return int(cur.lastrowid or 0)

    def finish_run(self, run_id: int, status: RunStatus, error: str | None = None) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET status = ?, error = ?, finished_at = ? WHERE id = ?",
                            (RunStatus(status).value, error, _now(), run_id))

    def add_calibration(self, run_id: int, profile: str, calibration: dict[str, Any]) -> None:
        """A network profile's calibration, asked and measured (network/calibrate.py's
        document), added to the run's, by profile."""
        with self.db:
            row = self.db.execute("SELECT network_json FROM runs WHERE id = ?", (run_id,)).fetchone()
            network = json.loads(row[0]) if row and row[0] is not None else {}
            network[profile] = calibration
            self.db.execute("UPDATE runs SET network_json = ? WHERE id = ?", (json.dumps(network), run_id))

    def set_stop(self, run_id: int, stop: dict[str, Any] | None) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET stop_json = ? WHERE id = ?", (json.dumps(stop), run_id))

    def record_search(self, run_id: int, cell: Any, stopped: str, seconds: float | None) -> None:
        """How a capacity search ended (its probes are cells from `cell.seq` on)."""
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO searches VALUES (?,?,?,?,?,?,?,?)",
                            (run_id, cell.seq, cell.repetition, cell.stack.label, cell.workload,
                             int(cell.keepalive), stopped, seconds))

    def searches(self, run_id: int) -> dict[int, str]:
        """{first probe's seq: how the search stopped} of a run."""
        rows = self.db.execute("SELECT seq, stopped FROM searches WHERE run_id = ?", (run_id,))
        return {r["seq"]: r["stopped"] for r in rows}

    def search_rows(self, run_id: int) -> list[StoredSearch]:
        rows = self.db.execute("SELECT * FROM searches WHERE run_id = ? ORDER BY seq", (run_id,))
        return [search_of(r) for r in rows]

    def record_tuning(self, probe_run_id: int | None, run_id: int, stack_id: str, workload: str,
                      key: dict[str, Any], question: dict[str, Any], memory: dict[str, Any] | None,
                      sizes: dict[str, int], chosen_size: int, knobs: dict[str, Any], reason: str,
                      slow_cost: SlowCost | None = None) -> int:
        """A finished tuning; returns its id."""
        with self.db:
            cur = self.db.execute(
                "INSERT INTO tunings (probe_run_id, run_id, stack_id, workload, key_json, question_json, memory_json,"
                " sizes_json, chosen_size, knobs_json, reason, created_at, slow_cost_json)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (probe_run_id, run_id, stack_id, workload, json.dumps(key, sort_keys=True), json.dumps(question),
                 json.dumps(memory) if memory is not None else None, json.dumps(sizes), chosen_size,
                 json.dumps(knobs), reason, _now(), json.dumps(slow_cost.as_dict()) if slow_cost else None))
        return int(cur.lastrowid or 0)

    def tunings(self) -> list[StoredTuning]:
        return [tuning_of(r) for r in self.db.execute("SELECT * FROM tunings ORDER BY id")]

    def tuning(self, tuning_id: int) -> StoredTuning:
        row = self.db.execute("SELECT * FROM tunings WHERE id = ?", (tuning_id,)).fetchone()
        if row is None:
            raise UsageError(f"no tuning {tuning_id} in {self.path}", hint="`stackbench tunings` lists them")
        return tuning_of(row)

    def latest_tuning(self, key: dict[str, Any]) -> StoredTuning | None:
        """The newest tuning for exactly this question (TuneQuestion.key), or None."""
        row = self.db.execute("SELECT * FROM tunings WHERE key_json = ? ORDER BY id DESC LIMIT 1",
                              (json.dumps(key, sort_keys=True),)).fetchone()
        return tuning_of(row) if row else None

    def record_sizing(self, name: str, question: dict[str, Any], stacks: list[str], runs: list[SizeRun]) -> int:
        """A sizing's question and each size's run so far; returns its id (updated by
        `update_sizing` as sizes are measured, so an interrupted sizing keeps what it has)."""
        with self.db:
            cur = self.db.execute(
                "INSERT INTO sizings (name, question_json, stacks_json, runs_json, created_at) VALUES (?,?,?,?,?)",
                (name, json.dumps(question), json.dumps(stacks),
                 json.dumps([r.as_dict() for r in runs]), _now()))
        return int(cur.lastrowid or 0)

    def update_sizing(self, sizing_id: int, runs: list[SizeRun], yardstick: Yardstick | None = None) -> None:
        """Each size's run so far, and the yardstick of the core they were measured on."""
        with self.db:
            self.db.execute("UPDATE sizings SET runs_json = ?, yardstick_json = ? WHERE id = ?",
                            (json.dumps([r.as_dict() for r in runs]),
                             json.dumps(yardstick.as_dict()) if yardstick else None, sizing_id))

    def sizings(self) -> list[StoredSizing]:
        return [sizing_of(r) for r in self.db.execute("SELECT * FROM sizings ORDER BY id")]

    def sizing(self, sizing_id: int) -> StoredSizing:
        row = self.db.execute("SELECT * FROM sizings WHERE id = ?", (sizing_id,)).fetchone()
        if row is None:
            raise UsageError(f"no sizing {sizing_id} in {self.path}", hint="`stackbench sizings` lists them")
        return sizing_of(row)

    def forget_searches(self, run_id: int, seqs: list[int]) -> None:
        with self.db:
            self.db.executemany("DELETE FROM searches WHERE run_id = ? AND seq = ?", [(run_id, s) for s in seqs])

    def forget_cells(self, run_id: int, seqs: list[int]) -> None:
        """Remove cells (and everything measured with them), in one transaction: a
        resumed run measures its failed cells again."""
        with self.db:
            ids = [r[0] for r in self.db.execute(
                f"SELECT id FROM cells WHERE run_id = ? AND seq IN ({','.join('?' * len(seqs))})", (run_id, *seqs))]
            for table in ("samples", "processes", "status_samples", "syscalls"):
                self.db.executemany(f"DELETE FROM {table} WHERE cell_id = ?", [(i,) for i in ids])
            self.db.executemany("DELETE FROM cells WHERE id = ?", [(i,) for i in ids])

    def mark_crashed(self) -> list[int]:
        """Runs still `running` whose lab is gone (the caller holds the run lock, so no
        lab is measuring): marked crashed, in one transaction. Returns their ids."""
        with self.db:
            ids = [r[0] for r in self.db.execute("SELECT id FROM runs WHERE status = ? ORDER BY id",
                                                 (RunStatus.RUNNING.value,))]
            self.db.executemany("UPDATE runs SET status = ?, error = ? WHERE id = ?",
                                [(RunStatus.CRASHED.value, CRASHED_ERROR, i) for i in ids])
        return ids

    def reopen_run(self, run_id: int) -> None:
        """A stopped run is measuring again (`run --resume`)."""
        with self.db:
            self.db.execute("UPDATE runs SET status = ?, error = NULL, finished_at = NULL WHERE id = ?",
                            (RunStatus.RUNNING.value, run_id))

    def record_cell(self, run_id: int, cell: StoredCell, files: dict[str, str] | None = None,
                    readings: CellReadings | None = None) -> StoredCell:
        """One transaction: the config files (deduplicated), the cell row, and what its
        cost was derived from (`readings`: the monitor's). Returns the cell as stored:
        its row id, run and config hash set."""
        r = cell.engine
        pg = r.pages if r else None
        config_hash = None
        with self.db:
            if files:
                blob = json.dumps(files, sort_keys=True)
                config_hash = hashlib.sha256(blob.encode()).hexdigest()
                self.db.execute("INSERT OR IGNORE INTO configs (hash, files_json) VALUES (?, ?)", (config_hash, blob))
            cur = self.db.execute(
                """INSERT INTO cells (run_id, seq, repetition, stack_id, stack_label, knobs_json, workload,
                   concurrency, keepalive, status, error, config_hash, versions_json, pinning_json,
                   started_unix_us, duration_us, requests_completed, requests_failed, non_2xx,
                   requests_per_s, latency_mean_us, latency_p50_us, latency_p99_us, engine_json,
                   connections_measured, connections_without_response, engine_cpu_us, warnings_json,
                   pages_completed, pages_failed, pages_per_s, page_load_p50_us, page_load_p99_us, php_json,
                   load, rate, leg, step, requests_due, requests_not_sent)
                   VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                (run_id, cell.seq, cell.repetition, cell.stack_id, cell.stack_label, json.dumps(cell.knobs),
                 cell.workload, cell.concurrency, int(cell.keepalive), CellStatus(cell.status).value, cell.error,
                 config_hash, json.dumps(cell.versions), json.dumps(cell.pinning.as_dict()),
                 r and r.started_unix_us, r and r.duration_us, r and r.requests.completed,
                 r and r.requests.failed, r and r.requests.non_2xx, r and r.requests_per_s,
                 r and r.latency.mean_us, r and r.latency.p50_us, r and r.latency.p99_us,
                 json.dumps(r.raw) if r else None, r and r.clients.measured, r and r.clients.without_response,
                 r and r.engine_cpu_us, json.dumps([c.as_dict() for c in cell.caveats]),
                 pg and pg.completed, pg and pg.failed, pg and pg.per_s, pg and pg.load_p50_us,
                 pg and pg.load_p99_us, json.dumps(cell.php.as_dict()) if cell.php is not None else None,
                 cell.load, cell.rate, cell.leg, cell.step, r and r.requests.due, r and r.requests.not_sent))
            cell_id = int(cur.lastrowid or 0)
            self.db.execute("UPDATE cells SET network = ?, background = ?, classes_json = ?, logged_in = ? WHERE id = ?",
                            (cell.network, cell.background,
                             json.dumps(cell.classes.as_dict()) if cell.classes is not None else None,
                             cell.logged_in, cell_id))
            tls = r.tls if r else None
            self.db.execute(
                """UPDATE cells SET protocol = ?, handshake = ?, streams = ?, negotiated_json = ?, protocol_spoken = ?,
                   tls_full = ?, tls_resumed = ?, handshake_p50_us = ?, handshake_p99_us = ? WHERE id = ?""",
                (cell.protocol, cell.handshake, cell.streams,
                 json.dumps(_read_back(cell.negotiated)) if cell.negotiated is not None else None,
                 r and r.protocol, tls and tls.full, tls and tls.resumed, tls and tls.handshake.p50_us,
                 tls and tls.handshake.p99_us, cell_id))
            w = cell.warmup
            if w is not None:
                self.db.execute("UPDATE cells SET warmup_json = ?, warmup_us = ?, steady = ? WHERE id = ?",
                                (json.dumps(w.as_dict()), round(w.seconds * 1e6),
                                 None if w.steady is None else int(w.steady), cell_id))
            self._record_cost(cell_id, cell.cost)
            if readings is not None:
                self._record_readings(cell_id, readings)
        return replace(cell, id=cell_id, run_id=run_id, config_hash=config_hash)

    def _record_cost(self, cell_id: int, cost: StoredCost) -> None:
        self.db.execute(
            """UPDATE cells SET mem_peak_bytes = ?, mem_rss_peak_bytes = ?, cpu_user_us = ?, cpu_system_us = ?,
               cpu_total_us = ?, cpu_window_us = ?, procs_max = ?, threads_max = ?, syscalls_total = ?,
               syscalls_window_us = ?, syscalls_requests_per_s = ?, monitor_notes_json = ?, server_steal_share = ?,
               service_mem_peak_bytes = ?, service_cpu_us = ?
               WHERE id = ?""",
            (cost.peak_mem_bytes, cost.anon_peak_bytes, cost.cpu_user_us, cost.cpu_system_us, cost.cpu_total_us,
             cost.window_us, cost.procs_max, cost.threads_max, cost.syscalls_total, cost.syscalls_window_us,
             cost.syscalls_requests_per_s, json.dumps(list(cost.notes)), cost.server_steal_share,
             cost.service_mem_peak_bytes, cost.service_cpu_us, cell_id))
        if cost.cache is not None:  # a cache in front's own counts (NULL: none)
            self.db.execute("UPDATE cells SET cache_json = ? WHERE id = ?", (json.dumps(asdict(cost.cache)), cell_id))
        if cost.memory_events is not None:  # a machine profile's memory limit (NULL: none)
            self.db.execute("UPDATE cells SET memory_events_json = ?, oom_kills = ? WHERE id = ?",
                            (json.dumps(cost.memory_events.as_dict()), cost.oom_kills, cell_id))

    def _record_readings(self, cell_id: int, readings: CellReadings) -> None:
        """What the cost was derived from, in tables of their own."""
        self.db.executemany(
            "INSERT INTO samples VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [(cell_id, x.t_unix_us, x.mem_usage_bytes, x.mem_rss_bytes, x.mem_shmem_bytes, x.mem_cache_bytes,
              x.cpu_usage_us, x.cpu_user_us, x.cpu_system_us, x.procs, x.threads) for x in readings.samples])
        self.db.executemany(
            "INSERT INTO processes VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(cell_id, p.pid, p.ppid, p.comm, p.rss_bytes, p.pss_bytes, p.threads, p.pss_anon_bytes,
              p.pss_shmem_bytes, p.pss_file_bytes) for p in readings.processes])
        self.db.executemany(
            "INSERT INTO status_samples VALUES (?,?,?,?)",
            [(cell_id, x.t_unix_us, x.server, json.dumps(x.values)) for x in readings.status])
        sc = readings.syscalls
        if sc:
            named = {k: v for k, v in sc.counts.items() if k != "total"}
            rows = list(named.items()) + [("total", sc.counts.get("total", 0)),
                                          ("other", max(0, sc.counts.get("total", 0) - sum(named.values())))]
            self.db.executemany("INSERT INTO syscalls VALUES (?,?,?)", [(cell_id, k, v) for k, v in rows])

    # -- reading -----------------------------------------------------------------------
    def run(self, run_id: int) -> StoredRun:
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise UsageError(f"no run {run_id} in {self.path}", hint="`stackbench runs` lists the stored runs")
        return run_of(row)

    def runs(self) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT r.id, r.started_at, r.finished_at, r.status, r.plan_name, "
            "(SELECT COUNT(*) FROM cells c WHERE c.run_id = r.id) AS cells FROM runs r ORDER BY r.id").fetchall()
        return [dict(r) for r in rows]

    def latest_run_id(self) -> int | None:
        latest: int | None = self.db.execute("SELECT MAX(id) FROM runs").fetchone()[0]
        return latest

    def cells(self, run_id: int) -> list[StoredCell]:
        return list(self._cells(run_id))

    def _cells(self, run_id: int) -> Iterator[StoredCell]:
        for row in self.db.execute("SELECT * FROM cells WHERE run_id = ? ORDER BY seq", (run_id,)):
            yield cell_of(row)

    def samples(self, cell_id: int) -> list[CgroupSample]:
        rows = self.db.execute("SELECT * FROM samples WHERE cell_id = ? ORDER BY t_unix_us", (cell_id,))
        return [sample_of(r) for r in rows]

    def processes(self, cell_id: int) -> list[ProcessMemory]:
        rows = self.db.execute("SELECT * FROM processes WHERE cell_id = ? ORDER BY pid", (cell_id,))
        return [process_of(r) for r in rows]

    def status_samples(self, cell_id: int) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT * FROM status_samples WHERE cell_id = ? ORDER BY t_unix_us", (cell_id,))
        return [{**dict(r), "values": json.loads(r["values_json"])} for r in rows]

    def syscalls(self, cell_id: int) -> dict[str, int]:
        rows = self.db.execute("SELECT name, count FROM syscalls WHERE cell_id = ?", (cell_id,))
        return {r["name"]: r["count"] for r in rows}

    def cell(self, run_id: int, seq: int) -> StoredCell:
        self.run(run_id)  # "no run N" before "no cell"
        row = self.db.execute("SELECT * FROM cells WHERE run_id = ? AND seq = ?", (run_id, seq)).fetchone()
        if row is not None:
            return cell_of(row)
        raise UsageError(f"run {run_id} has no cell {seq}", hint="`stackbench show RUN` lists the cells")

    def config_files(self, config_hash: str) -> dict[str, str]:
        row = self.db.execute("SELECT files_json FROM configs WHERE hash = ?", (config_hash,)).fetchone()
        return json.loads(row[0]) if row else {}


class _Connection(sqlite3.Connection):
    """A failure to write the file (disk full, read-only, I/O error) becomes a StorageError
    that names it, wherever it happens: SQLite has rolled the transaction back, so what
    was committed before stays whole."""

    store_path = ""

    def execute(self, *args: Any) -> sqlite3.Cursor:
        try:
            return super().execute(*args)
        except sqlite3.OperationalError as e:
            raise _unwritable(self.store_path, e) from None

    def executemany(self, *args: Any) -> sqlite3.Cursor:
        try:
            return super().executemany(*args)
        except sqlite3.OperationalError as e:
            raise _unwritable(self.store_path, e) from None

    def __exit__(self, *exc: Any) -> Any:  # the commit of `with self.db:`
        try:
            return super().__exit__(*exc)
        except sqlite3.OperationalError as e:
            raise _unwritable(self.store_path, e) from None


def _unwritable(path: str, e: sqlite3.OperationalError) -> StorageError:
    return StorageError(f"cannot write the results store {path}: {e}",
                      hint="what was stored before stays in it: free space or fix the file, then "
                           "`stackbench runs` lists the runs and `stackbench run --resume RUN` finishes one")


def _read_back(n: Negotiated) -> dict[str, Any]:
    """What a stack agreed to when verified, as stacks/lifecycle.py reads it back (no
    connection count: one connection asked)."""
    return {"alpn": n.alpn, "version": n.version, "cipher": n.cipher, "group": n.group}


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")

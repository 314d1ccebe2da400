"""The store's rows as the model's types (stackbench/model/): the one place that knows
which column holds what. The engine's figures come back from its whole stored document,
parsed by the parser the runner used (EngineResult.from_doc); the columns beside it that
repeat those figures are for SQL readers and are not read here."""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Callable, TypeVar

from stackbench.engine.result import Caveat, EngineResult, Negotiated
from stackbench.model.cell import StoredCell
from stackbench.model.cost import CacheCounts, CgroupSample, MemoryEvents, ProcessMemory, StoredCost
from stackbench.model.environment import Environment, Yardstick
from stackbench.model.network import Calibration
from stackbench.model.php import PhpState
from stackbench.model.plan import CheckedPlan
from stackbench.model.run import StoredRun, StoredSearch
from stackbench.model.sizing import SizeRun, StoredSizing
from stackbench.model.tuning import SlowCost, StoredTuning, TuningMemory
from stackbench.model.stop import RepetitionStop
from stackbench.model.visitors import VisitorClasses
from stackbench.model.warmup import StoredWarmup
from stackbench.upkeep.pinning import Pinning
from stackbench.states import CellStatus, RunStatus

T = TypeVar("T")


def run_of(row: sqlite3.Row) -> StoredRun:
    return StoredRun(
        id=row["id"], started_at=row["started_at"], finished_at=row["finished_at"], status=RunStatus(row["status"]),
        error=row["error"], plan_name=row["plan_name"], plan_source=row["plan_source"],
        plan=json.loads(row["plan_json"]), plan_checked=_typed(CheckedPlan.from_dict, row["plan_checked_json"]),
        environment=Environment.from_dict(json.loads(row["environment_json"])), stop=_typed(RepetitionStop.from_dict, row["stop_json"]),
        network=_typed(_calibrations, row["network_json"]))


def cell_of(row: sqlite3.Row) -> StoredCell:
    doc = _json(row["engine_json"])
    return StoredCell(
        id=row["id"], run_id=row["run_id"], seq=row["seq"], repetition=row["repetition"], stack_id=row["stack_id"],
        stack_label=row["stack_label"], knobs=json.loads(row["knobs_json"]), workload=row["workload"],
        concurrency=row["concurrency"], keepalive=bool(row["keepalive"]), status=CellStatus(row["status"]),
        error=row["error"], config_hash=row["config_hash"], versions=json.loads(row["versions_json"]),
        pinning=Pinning.from_dict(json.loads(row["pinning_json"])),
        engine=EngineResult.from_doc(doc) if doc is not None else None,
        cost=_cost(row),
        caveats=tuple(Caveat.from_dict(c) for c in json.loads(row["warnings_json"])),  # [{code, params}]
        php=_typed(PhpState.from_dict, row["php_json"]), load=row["load"], rate=row["rate"], leg=row["leg"],
        step=row["step"], network=row["network"], background=row["background"],
        classes=_typed(VisitorClasses.from_dict, row["classes_json"]),
        protocol=row["protocol"], handshake=row["handshake"], streams=row["streams"],
        negotiated=Negotiated.from_dict(json.loads(row["negotiated_json"])) if row["negotiated_json"] else None,
        warmup=_typed(StoredWarmup.from_dict, row["warmup_json"]), logged_in=row["logged_in"])


def _cost(row: sqlite3.Row) -> StoredCost:
    events = _json(row["memory_events_json"])  # a machine profile's limit: hits, OOM kills, pressure
    return StoredCost(
        peak_mem_bytes=row["mem_peak_bytes"], anon_peak_bytes=row["mem_rss_peak_bytes"],
        cpu_user_us=row["cpu_user_us"], cpu_system_us=row["cpu_system_us"], cpu_total_us=row["cpu_total_us"],
        window_us=row["cpu_window_us"], procs_max=row["procs_max"], threads_max=row["threads_max"],
        syscalls_total=row["syscalls_total"], syscalls_window_us=row["syscalls_window_us"],
        syscalls_requests_per_s=row["syscalls_requests_per_s"],
        notes=tuple(json.loads(row["monitor_notes_json"] or "[]")),
        server_steal_share=row["server_steal_share"], service_mem_peak_bytes=row["service_mem_peak_bytes"],
        service_cpu_us=row["service_cpu_us"],
        memory_events=MemoryEvents.from_dict(events) if events is not None else None,
        oom_kills=row["oom_kills"], cache=_typed(CacheCounts.from_dict, row["cache_json"]))


def search_of(row: sqlite3.Row) -> StoredSearch:
    return StoredSearch(row["run_id"], row["seq"], row["repetition"], row["stack_label"], row["workload"],
                        bool(row["keepalive"]), row["stopped"], row["seconds"])


def sizing_of(row: sqlite3.Row) -> StoredSizing:
    runs = tuple(SizeRun.from_dict(r) for r in json.loads(row["runs_json"]))
    return StoredSizing(row["id"], row["name"], json.loads(row["question_json"]), tuple(json.loads(row["stacks_json"])),
                        runs, row["created_at"], _typed(Yardstick.from_dict, row["yardstick_json"]))


def tuning_of(row: sqlite3.Row) -> StoredTuning:
    memory = row["memory_json"]
    return StoredTuning(row["id"], row["probe_run_id"], row["run_id"], row["stack_id"], row["workload"],
                        json.loads(row["key_json"]), json.loads(row["question_json"]),
                        TuningMemory(**json.loads(memory)) if memory else None, json.loads(row["sizes_json"]),
                        row["chosen_size"],
                        json.loads(row["knobs_json"]), row["reason"], row["created_at"],
                        _typed(SlowCost.from_dict, row["slow_cost_json"]))


def sample_of(row: sqlite3.Row) -> CgroupSample:
    return CgroupSample(row["t_unix_us"], row["mem_usage_bytes"], row["mem_rss_bytes"], row["mem_shmem_bytes"],
                        row["mem_cache_bytes"], row["cpu_usage_us"], row["cpu_user_us"], row["cpu_system_us"],
                        row["procs"], row["threads"])


def process_of(row: sqlite3.Row) -> ProcessMemory:
    return ProcessMemory(row["pid"], row["ppid"], row["comm"], row["rss_bytes"], row["pss_bytes"], row["threads"],
                         row["pss_anon_bytes"], row["pss_shmem_bytes"], row["pss_file_bytes"])


def _calibrations(d: dict[str, Any]) -> dict[str, Calibration]:
    return {name: Calibration.from_dict(c) for name, c in d.items()}


def _json(text: str | None) -> Any:
    return json.loads(text) if text is not None else None


def _typed(parse: Callable[[dict[str, Any]], T], text: str | None) -> T | None:
    """A JSON column's document as the model's type (None: NULL, or a stored null)."""
    doc = _json(text)
    return parse(doc) if doc is not None else None

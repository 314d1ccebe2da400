"""Derived per-request figures (None when not computable) and the explain report (unit)."""

from __future__ import annotations

import io

from stackbench.analysis import metrics
from stackbench.model.cost import CgroupSample, StoredCost
from stackbench.monitor.session import CellReadings, count_syscalls, derive
from stackbench.monitor.syscalls import WindowCounts
from stackbench.report.text import explain
from stackbench.store import Store

from test_store import record
from cells import stored_cell
from stackbench.model.cost import ProcessMemory


def sample(t_s: float, cpu_us: int, rss: int) -> CgroupSample:
    return CgroupSample(int(t_s * 1e6), rss * 2, rss, 1000, 5000, cpu_us, cpu_us // 2, cpu_us // 2, 3, 4)


def readings(openat: int) -> CellReadings:
    samples = [sample(0, 0, 10 << 20), sample(2, 200_000, 12 << 20)]
    r = CellReadings(cost=derive(StoredCost(peak_mem_bytes=30 << 20), samples), samples=samples,
                     processes=[ProcessMemory(1, 0, "apache2", 8 << 20, 2 << 20, 1),
                                ProcessMemory(2, 1, "apache2", 8 << 20, 4 << 20, 1)])
    count_syscalls(r, WindowCounts({"total": 50_000 + openat, "read": 20_000, "openat": openat}, 2.0), 1234.5)
    return r


def stored(store: Store, run_id: int, seq: int, r: CellReadings, **kw) -> int:
    return store.record_cell(run_id, record(seq, cost=r.cost, **kw), readings=r).id


def test_none_when_not_computable():
    assert metrics.cpu_us_per_request(stored_cell(requests_completed=0, cpu_total_us=5)) is None
    assert metrics.cpu_us_per_request(stored_cell(requests_completed=10, cpu_total_us=None)) is None
    assert metrics.cpu_us_per_request(stored_cell(engine=None, cpu_total_us=5)) is None
    assert metrics.syscalls_per_request(stored_cell(syscalls_total=5, syscalls_window_us=0,
                                                    syscalls_requests_per_s=1)) is None
    assert metrics.per_process_pss([ProcessMemory(1, 0, "x", None, None, 1)]) == {}


def test_own_memory_is_anon_and_shmem_pss_and_adds_up_to_the_cgroups():
    """A worker's own memory leaves out its share of the machine's code pages (file PSS),
    which the cgroup is not charged for; summed over the stack it is the cgroup's anon +
    shmem (docs/methods.md, "Memory")."""
    mib = 1 << 20
    procs = [ProcessMemory(1, 0, "php-fpm8.2", 30 * mib, 9 * mib, 1, 3 * mib, 2 * mib, 4 * mib),
             ProcessMemory(2, 1, "php-fpm8.2", 20 * mib, 2 * mib, 1, 1 * mib, 0, 1 * mib),
             ProcessMemory(3, 1, "php-fpm8.2", 20 * mib, 2 * mib, 1, 1 * mib, 0, 1 * mib)]
    g = metrics.per_process_pss(procs)["php-fpm8.2"]
    assert (g.count, g.pss_total_bytes, g.own_total_bytes, g.file_total_bytes) == (3, 13 * mib, 7 * mib, 6 * mib)
    assert g.own_mean_bytes == 7 * mib / 3 and metrics.own_memory_bytes(procs) == 7 * mib
    # one process not split: the sum is unknown, not a smaller number
    assert metrics.own_memory_bytes(procs + [ProcessMemory(4, 1, "nginx", mib, mib, 1)]) is None
    assert metrics.own_memory_bytes([]) is None
    samples = [CgroupSample(1, 20 * mib, 5 * mib, 2 * mib, 3 * mib, 0, 0, 0, 3, 3),
               CgroupSample(2, 21 * mib, 5 * mib, 2 * mib, 3 * mib, 0, 0, 0, 3, 3),
               CgroupSample(3, None, None, None, None, 0, 0, 0, 3, 3)]
    assert metrics.cgroup_own_bytes(samples) == 7 * mib and metrics.cgroup_own_bytes([]) is None


def test_store_and_explain_a_pair():
    store = Store()
    run_id = store.begin_run("p", "s", {}, {}, {})
    a = stored(store, run_id, 0, readings(openat=0))
    b = stored(store, run_id, 1, readings(openat=10_000), stack_label="apache All")
    cells = store.cells(run_id)
    c = cells[0]
    # 2469 requests (see test_store.engine_doc); the profile pass ran at 1234.5 req/s for 2 s
    assert c.cost.cpu_total_us == 200_000 and metrics.cpu_us_per_request(c) == 200_000 / 2469
    assert metrics.syscalls_per_request(c) == 50_000 / (1234.5 * 2)
    assert metrics.memory_peak_bytes(c) == (12 << 20) + 1000 and c.cost.peak_mem_bytes == 30 << 20
    assert c.cost.procs_max == 3 and c.cost.threads_max == 4
    assert store.syscalls(a)["other"] == 30_000 and store.syscalls(b)["openat"] == 10_000
    pss = metrics.per_process_pss(store.processes(a))
    assert pss["apache2"] == metrics.ProcessGroup(2, 6 << 20, None, None, 16 << 20)
    assert pss["apache2"].pss_mean_bytes == 3 << 20 and pss["apache2"].own_mean_bytes is None  # not split: unknown

    out = io.StringIO()
    explain.render(cells[0], cells[1], explain.CellExtras(store.processes(a), store.syscalls(a)),
                   explain.CellExtras(store.processes(b), store.syscalls(b)), out)
    text = out.getvalue()
    lines = text.splitlines()
    first_call = lines[lines.index(next(x for x in lines if x.startswith("call"))) + 1]
    assert first_call.split()[0] == "openat"  # the largest difference comes first
    assert "+4.05" in first_call  # 10,000 calls / (1234.5 req/s × 2 s)
    assert "2 × 3.0" in text  # two apache2 processes, 3 MiB PSS each

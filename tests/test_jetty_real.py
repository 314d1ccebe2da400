"""jetty-fpm on the real servers (integration), in a few seconds: Jetty from Debian's jars
serves a static file and PHP through PHP-FPM, the JVM runs as the worker user inside the
stack's cgroup (so the stack's memory includes the JVM's), its FastCGI connections never
outnumber FPM's children, and after the stop no java, cgroup, run directory or JVM file
under /tmp is left."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stackbench import workloads
from stackbench.monitor.cgroup_stats import CgroupReader
from stackbench.stacks.lifecycle import StackInstance
from stackbench.stacks.registry import STACKS

from test_stacks_all import load, require_runnable
from test_stacks_knobs import established

pytestmark = pytest.mark.servers

WORKLOADS = [workloads.get("static-12b"), workloads.get("php-hello")]


def java_pids(inst: StackInstance) -> list[int]:
    return [p for p in inst.all_pids() if Path(f"/proc/{p}/comm").read_text().strip() == "java"]


def hsperfdata() -> set[Path]:
    return set(Path("/tmp").glob("hsperfdata_*/*"))


def test_jetty_serves_static_and_php_and_leaves_nothing(workdir):
    require_runnable("jetty-fpm")
    perf_before = hsperfdata()
    inst = StackInstance(STACKS["jetty-fpm"], {"pm": "static", "pm_max_children": 3}, cpus=[0],
                         workdir=workdir, workloads=WORKLOADS)
    with inst:
        inst.verify([w.id for w in WORKLOADS])
        # Sixteen clients on three PHP children: Jetty opens at most three FastCGI
        # connections, so no request waits behind one FPM never accepts.
        assert not load(inst.port, WORKLOADS[1], requests=400, connections=16, timeout_s=5)
        assert 0 < established(inst.ctx.aux_ports["php-fpm"]) <= 3
        assert not load(inst.port, WORKLOADS[0], requests=400, connections=16, timeout_s=5)

        [java] = java_pids(inst)
        assert inst.pids()["jetty"] == [java]
        if inst.cgroup:  # the JVM is charged to the stack: its heap is in the stack's memory
            assert java in inst.cgroup.pids()
            anon = int(next(line for line in Path(f"/proc/{java}/status").read_text().splitlines()
                            if line.startswith("RssAnon:")).split()[1]) * 1024
            sample = CgroupReader(inst.cgroup).sample(0)
            assert anon > 20 * 2**20 and sample.mem_rss_bytes is not None and sample.mem_rss_bytes >= anon, \
                (anon, sample)
        if os.geteuid() == 0:
            assert os.stat(f"/proc/{java}").st_uid != 0, "Jetty runs as root"
        rundir = inst.ctx.rundir
    assert not inst.all_pids() and not Path(f"/proc/{java}").exists()
    assert not rundir.exists()
    assert hsperfdata() == perf_before, "the JVM left its perf data file in /tmp"

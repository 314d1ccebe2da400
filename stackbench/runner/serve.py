"""`stackbench serve`: one stack started exactly as a run starts it, left up for the user's
own tools, then taken down as a run takes it down:

    the machine claimed (session.claimed: the run lock, the sweep, the preflight, the
    cores) → the run's parent cgroup → one start (starts.new_instance, starts.bring_up:
    configs checked, the machine profile, pinned servers, the workload's files, database
    or the user's tree, verification) → held: until the time is up, Ctrl-C or SIGTERM,
    or a server dies → down: no process, cgroup or run directory left.

No load is made and nothing is stored. The run lock is held all the while: a measuring
run on the same cores would measure the user's traffic too.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from stackbench.engine.result import Negotiated
from stackbench.errors import ServerError
from stackbench.events import Events
from stackbench.model.serving import ServedStack
from stackbench.planning import machine as machine_mod
from stackbench.planning.plan import Plan
from stackbench.runner import starts
from stackbench.runner.context import Options
from stackbench.runner.lab import Lab
from stackbench.runner.session import claimed
from stackbench.stacks.lifecycle import StackInstance
from stackbench.upkeep.pinning import Pinning

# How often a held stack's servers are looked at: a server that died ends the hold within
# this, with its last words.
WATCH_S = 0.5


@dataclass(frozen=True)
class Serving:
    instance: StackInstance
    stack: ServedStack  # what the user is told

    def hold(self, seconds: float | None, clock: Callable[[], float] = time.monotonic,
             sleep: Callable[[float], None] = time.sleep) -> None:
        """Until `seconds` have passed (None: until Ctrl-C or SIGTERM, which the CLI raises
        as KeyboardInterrupt). A server that died ends it: ServerExited, with its last
        words and, under a machine profile, the OOM killer's part in it."""
        deadline = None if seconds is None else clock() + seconds
        while deadline is None or clock() < deadline:
            try:
                self.instance.check_alive()
            except ServerError as e:
                machine = self.instance.machine_cgroup
                since = machine.since_start() if machine else None
                oom = machine_mod.oom_reason(since.oom_kills or 0, machine.profile) if machine and since else None
                if oom:
                    e.message += f" ({oom})"
                raise
            sleep(WATCH_S if deadline is None else max(0.0, min(WATCH_S, deadline - clock())))


@contextmanager
def up(plan: Plan, options: Options, lab: Lab | None = None, events: Events | None = None) -> Iterator[Serving]:
    """The plan's one stack, with its workloads, up and verified for the block (a plan that
    planning/serve.py made: one stack, workloads that share one start). Whatever ends the
    block, the stack comes down, its cgroups and run directory are removed and the lock
    is released."""
    lab, events = lab or Lab(), events or Events()
    variant = plan.stacks[0]
    # No store is opened: runs a dead lab left `running` are marked crashed by the next run.
    with claimed(plan, options, lab, lambda swept: events.lab_tidied(swept, []), events.server_ready) as (here, pins):
        # The run's parent cgroup, as a run makes it (one place for the sweep to find);
        # nothing is sampled and no system call counted.
        monitor = here.monitor(pins.engine_cpus, plan.sample_interval_s, False)
        try:
            instance = starts.new_instance(here, plan, pins, options, monitor.cgroup_parent, variant,
                                           plan.workloads)
            events.stack_starting(variant)
            try:
                starts.bring_up(instance, plan.workloads, options.allow_remote_target)
                events.stack_ready(variant, instance)
                yield Serving(instance, served(instance, plan, pins))
            finally:
                instance.down()
        finally:
            monitor.close()


def served(instance: StackInstance, plan: Plan, pins: Pinning) -> ServedStack:
    """What the user is told of a started stack."""
    assert instance.ctx is not None  # up
    return ServedStack(
        label=instance.label, description=instance.stack.description, url=instance.url(""),
        tls_url=instance.https_url("") if instance.tls_port else None, ca_file=instance.ca_path,
        protocols=plan.protocols.names,
        https=read_back(instance, "https"), h2=read_back(instance, "h2"),
        paths={w.id: tuple(u.path for u in w.urls) for w in instance.workloads},
        rundir=instance.ctx.rundir, docroot=instance.ctx.docroot, files=tuple(sorted(instance.files)),
        pids=instance.pids(), server_cpus=list(pins.server_cpus), engine_cpus=list(pins.engine_cpus),
        logins=instance.logins_path,
        login_path=next((w.login.path for w in instance.workloads if w.login), None))


def read_back(instance: StackInstance, offer: str) -> Negotiated | None:
    found = instance.negotiated.get(offer)
    return Negotiated.from_dict(found) if found is not None else None

"""Running a plan, stage by stage:

    preflight → begin → per stack start: up, verify,
        (warm up → load + sample → profile → record) × cells → down

One module per stage, each taking the run's context (context.py) instead of a list of
its parts:
    session.py          the run lock, the hosts placed, the preflight, the clients; begin
    starts.py           one stack start: up, verify, its cells (or a capacity search), down
    cell.py             one cell: warm up → load + sample → profile pass → record
    capacity_search.py  a capacity search on one running stack
    network.py          one run's network: a topology per stack start off loopback, each
                        profile calibrated the first time the run uses it
    repetitions.py      fixed or adaptive repetitions; what a resumed run keeps
    lab.py              what the runner talks to (the engine, the stacks, the monitor, the
                        lock), so tests pass fakes instead of monkeypatching
    cleanup.py          clean-up steps that all run, and never hide the error in flight

Two entry points, so an interrupted run can be finished: `begin` stores a new run and
returns its id; `run` measures a list of cells into a run (all of them, or the ones a
resume still needs). Nothing here formats text; progress goes to an Events observer.
"""

from __future__ import annotations

from stackbench.errors import Crashed, StackbenchError
from stackbench.events import Events
from stackbench.runner.network import NetworkSession
from stackbench.planning.plan import Cell, Plan, expand
from stackbench.runner import repetitions, starts
from stackbench.runner.cell import load_spec
from stackbench.runner.cleanup import each
from stackbench.runner.context import Options, Outcome, Run, Session
from stackbench.runner.lab import Lab
from stackbench.runner.repetitions import done_seqs
from stackbench.runner.session import begin, dry_check, open_session, preflight
from stackbench.states import RunStatus
from stackbench.store import Store

__all__ = ["Events", "Lab", "Options", "Outcome", "begin", "done_seqs", "dry_check", "load_spec", "preflight",
           "resume", "run", "run_plan"]


def run_plan(plan: Plan, store: Store, events: Events | None = None, options: Options | None = None,
             lab: Lab | None = None) -> Outcome:
    """A new run of the whole plan."""
    with open_session(plan, store, events, options or Options(), lab or Lab()) as session:
        run_id = begin(session)
        return run(session, run_id, expand(plan))


def resume(run_id: int, plan: Plan, done_seqs: set[int], store: Store, events: Events | None = None,
           options: Options | None = None, lab: Lab | None = None) -> Outcome:
    """Finish a stored run: the cells whose seq is not in `done_seqs`, in the original order
    (a capacity search is done when its seq is: see `done_seqs`)."""
    remaining = [c for c in expand(plan) if c.seq not in done_seqs]
    with open_session(plan, store, events, options or Options(), lab or Lab()) as session:
        store.reopen_run(run_id)
        return run(session, run_id, remaining)


def run(session: Session, run_id: int, cells: list[Cell]) -> Outcome:
    """Measure `cells` into run `run_id`; the run's status says how it ended."""
    plan, store, events, pins = session.plan, session.store, session.events, session.pins
    outcome = Outcome(run_id, RunStatus.FAILED)
    monitor = None

    def measure(batch: list[Cell]) -> None:
        # Per stack start, in its network: up, verify, its cells, down (starts.py).
        for cells_of_start in starts.grouped(batch, plan):
            with network.start(cells_of_start[0]) as topo:
                listen = topo.server_addr if topo else session.clients.listen if session.clients else None
                error = starts.serve(measuring, cells_of_start, topo, listen)
            if error:
                outcome.errors.append(error)

    try:
        events.plan_started(run_id, plan, cells, pins)
        monitor = session.lab.monitor(pins.engine_cpus, plan.sample_interval_s, plan.syscalls)
        network = NetworkSession(plan, store, run_id, pins.engine_cpus)
        measuring = Run.within(session, run_id, monitor)
        outcome.stop = repetitions.measure(measuring, cells, measure)
        store.set_stop(run_id, outcome.stop)
        outcome.status = RunStatus.FAILED if outcome.errors else RunStatus.COMPLETE
    except KeyboardInterrupt:
        outcome.status = RunStatus.INTERRUPTED
        raise
    except StackbenchError as e:  # e.g. a port in use: the run stops, and says why
        outcome.errors.append(e)
        raise
    except Exception as e:
        # Nobody planned for it (a bug; a pipe to a server the OOM killer took): the run
        # is crashed, with why, never left `running` or called failed by a server.
        outcome.status = RunStatus.CRASHED
        outcome.errors.append(Crashed.of(e))
        raise
    finally:
        # Each step even when one before fails (a store that became unwritable must not
        # leave perf running); the first failure is raised after the last step.
        each(lambda: store.finish_run(run_id, outcome.status, "; ".join(e.message for e in outcome.errors) or None),
             lambda: events.plan_finished(run_id, outcome.status),
             lambda: monitor.close() if monitor else None)
    return outcome

"""`stackbench serve STACK [--workload W] [--knob K=V] [--protocol P] [--machine …] [--for D]`:
a stack started exactly as a run starts it, left up for the user's own tools (curl, ab,
wrk, h2load, a browser) until Ctrl-C, SIGTERM or the time is up, then taken down.

Reads like its table of contents: the question checked as a plan → the stack up
(runner/serve.py) → where it answers, printed → held → down."""

from __future__ import annotations

import argparse
import shutil
import sys

from stackbench import units
from stackbench.commands.tune import pairs
from stackbench.errors import PortInUse, UsageError
from stackbench.planning import serve as serve_plan
from stackbench.planning.plan import Plan
from stackbench.report.text import serve as serve_text
from stackbench.runner import Options
from stackbench.runner import serve as serve_runner


def cmd_serve(args: argparse.Namespace) -> int:
    plan = question(args)
    seconds = duration(args.for_)
    installed = {tool: shutil.which(tool) is not None for tool in serve_text.TOOLS}
    try:
        with serve_runner.up(plan, Options(workdir=args.workdir), events=serve_text.ServeProgress()) as serving:
            serve_text.render(serving.stack, plan.machine, seconds, installed, sys.stdout)
            sys.stdout.flush()  # the user (or a script reading the pipe) needs the URLs now
            try:
                serving.hold(seconds)
            except KeyboardInterrupt:
                pass  # Ctrl-C and SIGTERM are how a served stack is meant to end
    except PortInUse as e:
        e.hint = "stop whatever listens there, or leave --port out so a free port is picked"
        raise
    serve_text.stopped(serving.stack, sys.stdout)
    return 0


def question(args: argparse.Namespace) -> Plan:
    workloads = [w for arg in args.workload or [] for w in arg.split(",") if w.strip()]
    protocols = [p for arg in args.protocol or [] for p in arg.split(",") if p.strip()]
    return serve_plan.plan(
        args.stack, knobs=pairs(",".join(args.knob), "--knob") if args.knob else None,
        workloads=[w.strip() for w in workloads] or None, protocols=[p.strip() for p in protocols] or None,
        machine=pairs(args.machine, "--machine") if args.machine else None, port=args.port,
        app=serve_plan.app_table(args.app) if args.app else None)


def duration(text: str | None) -> float | None:
    """--for: seconds, or None (until Ctrl-C)."""
    if text is None:
        return None
    try:
        seconds = units.parse_duration_s(text)
    except ValueError as e:
        raise UsageError(f"--for: {e}") from None
    if seconds <= 0:
        raise UsageError(f"--for must be above 0, not {text!r}")
    return seconds

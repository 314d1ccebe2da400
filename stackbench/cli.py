"""The `stackbench` command: arguments → a command (stackbench/commands/) → an exit
status. One top-level handler turns every StackbenchError into one sentence on stderr
(tracebacks only with --debug)."""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import traceback
from pathlib import Path

from stackbench import __version__
from stackbench.analysis.stats import DEFAULT_EQUIVALENCE
from stackbench.units import parse_share
from stackbench.commands import clean, inspect, measure, report, scenario, serve, size, sizing, tune, yardstick
from stackbench.errors import Crashed, Interrupted, StackbenchError

DEFAULT_DB = "results.sqlite"
DB_HELP = f"the results store (SQLite; default {DEFAULT_DB})"
# What a user reads in --help is defined where it is used: "cell" once in every help that
# says it, and every other word of the lab's own in docs/reference/glossary.md.
WORDS = ("a cell is one stack measured on one workload at one load (so many clients, or a rate) and connection "
         "mode, once; RUN:SEQ names it (the # column of `stackbench show`). The lab's other words: "
         "docs/reference/glossary.md")
EXPLAIN_HELP = "every legend in full: what each column, mark and interval means (default: a short line each)"


def _share(text: str) -> float:
    """0.02 or 2% -> 0.02, for argparse."""
    try:
        return parse_share(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share such as 0.02 or 2%") from None


def _yardstick(text: str) -> float:
    """A yardstick figure (bigger = faster core), for argparse."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a yardstick: a number above 0, as "
                                         "`stackbench yardstick` prints it")
    return value


def _output_flags(p: argparse.ArgumentParser) -> None:
    """How a measuring command talks: progress on a terminal, a line per cell elsewhere."""
    out = p.add_mutually_exclusive_group()
    out.add_argument("--quiet", action="store_true", help="no progress and no table: errors and the run id only")
    out.add_argument("--json", action="store_true", help="one JSON object per finished cell on standard output")
    out.add_argument("--wide", action="store_true", help="the final table with every column")
    p.add_argument("--explain", action="store_true", help=EXPLAIN_HELP)


def _allow_remote(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-remote-target", action="store_true",
                   help="let load go to a host that is neither loopback nor the lab's own namespaces "
                        "(the plan must then use duration, not requests)")


def _cpu_idle(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cpu-idle", choices=measure.IDLE_POLICIES,
                   help="idle cores during the run, in place of the plan's cpu_idle: the load engine's held "
                        "polling where this machine allows it (auto, the default), as the system has them, all "
                        "polled, never halted, or the engine's alone or refuse to run (needs root; on a VM, waking "
                        "a halted core costs both sides µs; polling spins the idle cores: docs/guide/idle-cores.md); "
                        "a resumed run keeps what its first part did")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stackbench", description="Compare PHP web stacks on real servers.",
                                epilog=f"Words: {WORDS}.")
    p.add_argument("--version", action="version", version=f"stackbench {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a plan (the default plan when none is given) and print the results",
                         epilog=f"Words: {WORDS}.")
    run.add_argument("plan", nargs="?", help="plan file (TOML); default: the built-in default plan")
    run.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)
    run.add_argument("--dry-run", action="store_true", help="validate the plan, list its cells and say how long it all takes (tunings "
                          "included); start nothing")
    run.add_argument("--keep-rundir", action="store_true", help="keep each stack's run directory (configs, logs)")
    run.add_argument("--workdir", type=Path, help="where run directories are made (default: the temp dir)")
    _allow_remote(run)
    _cpu_idle(run)
    _output_flags(run)
    run.add_argument("--resume", type=int, metavar="RUN",
                     help="finish an interrupted run: cells already stored are not run again")

    tu = sub.add_parser("tune", help="a stack's best pool of PHP workers for one question on a machine, measured",
                        description="Measures what one worker holds, then pools of 1, 2, 4 … workers up to what "
                                    "the machine's memory fits and the clients can use, and keeps the smallest "
                                    "as good as the best (docs/methods/tuning.md). Stored: a plan's "
                                    "knobs = \"tuned\" takes it.")
    tu.add_argument("stack", help="a stack id (`stackbench stacks`)")
    tu.add_argument("--workload", required=True, help="the page to serve (docs/reference/workloads.md)")
    tu.add_argument("-c", "--concurrency", type=int, help="clients (closed loop): the pool serving the most "
                                                             "responses a second to them")
    tu.add_argument("--rate", type=float, help="requests a second (open loop): the smallest pool serving them "
                                                 "within the SLO")
    tu.add_argument("--machine", help="the machine profile, e.g. cpus=1,memory=512M or cpus=0.5 (a plan's "
                                      "machine table)")
    tu.add_argument("--slo", help="what a run must meet, e.g. p99=2s,errors=0 (a plan's slo table); default: "
                                  "every client served, no errors, no server dies")
    tu.add_argument("--knob", action="append", metavar="K=V", help="a knob fixed beside the pool (repeatable)")
    tu.add_argument("--no-keepalive", action="store_true", help="clients open a connection per request")
    tu.add_argument("--duration", default="4s", help="each run's window (default 4s)")
    tu.add_argument("--warmup", default="0s", help="each run's warm-up (default none: a slow page's abandoned warm-up requests would run on into the window)")
    tu.add_argument("--repetitions", type=int, default=3, help="runs of each candidate (default 3)")
    tu.add_argument("--dry-run", action="store_true", help="check the question and say what it will measure")
    tu.add_argument("--quiet", action="store_true", help="no progress: the tuning's answer only")
    tu.add_argument("--workdir", type=Path, help="where run directories are made (default: the temp dir)")
    tu.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)

    given = size.defaults()
    sz = sub.add_parser("size", help="the machine to buy: the smallest size on which each stack serves a target, measured",
                        description="The sizing scenario's question asked of your stacks, page and traffic: on each "
                                    "size, each stack tuned for the target, then its capacity within the SLO searched; "
                                    "the answer names each stack's smallest size that is enough, with its price "
                                    "(docs/guide/sizing.md). Stored like a plan with [sizing]: `stackbench sizings` "
                                    "prints it again.",
                        epilog=f"Words: {WORDS}.")
    sz.add_argument("stacks", nargs="+", metavar="STACK", help="stack ids (`stackbench stacks`); the first is the "
                                                               "one the others are compared with")
    sz.add_argument("--workload", required=True, help="the page to serve, e.g. wordpress-home "
                                                      "(docs/reference/workloads.md)")
    asked = sz.add_mutually_exclusive_group(required=True)
    asked.add_argument("--target", metavar="HITS",
                       help="hits (requests) a day the machine must serve, e.g. 180000 or 180k")
    asked.add_argument("--visits-per-day", metavar="VISITS",
                       help="visits a day instead, e.g. 20k: each the visits scenario's visit to WordPress (its home "
                            "page with its fonts, then a post, a category or leaving), the answer in visits and hits")
    sz.add_argument("--logged-in", metavar="SHARE",
                    help="with --visits-per-day: the share of the visitors who log in first, e.g. 10%% (default 0%%)")
    sz.add_argument("--peak-factor", type=float, metavar="F",
                    help=f"the busiest hour's rate over the day's mean (default {given['peak_factor']}): the target "
                         "rate is HITS × F / 86,400 s")
    sz.add_argument("--slo", help=f"what serving means, e.g. p99=1s,errors=0 (default {given['slo']}); a probe lasts "
                                  "5 times its latency")
    sz.add_argument("--sizes", metavar="CPUS/MEMORY[/PRICE],…",
                    help=f"the machines to try, smallest first, with their price a month (default {given['sizes']})")
    sz.add_argument("--tune-workload", metavar="W",
                    help=f"the workload each stack's pool is tuned on at the target (default "
                         f"{given['tune_workload']} for a WordPress page: its slow requests decide the pool; else "
                         "the page itself); the capacity is searched on --workload")
    sz.add_argument("--quick", action="store_true", help="one capacity search a stack and size (the sizing "
                                                         "scenario's quick form) instead of five")
    sz.add_argument("--dry-run", action="store_true", help="check the question and say what each size will measure "
                                                           "and how long; start nothing")
    sz.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)
    sz.add_argument("--keep-rundir", action="store_true", help="keep each stack's run directory (configs, logs)")
    sz.add_argument("--workdir", type=Path, help="where run directories are made (default: the temp dir)")
    sz.set_defaults(allow_remote_target=False)
    _cpu_idle(sz)
    _output_flags(sz)

    szs = sub.add_parser("sizings", help="the stored sizings (plans with [sizing]), or one's answer again")
    szs.add_argument("id", nargs="?", type=int, help="a sizing's id (default: list them)")
    szs.add_argument("--core", type=_yardstick, metavar="N",
                     help="the yardstick of your machine's core (`stackbench yardstick` there): the answer's CPUs "
                          "rescaled to cores like it (docs/methods/sizing.md)")
    szs.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)
    ys = sub.add_parser("yardstick", help="this machine's core measured by a short, fixed PHP benchmark (php-cli): "
                                          "the unit a sizing's CPUs are said in",
                        description="Runs a fixed PHP workload with php -n on one core (a second or so) and prints "
                                    "thousands of its units a second, bigger = faster (docs/methods/sizing.md). "
                                    "Needs only PHP's command-line interpreter: no root, no lock, nothing started.")
    ys.add_argument("--json", action="store_true", help="the figure and its spread as one JSON object")
    sv = sub.add_parser("serve", help="a stack started as a run starts it, left up for your own tools until Ctrl-C",
                        description="Starts the stack exactly as a run would (configs checked, servers pinned, the "
                                    "machine profile, the workload's files or database, verified), prints its URLs, "
                                    "the CA to trust, the run directory, the processes and commands to try, and "
                                    "holds the run lock until Ctrl-C, SIGTERM or --for; then stops everything. "
                                    "Listens on loopback only.")
    sv.add_argument("stack", help="a stack id (`stackbench stacks`)")
    sv.add_argument("--workload", action="append", metavar="W",
                    help="the pages to serve (repeatable, or W,W; default: static-12b, php-hello, php-100k): "
                         "docs/reference/workloads.md")
    sv.add_argument("--app", metavar="PATH",
                    help="serve your application: its public directory, or a plan file with an [app] table "
                         "(docs/guide/your-application.md)")
    sv.add_argument("--knob", action="append", metavar="K=V", help="a knob of the stack (repeatable)")
    sv.add_argument("--protocol", action="append", metavar="P",
                    help="http/1.1 (default), https or h2 (repeatable, or P,P): with https or h2 the stack also "
                         "serves HTTPS, HTTP/2 where it can, with a certificate of the lab's own CA")
    sv.add_argument("--machine", help="the machine profile, e.g. cpus=1,memory=512M (a plan's machine table)")
    sv.add_argument("--port", type=int, help="the clear-text port (default: a free one)")
    sv.add_argument("--for", dest="for_", metavar="DURATION", help="stop after this long, e.g. 60s (default: at Ctrl-C)")
    sv.add_argument("--workdir", type=Path, help="where the run directory is made (default: the temp dir)")

    tus = sub.add_parser("tunings", help="the stored tunings, or one of them in full")
    tus.add_argument("id", nargs="?", type=int, help="a tuning's id (default: list them)")
    tus.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)

    sc = sub.add_parser("scenario", help="named questions: list, show, run")
    sc_sub = sc.add_subparsers(dest="scenario_command", required=True)
    sc_sub.add_parser("list", help="the questions stackbench can answer, one line each")
    sc_show = sc_sub.add_parser("show", help="a scenario's question, plan and how to read the result")
    sc_show.add_argument("name", help="a name from `stackbench scenario list`")
    sc_show.add_argument("--plan", action="store_true",
                         help="the plan alone, a file `stackbench run` takes as it is (its words as TOML comments)")
    sc_run = sc_sub.add_parser("run", help="run a scenario; its verdicts first",
                               epilog=f"Words: {WORDS}.")
    sc_run.add_argument("name", help="a name from `stackbench scenario list`")
    sc_run.add_argument("--quick", action="store_true", help="the scenario's short version: about 2 minutes, but on a fresh store sizing 19 and "
                             "small-vps 4, tuning their stacks first (--dry-run says how long)")
    sc_run.add_argument("--variant", metavar="NAME",
                        help="the same question asked another way, e.g. https (`scenario list` names them)")
    sc_run.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)
    sc_run.add_argument("--dry-run", action="store_true",
                        help="validate, list the cells and say how long it all takes (tunings included); start nothing")
    sc_run.add_argument("--keep-rundir", action="store_true", help="keep each stack's run directory (configs, logs)")
    sc_run.add_argument("--workdir", type=Path, help="where run directories are made (default: the temp dir)")
    _allow_remote(sc_run)
    _cpu_idle(sc_run)
    _output_flags(sc_run)

    show = sub.add_parser("show", help="print a stored run: table or summary, caveats, verdicts")
    show.add_argument("run_id", nargs="?", type=int, help="run id (default: the latest)")
    show.add_argument("--all", action="store_true", help="every repetition as its own row")
    show.add_argument("--wide", action="store_true", help="every column (default: the ones that answer the question)")
    show.add_argument("--baseline", help="verdicts against this stack label (default: the plan's baseline)")
    show.add_argument("--explain", action="store_true", help=EXPLAIN_HELP)
    show.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)

    cmp = sub.add_parser("compare", help="two stored runs, or two sets of cells, as verdicts (A is the baseline)",
                         description="A and B: a run id (its cells are matched to B's by stack label and "
                                     "question), or a set of cells RUN:SEQ,SEQ,…",
                         epilog=f"Words: {WORDS}.")
    cmp.add_argument("a", help="the baseline: RUN or RUN:SEQ,SEQ,…")
    cmp.add_argument("b", help="compared with it: RUN or RUN:SEQ,SEQ,…")
    cmp.add_argument("--equivalence", type=_share, default=DEFAULT_EQUIVALENCE,
                     help="a CI of the ratio inside ± this share is 'equivalent': 0.02 or 2%% (default 2%%)")
    cmp.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)

    exp = sub.add_parser("export", help="every cell (one row per repetition) and the verdicts, as CSV or JSON",
                         epilog=f"Words: {WORDS}.")
    exp.add_argument("run_id", nargs="?", type=int, help="run id (default: the latest)")
    exp.add_argument("--format", choices=("csv", "json"), default="csv", help="default: csv")
    exp.add_argument("--verdicts", action="store_true", help="CSV: the verdicts instead of the cells")
    exp.add_argument("--baseline", help="verdicts against this stack label (default: the plan's baseline)")
    exp.add_argument("-o", "--output", help="file to write (default: standard output)")
    exp.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)

    rep = sub.add_parser("report", help="stored runs as one HTML file: verdicts, charts, how to reproduce them",
                         description="One self-contained HTML file (inline SVG charts, no script library, "
                                     "nothing fetched when opened), a section per run.")
    rep.add_argument("runs", nargs="*", type=int, metavar="RUN", help="run ids (default: the latest)")
    rep.add_argument("--sizing", type=int, action="append", metavar="ID",
                     help="a stored sizing (`stackbench sizings`): every size's run, under its chart of capacity "
                          "against the machine's size (repeatable; a size's run given alone draws it too)")
    rep.add_argument("-o", "--output", help="file to write (default: report-RUN.html)")
    rep.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)

    runs = sub.add_parser("runs", help="list the stored runs")
    runs.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)

    sub.add_parser("stacks", help="list the stacks, whether they can run here, and their knobs")

    cl = sub.add_parser("clean", help="remove what labs that were killed left behind (the next run does it too)",
                        description="Labs killed without a chance to clean up (kill -9, out of memory) leave "
                                    "cgroups, run directories and scratch directories; this removes them, one "
                                    "line each, and marks the runs they left `running` in the store crashed.")
    cl.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")
    cl.add_argument("--db", default=DEFAULT_DB, help=DB_HELP + "; never created by clean")

    tl = sub.add_parser("timeline", help="one cell second by second: load, latency, processes, memory, CPU",
                        epilog=f"Words: {WORDS}.")
    tl.add_argument("cell", help="RUN:SEQ (the # column of `stackbench show`)")
    tl.add_argument("--walk", action="store_true",
                    help="the whole walk (ramp, stages, capacity search) the cell is a step of, on one clock")
    tl.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)

    ex = sub.add_parser("explain", help="compare what two cells cost: CPU, memory, processes, system calls",
                        description="A and B are cells: RUN:SEQ, or a stack label of --run (default: the latest)"
                                    " narrowed by --workload/--concurrency/--keepalive/--rep to one cell.",
                        epilog=f"Words: {WORDS}.")
    ex.add_argument("a", metavar="A", help="the first cell: RUN:SEQ (the # column of `stackbench show`), or a "
                                           "stack label of --run")
    ex.add_argument("b", metavar="B", help="the cell compared with it, written the same way")
    ex.add_argument("--run", type=int, help="run the labels refer to (default: the latest)")
    ex.add_argument("--workload", help="with a label: the cell's workload, e.g. php-hello")
    ex.add_argument("-c", "--concurrency", type=int, help="with a label: the cell's clients")
    ex.add_argument("--keepalive", choices=("on", "off"), help="with a label: the cell's keep-alive mode")
    ex.add_argument("--rep", type=int, help="which repetition (1, 2, …) when the run has several")
    ex.add_argument("--db", default=DEFAULT_DB, help=DB_HELP)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _stop_like_ctrl_c()
    try:
        key = (args.command, args.scenario_command) if args.command == "scenario" else args.command
        return COMMANDS[key](args)
    except StackbenchError as e:
        if args.debug:
            traceback.print_exc()
        try:
            print(e.render(), file=sys.stderr)
        except OSError:
            pass  # a terminal that was closed cannot be told: the exit status says it
        return e.exit_code
    except KeyboardInterrupt:
        try:
            print("\ninterrupted: servers stopped; cells measured so far are stored", file=sys.stderr)
        except OSError:
            pass  # the terminal that was closed (SIGHUP) cannot be told: the exit status says it
        return Interrupted.exit_code
    except BrokenPipeError as e:
        if not _stdout_reader_left():
            return _crashed(e, args.debug)  # a pipe to a child, not to the reader
        # `stackbench show | head`: the reader left; say nothing more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # noqa: BLE001 — the one place an unplanned error becomes a sentence
        return _crashed(e, args.debug)


def _crashed(error: Exception, debug: bool) -> int:
    if debug:
        traceback.print_exception(error)
    crash = Crashed.of(error)
    try:
        print(crash.render(), file=sys.stderr)
    except OSError:
        pass  # a terminal that was closed cannot be told: the exit status says it
    return crash.exit_code


def _stdout_reader_left() -> bool:
    """Is our standard output a pipe whose reader has gone? Linux reports POLLERR on a
    pipe's write end once no reader holds it (pipe(7)); a terminal or a file never does.
    Only then is a BrokenPipeError "the reader left"."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def _stop_like_ctrl_c() -> None:
    """SIGTERM and SIGHUP (the terminal was closed) are handled like Ctrl-C: stop the
    servers, keep what was measured. After a hang-up the terminal is gone: what the lab
    would still print there goes nowhere instead of failing (writes to a hung-up
    terminal fail with EIO). Under nohup, SIGHUP stays ignored."""
    ttys = [fd for fd in (1, 2) if os.isatty(fd)]

    def stop(signum: int, _frame: object) -> None:
        if signum == signal.SIGHUP:
            null = os.open(os.devnull, os.O_WRONLY)
            for fd in ttys:
                os.dup2(null, fd)
            os.close(null)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, stop)


COMMANDS = {
    "run": measure.cmd_run, "show": inspect.cmd_show, "runs": inspect.cmd_runs, "stacks": inspect.cmd_stacks,
    "explain": inspect.cmd_explain, "timeline": inspect.cmd_timeline, "compare": inspect.cmd_compare,
    "export": inspect.cmd_export, "report": report.cmd_report, "clean": clean.cmd_clean,
    "tune": tune.cmd_tune, "tunings": tune.cmd_tunings, "size": size.cmd_size, "sizings": sizing.cmd_sizings,
    "yardstick": yardstick.cmd_yardstick,
    "serve": serve.cmd_serve,
    ("scenario", "list"): scenario.cmd_scenario_list, ("scenario", "show"): scenario.cmd_scenario_show,
    ("scenario", "run"): measure.cmd_scenario_run,
}

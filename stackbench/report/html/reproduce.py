""""Reproduce it": the machine (CPU, memory, kernel, pinning, CPU steadiness), the
versions of every server and PHP, the command that re-runs the plan, the plan itself as
TOML, and every configuration file the stacks ran with (folded)."""

from __future__ import annotations

import difflib
import json
import re
import shlex
from html import escape
from typing import Any, Callable

from stackbench.analysis.clients import Clients
from stackbench.model.cell import StoredCell
from stackbench.model.environment import Environment
from stackbench.model.run import StoredRun
from stackbench.report.html import tables
from stackbench.report.words import clients as clients_text
from stackbench.report.words.commands import PROGRAM
from stackbench.report.network import lines as network_lines
from stackbench.report.html.figure import Context
from stackbench.report.words.machine import machine_words
from stackbench.units import MiB
from stackbench.upkeep.pinning import Pinning

BUILT_IN = "<default plan>"



def render(ctx: Context) -> str:
    run = ctx.run
    command, why = rerun_command(run.plan_source, _idle_flag(run))
    return (f'<section class="reproduce" id="{ctx.anchor("reproduce")}"><h3>Reproduce it</h3>'
            f"<h4>The command</h4><pre><code>{escape(command)}</code></pre><p>{escape(why)} With the plan below "
            f"saved as <code>plan.toml</code>: <code>{escape(PROGRAM)} run plan.toml</code>.</p>"
            # each folded under the line that says the most of it
            + _folded("The machine", _machine_line(run.environment), tables.table((), _machine_rows(ctx)))
            + _folded("Versions", _versions_line(ctx.cells),
                      tables.table(('stack', 'program', 'version'), version_rows(ctx.cells)))
            + _folded("Knobs in force", "every default resolved",
                      tables.table(('stack', 'knobs, every default resolved'), knob_rows(ctx.cells)))
            + _folded("The plan", f"{run.plan_name}, as written ({run.plan_source})",
                      f"<pre>{escape(toml(run.plan or {}))}</pre>")
            + f"<h4>Configuration files</h4>{_configs(ctx)}</section>")


def _folded(title: str, line: str, body: str) -> str:
    return f"<details><summary><strong>{escape(title)}</strong>: {escape(line)}</summary>{body}</details>"


def _machine_line(env: Environment) -> str:
    """"AMD EPYC × 2, 3.8 GiB, kernel 6.18.44" — the rest in the table it folds."""
    parts = [f"{env.cpu_model or 'unknown CPU'} × {env.cpu_count}" if env.cpu_count else env.cpu_model or ""]
    if env.memory_bytes:
        parts.append(f"{env.memory_bytes / 1024 / MiB:.1f} GiB")
    if env.kernel:
        parts.append(f"kernel {env.kernel}")
    return ", ".join(p for p in parts if p) or "as recorded"


def _versions_line(cells: list[StoredCell]) -> str:
    """"apache2 2.4.71, nginx 1.22.1, php 8.2.36": each program once."""
    seen = dict.fromkeys(f"{program} {version}" for _, program, version in version_rows(cells))
    return ", ".join(seen) or "none recorded"


def _machine_rows(ctx: Context) -> list[tuple[str, str]]:
    run = ctx.run
    return (environment_rows(run.environment, network_lines(run.checked.profiles, run.network))
            + client_rows(ctx.analysis.clients))


def _idle_flag(run: StoredRun) -> str:
    """` --cpu-idle X` when the plan is silent on it and the run was measured otherwise
    than today's default does (a run from before "auto": as-is)."""
    if "cpu_idle" in (run.plan or {}) or run.idle_asked == "auto":
        return ""
    return f" --cpu-idle {run.idle_asked}"


def rerun_command(source: str, flags: str = "") -> tuple[str, str]:
    """The command that runs the same plan again, typed as the README types it
    (report/words/commands.py), and a sentence on where the plan is."""
    if source == BUILT_IN:
        return (f"{PROGRAM} run" + flags, "The built-in default plan (the plan below is the one this run used); "
                "`make bench` runs it too.")
    if source.startswith("scenario "):
        return f"{PROGRAM} {source.replace('scenario ', 'scenario run ', 1)}{flags}", "A named scenario."
    return (f"{PROGRAM} run {shlex.quote(source)}{flags}",
            "The plan file this run was made from, if it is still there.")


def environment_rows(env: Environment, network: list[str] | None = None) -> list[tuple[str, str]]:
    """The machine's table: each figure the environment recorded, in words (what it did
    not record, no row), then what it holds that no field names, then the network."""
    def said(value: Any, words: Callable[[Any], str] = str) -> str | None:
        return None if value is None else words(value)

    named = (
        ("CPU", said(env.cpu_model)), ("CPUs", said(env.cpu_count)),
        ("memory", said(env.memory_bytes, lambda v: f"{v / 1024 / MiB:.1f} GiB")), ("system", said(env.os)),
        ("kernel", said(env.kernel)), ("CPU frequency governor", said(env.cpu_governor)),
        ("CPU steadiness before the run",
         said(env.cpu_noise_cv, lambda v: f"CV {v:.1%} of a fixed CPU loop on the server's core, in 0.2 s slices")),
        ("yardstick of the server's core",
         said(env.server_yardstick, lambda v: f"{v.describe()}: thousands of units of a fixed PHP workload a second "
                                              "before the run, bigger = faster (`stackbench yardstick`)")),
        ("idle cores", said(env.cpu_idle, lambda v: v.why)),
        ("order of a level's protocols and connection modes",
         said(env.mode_order, lambda v: "the plan's on even repetitions, reversed on odd ones" if v == "alternate"
              else "the plan's")),
        ("pinning", said(env.pinning, _pinning)), ("the stack's host", said(env.server_host, clients_text.server_line)),
        ("the database's host", said(env.db_host, lambda v: clients_text.server_line(v, "the database"))),
        ("machine profile (emulated)", said(env.machine_profile, lambda v: machine_words(v) + " — cgroup limits on "
                                            "the stack and its services, OOM kills recorded per cell")),
        ("stackbench", said(env.stackbench)), ("load engine (stackbench-load)", said(env.engine)),
        ("Python", said(env.python)))
    rows = [(name, text) for name, text in named if text is not None]
    rows += [(k, str(v)) for k, v in env.others.items()]
    for line in network or ["loopback: server and load engine on one machine, the host's loopback"]:
        rows.append(("network", line))
    return rows


def client_rows(found: Clients | None) -> list[tuple[str, str]]:
    """The load's clients, when the plan spread it over several (hosts.client)."""
    return [("load clients", line) for line in clients_text.lines(found)] if found else []


def _pinning(v: Pinning) -> str:
    shared = "; they share cores" if v.shared else ""
    where = f"{v.server_host}'s " if v.server_host else ""
    return f"server on {where}cores {v.server_cpus}, load engine on cores {v.engine_cpus}{shared}"


def version_rows(cells: list[StoredCell]) -> list[tuple[str, str, str]]:
    seen: dict[tuple[str, str, str], None] = {}
    for c in cells:
        for program, version in sorted((c.versions or {}).items()):
            seen.setdefault((c.stack_label, program, str(version or "unknown")))
    return list(seen)


def knob_rows(cells: list[StoredCell]) -> list[tuple[str, str]]:
    """Each stack's knobs as TOML's inline table would write them; a stack whose knobs
    changed between cells (it cannot, within a run) gets a row per set."""
    seen: dict[tuple[str, str], None] = {}
    for c in cells:
        seen.setdefault((c.stack_label, toml_value(c.knobs or {})))
    return list(seen)


def _configs(ctx: Context) -> str:
    """Per stack, the first cell's files in full; a cell whose files differ from them
    (each stack start renders its own run directory and port) as a diff."""
    by: dict[str, dict[str, list[int]]] = {}
    for c in ctx.cells:
        if c.config_hash:
            by.setdefault(c.stack_label, {}).setdefault(c.config_hash, []).append(c.seq)
    if not by:
        return "<p>No configuration files were stored with this run's cells.</p>"
    out = []
    for label, hashes in by.items():
        (first_hash, first_seqs), *others = hashes.items()
        files = ctx.store.config_files(first_hash)
        body = "".join(f"<h5>{escape(path)}</h5><pre>{escape(text)}</pre>" for path, text in sorted(files.items()))
        for h, seqs in others:
            diff = _diff(files, ctx.store.config_files(h))
            body += (f"<details><summary>cells {escape(_seqs(ctx, seqs))}: the same but for these lines</summary>"
                     f"<pre>{escape(diff)}</pre></details>")
        out.append(f"<details><summary>{escape(label)} — {len(files)} file(s), cells {escape(_seqs(ctx, first_seqs))}"
                   f"</summary>{body}</details>")
    return "".join(out)


def _seqs(ctx: Context, seqs: list[int]) -> str:
    """RUN:SEQ references, runs of consecutive cells as ranges: "3:0–3, 3:16"."""
    spans: list[list[int]] = []
    for s in sorted(seqs):
        if spans and s == spans[-1][1] + 1:
            spans[-1][1] = s
        else:
            spans.append([s, s])
    return ", ".join(f"{ctx.run.id}:{a}" + (f"–{b}" if b > a else "") for a, b in spans)


def _diff(a: dict[str, str], b: dict[str, str]) -> str:
    lines: list[str] = []
    for path in sorted(set(a) | set(b)):
        lines += difflib.unified_diff(a.get(path, "").splitlines(), b.get(path, "").splitlines(),
                                      f"{path} (first)", path, n=0, lineterm="")
    return "\n".join(lines) or "(identical)"


# -- the plan as TOML ----------------------------------------------------------------

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def toml(data: dict[str, Any]) -> str:
    """A plan's data as TOML that reads back to the same data (tomllib): scalars and
    inline tables first, then [tables] and [[arrays of tables]]."""
    return "\n".join(_table([], data)).strip() + "\n"


def _table(path: list[str], d: dict[str, Any]) -> list[str]:
    out, later = [], []
    for k, v in d.items():
        if isinstance(v, dict) and (any(isinstance(x, (dict, list)) for x in v.values()) or len(toml_value(v)) > 90):
            later += ["", f"[{_dotted(path + [k])}]"] + _table(path + [k], v)
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for item in v:
                later += ["", f"[[{_dotted(path + [k])}]]"] + _table(path + [k], item)
        elif v is not None:
            out.append(f"{_key(k)} = {toml_value(v)}")
    return out + later


def _dotted(path: list[str]) -> str:
    return ".".join(_key(p) for p in path)


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k, ensure_ascii=False)


def toml_value(v: Any) -> str:
    """One value as TOML writes it (a label as a plan would quote it)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {toml_value(x)}" for k, x in v.items() if x is not None) + " }"
    return json.dumps(str(v))

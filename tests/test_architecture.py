"""The architecture docs/architecture.md describes, checked on the code:
who may import whom (RULES, one table: docs/architecture.md's "Who may import whom" says
the same, and a test compares the two), no import cycle between modules, and the engine's JSON
read in one place (engine/result.py parses it; only the store's row mapping and
engine/merge.py also handle the document), and analysis/ and report/ reading typed values:
at most STRING_KEY_READS_ALLOWED dict reads by a string key there, each with its reason.

Every import counts against the table: at the top of a module, inside a function, under
TYPE_CHECKING. The cycle check leaves out the last (they run nothing).

Pointed at another tree (an older commit unpacked with `git archive`), it says what that
tree breaks:

    mkdir /tmp/old && git archive 51926ae stackbench loadgen/schema | tar -x -C /tmp/old
    python tests/test_architecture.py /tmp/old
"""

from __future__ import annotations

import ast
import functools
import io
import json
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# -- who may import whom ------------------------------------------------------------------
# A room is a folder of stackbench/ or one of its top-level modules. Each may import itself,
# the leaves and what its row names: a room, or one module of a room ("analysis.stats")
# when only that one is meant. The rows run from the top (what the user calls) down.
LEAVES = {
    "errors",  # the lab's exception classes
    "units",  # parsing and formatting of sizes, durations, rates
    "keys",  # rejecting a table's unknown keys
    "states",  # a run's and a cell's status
    "plans",  # the default plan (a TOML file read as a resource)
    "stackbench",  # the package itself: its version
}
RULES: dict[str, set[str]] = {
    "__main__": {"cli"},
    "cli": {"commands", "analysis.stats"},
    "commands": {"runner", "report", "analysis", "model", "store", "scenarios", "planning", "upkeep",
                 "stacks", "network", "yardstick"},
    "report": {"analysis", "model", "engine.result", "planning", "events", "upkeep.pinning", "stacks.base"},
    "runner": {"planning", "hosts", "stacks", "workloads", "engine", "monitor", "network", "store", "model",
               "caveats", "events", "upkeep", "analysis.capacity", "analysis.verdicts", "analysis.power",
               "analysis.tuning", "analysis.sizing", "analysis.outcomes"},
    "scenarios": {"planning", "workloads"},
    "events": {"planning", "stacks", "model", "upkeep", "engine.result"},
    "hosts": {"planning", "stacks", "servers", "workloads", "engine", "monitor", "model", "network", "upkeep"},
    "planning": {"stacks", "workloads", "network", "monitor", "upkeep", "analysis.stats", "analysis.capacity",
                 "model.tuning", "model.sizing"},
    "analysis": {"model", "engine.result", "caveats"},
    "store": {"model", "engine.result", "monitor.session", "upkeep.pinning"},
    "stacks": {"servers", "workloads", "monitor", "upkeep", "planning.machine"},
    "workloads": {"servers", "upkeep"},
    "servers": {"upkeep"},
    "network": {"upkeep", "planning.target"},
    "monitor": {"upkeep", "engine.result", "model", "planning.machine"},
    "model": {"engine.result", "upkeep.pinning", "yardstick"},
    "caveats": {"engine.result"},
    "engine": {"upkeep"},
    "upkeep": {"engine", "monitor.cgroup", "monitor.cpu_noise", "network.netns", "yardstick"},
    "yardstick": set(),
}
# The rows that point up the table instead of down, each narrow and none a cycle of
# modules (which test_no_module_imports_itself_round_a_cycle refuses): ties still to cut.
TIES = {
    # a stack start and the monitor are confined to the plan's machine profile, a value
    # (planning/machine.py imports nothing above upkeep)
    ("stacks", "planning.machine"), ("monitor", "planning.machine"),
    # the network claims the addresses load may go to (planning/target.py imports nothing)
    ("network", "planning.target"),
    # the sweep of what a killed lab left (its cgroups, its namespaces), and the environment
    # a run is recorded with (the engine's version, the CPU's noise: environment.py measures)
    ("upkeep", "monitor.cgroup"), ("upkeep", "network.netns"), ("upkeep", "engine"), ("upkeep", "monitor.cpu_noise"),
}


@dataclass(frozen=True)
class Import:
    where: str  # path:line, from stackbench/
    source: str  # importing module, dotted, without "stackbench."
    target: str  # imported module, dotted, without "stackbench." ("" for the package itself)
    typing_only: bool  # under `if TYPE_CHECKING:`: a type named, nothing run at import time


def modules(package: Path) -> dict[str, Path]:
    """Dotted name (without "stackbench.") → file, for every module of the package."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


@functools.cache
def imports(package: Path) -> list[Import]:
    """Every import of a stackbench module, wherever it is written."""
    mods = modules(package)

    def resolve(dotted: str) -> str:
        # `from stackbench.x import y`: y is a module when there is one, else a name in x.
        parts = dotted.split(".")
        while parts and ".".join(parts) not in mods:
            parts.pop()
        return ".".join(parts)

    def targets(node: ast.Import | ast.ImportFrom, name: str, is_package: bool) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if node.level:  # relative: from its own package
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            module = ".".join(["stackbench", *filter(None, base), *([node.module] if node.module else [])])
        else:
            module = node.module or ""
        return [f"{module}.{a.name}" for a in node.names]

    def walk(node: ast.AST, typing_only: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, typing_only
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for part in child.body:
                    yield from walk(ast.Module([part], []), True)
                for part in child.orelse:
                    yield from walk(ast.Module([part], []), typing_only)
            else:
                yield from walk(child, typing_only)

    out = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        for node, typing_only in walk(tree, False):
            for dotted in targets(node, name, path.name == "__init__.py"):
                if dotted == "stackbench" or dotted.startswith("stackbench."):
                    target = resolve(dotted.removeprefix("stackbench").removeprefix("."))
                    out.append(Import(f"{path.relative_to(package)}:{node.lineno}", name, target, typing_only))
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
            or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def room(module: str) -> str:
    return module.split(".")[0] if module else "stackbench"


def allowed(source: str, target: str) -> bool:
    here, there = room(source), room(target)
    if here == there or there in LEAVES:
        return True
    return any(target == rule or target.startswith(rule + ".") or there == rule for rule in RULES[here])


def import_breaches(package: Path) -> list[str]:
    found = []
    for imp in imports(package):
        if imp.source and room(imp.source) not in RULES and room(imp.source) not in LEAVES:
            found.append(f"{imp.where}: room {room(imp.source)!r} has no row in RULES (nor in docs/architecture.md)")
        elif imp.source and room(imp.source) in LEAVES and room(imp.target) not in LEAVES | {room(imp.source)}:
            found.append(f"{imp.where}: the leaf {room(imp.source)} imports {imp.target}")
        elif imp.source and room(imp.source) in RULES and not allowed(imp.source, imp.target):
            found.append(f"{imp.where}: {imp.source} imports {imp.target}")
    return sorted(set(found))


def module_cycles(package: Path) -> list[list[str]]:
    """Strongly connected groups of modules (Tarjan's algorithm): each is an import cycle.
    Imports inside functions count (they are how a cycle is hidden, not cut); those under
    TYPE_CHECKING do not (they run nothing, so no import order can break on them)."""
    graph: dict[str, set[str]] = {}
    for imp in imports(package):
        if imp.source != imp.target and not imp.typing_only:
            graph.setdefault(imp.source, set()).add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


# -- the reports: one wording, two layouts ------------------------------------------------
# report/words/ says a thing once (a verdict's sentence, a warning, a legend, a table's
# rows); the terminal (report/text/) and the HTML report (report/html/) lay it out. Neither
# layout imports the other for its wording, and the words import neither layout.
REPORT_PARTS = {"report.html": {"report.text"}, "report.text": {"report.html"},
                "report.words": {"report.text", "report.html"}}


def report_breaches(package: Path) -> list[str]:
    found = []
    for imp in imports(package):
        for part, refused in REPORT_PARTS.items():
            if imp.source == part or imp.source.startswith(part + "."):
                found += [f"{imp.where}: {imp.source} imports {imp.target}" for r in refused
                          if imp.target == r or imp.target.startswith(r + ".")]
    return sorted(set(found))


# -- the engine's JSON, read in one place ---------------------------------------------------
SCHEMA = ROOT / "loadgen" / "schema" / "result-v1.schema.json"
# Where the engine's document is read by key: its parser; the store's row mapping (the
# document is a column, read back through the parser); and merge.py, which merges several
# clients' documents into one bucket by bucket *before* it is parsed — the merged document
# is what the store keeps, so it must stay a document of the same schema.
ENGINE_READERS = ("engine/result.py", "engine/merge.py", "store/")
# Property names of the schema that other dicts of the lab use too, so a read of one says
# nothing about the engine's document (each with the dicts that use it):
SHARED_WORDS = {
    # a plan's tables (planning/, network/visitors.py, workloads/app.py), the SLO's counts,
    # a stored cell's keep-alive
    "name", "rate", "connections", "requests", "threads", "timeout", "stages", "start", "min", "max",
    "keepalive", "read_rate", "rcvbuf", "path", "weight", "errors",
    "count", "total",  # a process group's count, the system calls' total (monitor/, the store)
    "received", "bytes", "mean", "t_s",  # the link emulator's statistics (network/tunnel.py)
    "keepalive_requests",  # a server's knob
    "protocol", "tls", "handshake", "streams",  # a plan's protocol keys (planning/protocols.py)
    "full", "resumed",  # memory pressure's "full" (PSI), a plan's handshake modes
    "address",  # the agent's messages (hosts/wire.py)
    "code", "params",  # a caveat, {code, params} (caveats.py)
}
# Reads of a key the schema has, of a dict that is not the engine's result document:
# (module, function, key) → why.
NOT_THE_DOCUMENT = {
    ("engine/process.py", "_run", "schema_version"):
        "the contract's version is checked before the document is handed to the parser",
    ("analysis/capacity.py", "SLO.from_dict", "latency_us"): "the SLO's own stored form (SLO.as_dict)",
    ("planning/visits.py", "parse", "pages"): "a plan's [visit] table, its pages in order",
    ("model/sizing.py", "StoredSizing.hits_per_day", "requests_per_visit"):
        "a sizing's stored question (its target's visit model), not the engine's visits",
}


def schema_names(schema: dict) -> tuple[set[str], set[str]]:
    """(the property names of the engine's result document outside a warning's params,
    those inside a warning's params), found recursively through the schema's $defs."""
    defs = schema.get("$defs", {})
    in_params: set[str] = set()
    elsewhere: set[str] = set()

    def walk(node, params: bool, seen: frozenset) -> None:
        if isinstance(node, list):
            for v in node:
                walk(v, params, seen)
        if not isinstance(node, dict):
            return
        ref = node.get("$ref", "")
        if ref.startswith("#/$defs/") and ref not in seen:
            walk(defs[ref.split("/")[-1]], params, seen | {ref})
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    (in_params if params else elsewhere).add(name)
                    walk(sub, params or name == "params", seen)
            elif key != "$defs":
                walk(value, params, seen)

    walk(schema, False, frozenset())
    return elsewhere, in_params


def key_reads(path: Path):
    """(line, enclosing function, key) for each `x["key"]`, `x.get("key")`, `x.pop("key")`
    and `"key" in x` in a module."""
    tree = ast.parse(path.read_text(), str(path))

    def visit(node: ast.AST, scope: str):
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{scope}.{child.name}" if scope else child.name
            key = None
            if isinstance(child, ast.Subscript) and isinstance(child.ctx, ast.Load):
                key = child.slice
            elif (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                  and child.func.attr in ("get", "pop") and child.args):
                key = child.args[0]
            elif (isinstance(child, ast.Compare) and len(child.ops) == 1
                  and isinstance(child.ops[0], (ast.In, ast.NotIn))):
                key = child.left
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                yield child.lineno, inner, key.value
            yield from visit(child, inner)

    yield from visit(tree, "")


def key_breaches(package: Path, schema_path: Path = SCHEMA) -> list[str]:
    document, _ = schema_names(json.loads(schema_path.read_text()))
    engine_keys = document - SHARED_WORDS
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith(ENGINE_READERS):
            continue
        for line, scope, key in key_reads(path):
            if key not in engine_keys or (rel, scope, key) in NOT_THE_DOCUMENT:
                continue
            found.append(f"{rel}:{line} ({scope or 'module'}) reads {key!r}")
        found += [f"{rel}:{line} repacks the engine's document as a stored cell's \"engine\""
                  for line in repacked_documents(path)]
    return found


def repacked_documents(path: Path) -> list[int]:
    """Lines of a dict built with the key "engine" from an EngineResult's `.raw`: the
    document handed on in the store's shape, for someone to read by key (the runner did
    so for the capacity search's check)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if (isinstance(key, ast.Constant) and key.value == "engine"
                        and any(isinstance(n, ast.Attribute) and n.attr == "raw" for n in ast.walk(value))):
                    lines.append(key.lineno)
    return lines


# -- analysis and the reports read typed values, not string keys -----------------------------
# analysis/ and report/ take what the model, the engine's parser and their own dataclasses
# give: a dict read there by a string key (`x["key"]`, `x.get("key")`) is a parse in the
# wrong place, its key unchecked by mypy. At most this many are left, each with a comment
# on its line or the line above saying why; environment variables (`os.environ`) are not
# data and do not count.
TYPED_ROOMS = ("analysis", "report")
STRING_KEY_READS_ALLOWED = 5


@dataclass(frozen=True)
class StringKeyRead:
    line: int
    code: str  # the read as written
    explained: bool  # a comment on its line or the line above


def string_key_reads_in(source: str, name: str = "<source>") -> list[StringKeyRead]:
    """Each subscript with a string-constant key and each `.get` call with a
    string-constant first argument, but those of `os.environ` (and `Literal["…"]`)."""
    comments = {tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                 if tok.type == tokenize.COMMENT}
    out = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Subscript) and _is_str(node.slice):
            of = node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and _is_str(node.args[0])):
            of = node.func.value
        else:
            continue
        if _dotted(of) in ("os.environ", "environ", "Literal", "typing.Literal"):
            continue
        out.append(StringKeyRead(node.lineno, ast.unparse(node), bool({node.lineno, node.lineno - 1} & comments)))
    return sorted(out, key=lambda r: r.line)


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def string_key_reads(package: Path) -> list[tuple[str, StringKeyRead]]:
    """(path from stackbench/, the read) in analysis/ and report/."""
    return [(path.relative_to(package).as_posix(), read)
            for room_ in TYPED_ROOMS for path in sorted((package / room_).rglob("*.py"))
            for read in string_key_reads_in(path.read_text(), str(path))]


# -- the tests ----------------------------------------------------------------------------
PACKAGE = ROOT / "stackbench"


def test_every_import_is_one_the_architecture_allows():
    assert import_breaches(PACKAGE) == []


def test_the_reports_share_their_words_not_each_other():
    """The HTML report does not import the terminal's modules for its wording (nor the
    other way round): both take it from report/words/."""
    assert report_breaches(PACKAGE) == []
    assert any(imp.source.startswith("report.html") and imp.target.startswith("report.words")
               for imp in imports(PACKAGE))


def test_no_module_imports_itself_round_a_cycle():
    assert module_cycles(PACKAGE) == []


def test_the_rows_run_down_but_for_the_ties():
    """Without its ties the table is a layering: no room reaches itself through it, so a
    new import that points up is either refused or named a tie here and in docs/architecture.md."""
    assert TIES <= {(here, rule) for here, rules in RULES.items() for rule in rules}
    down = {here: {rule.split(".")[0] for rule in rules if (here, rule) not in TIES} for here, rules in RULES.items()}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(r == goal or (r not in seen and reaches(r, goal, seen | {r})) for r in down.get(start, ()))

    assert [here for here in RULES if reaches(here, here, {here})] == []


def test_every_room_has_a_row_and_every_row_a_room():
    rooms = {room(m) for m in modules(PACKAGE) if m}
    assert rooms - LEAVES - set(RULES) == set()
    assert set(RULES) - rooms == set()
    named = {rule.split(".")[0] for rules in RULES.values() for rule in rules}
    assert named - rooms == set()
    dotted = {rule for rules in RULES.values() for rule in rules if "." in rule}
    assert {rule for rule in dotted if rule not in modules(PACKAGE)} == set()


def test_no_engine_key_is_read_outside_its_one_place():
    assert key_breaches(PACKAGE) == []


def test_analysis_and_the_reports_read_few_string_keys_each_with_its_reason():
    reads = string_key_reads(PACKAGE)
    listed = "\n".join(f"  {where}:{r.line}: {r.code}" + ("" if r.explained else "  (no comment why)")
                       for where, r in reads)
    assert len(reads) <= STRING_KEY_READS_ALLOWED, \
        f"{len(reads)} string-key reads in analysis/ and report/ (at most {STRING_KEY_READS_ALLOWED}):\n{listed}"
    assert all(r.explained for _, r in reads), f"a string-key read without a comment why:\n{listed}"


def test_the_string_key_walk_sees_reads_and_their_comments():
    source = ('import os\n'
              'a = d["x"]  # why\n'
              '# why, for the line below\n'
              'b = d.get("y", 0)\n'
              'c = d.get(key), d[0], os.environ.get("TERM"), os.environ["HOME"]\n'
              'e = row["z"]\n')
    assert [(r.line, r.code, r.explained) for r in string_key_reads_in(source)] == [
        (2, "d['x']", True), (4, "d.get('y', 0)", True), (6, "row['z']", False)]


def test_the_walk_sees_the_package_and_the_schema():
    """The checks would pass on nothing: they must see what they check."""
    assert len(imports(PACKAGE)) > 500
    document, params = schema_names(json.loads(SCHEMA.read_text()))
    assert {"per_url", "timeline", "in_flight_oldest_us", "percentiles"} <= document - SHARED_WORDS
    assert {"threshold_us", "share", "not_sent"} <= params and "threshold_us" not in document


def test_the_architecture_page_states_the_same_rules():
    """docs/architecture.md's "Who may import whom" lists, per room, what it may import:
    the same as RULES, and the same leaves."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    said = page_rules(page)
    assert said == RULES
    leaves = re.search(r"\*\*Who may import whom\.\*\*(.*?)\n- ", page, re.S).group(1)
    assert set(re.findall(r"`([\w.]+)`", _outside_parentheses(leaves))) == LEAVES


def page_rules(page: str) -> dict[str, set[str]]:
    """The rows of docs/architecture.md's list: "- `room` → `a`, `b.c` (why), …" (backticked
    names outside parentheses are what the room may import)."""
    section = page.split("**Who may import whom.**", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for item in re.split(r"\n- ", section)[1:]:
        text = _outside_parentheses(" ".join(item.split()))
        head, _, tail = text.partition("→")
        (name,) = re.findall(r"`([\w.]+)`", head)
        rows[name] = set(re.findall(r"`([\w.]+)`", tail))
    return rows


def _outside_parentheses(text: str) -> str:
    while True:
        shorter = re.sub(r"\([^()]*\)", "", text)
        if shorter == text:
            return text
        text = shorter


if __name__ == "__main__":
    tree = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    package = tree / "stackbench"
    schema = tree / "loadgen" / "schema" / "result-v1.schema.json"
    for title, lines in (("imports docs/architecture.md does not allow", import_breaches(package)),
                         ("import cycles", [" ↔ ".join(g) for g in module_cycles(package)]),
                         ("engine keys read outside their place",
                          key_breaches(package, schema if schema.exists() else SCHEMA)),
                         (f"string-key reads in analysis/ and report/ (at most {STRING_KEY_READS_ALLOWED})",
                          [f"{where}:{r.line}: {r.code}" + ("" if r.explained else "  (no comment why)")
                           for where, r in string_key_reads(package)])):
        print(f"{title}: {len(lines)}")
        for line in lines:
            print(f"  {line}")

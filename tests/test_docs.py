"""The manual (README.md and docs/) checked against the code it describes, so an example
no one runs cannot go stale unnoticed. Pure and fast: nothing is started.

- Every TOML block is made of keys a plan takes (planning/plan.py's TOP_KEYS, and each
  table's own keys); a block that is a whole plan (it has [[stacks]]) is parsed as one.
  A block whose parts repeat a key (the load models, one after another) is read part by
  part, a part being what blank lines separate.
- Every `stackbench COMMAND` in a code span or block names a real command (`scenario
  list|show|run` too), and every --flag after it is one that command takes.
- docs/reference/plan-keys.md names every plan key; docs/reference/cli.md every command
  and flag; the README and docs/guide/scenarios.md every scenario with its question; the
  exit status tables every status the errors carry.
- The README fits one screen (12 KiB), and every relative link in README.md and docs/
  leads to a file that exists (and a heading there, when it names one).
"""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

import pytest

from stackbench import errors, scenarios
from stackbench.analysis.capacity import PERCENTILES
from stackbench.cli import build_parser
from stackbench.network import profiles, visitors
from stackbench.planning import hosts, loads, machine, plan, protocols, sizing, visits
from stackbench.workloads import app

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
README_LIMIT = 12 * 1024

FENCE = re.compile(r"^(?P<fence>```+|~~~+)(?P<lang>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)
SPAN = re.compile(r"(?<!`)`([^`]+)`(?!`)")


def rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


def blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block."""
    return [(m["lang"].strip(), m["body"]) for m in FENCE.finditer(text)]


def prose(text: str) -> str:
    """The text outside fenced blocks."""
    return FENCE.sub("", text)


def code(text: str) -> list[str]:
    """Every code block's body and every code span's text."""
    return [body for _, body in blocks(text)] + SPAN.findall(prose(text))


# ------------------------------------------------------------------ (a) plan keys

SLO_KEYS = {f"p{p}" for p in PERCENTILES if p != "100"} | {"max", *loads.SLO_COUNTS}
# Each table a plan may hold, by its path in the plan ("*": any name), and its keys.
TABLE_KEYS: dict[str, set[str]] = {
    "stacks": plan.STACK_KEYS,
    "app": app.KEYS,
    "app.urls": app.URL_KEYS,
    "tls": protocols.TLS_KEYS,
    "slo": SLO_KEYS,
    "search": loads.SEARCH_KEYS,
    "stages": loads.STAGE_KEYS,
    "machine": machine.KEYS,
    "hosts": set(hosts.KEYS),
    "networks.*": profiles.PROFILE_KEYS,
    "networks.*.down": profiles.SHAPE_KEYS,
    "networks.*.up": profiles.SHAPE_KEYS,
    "visitors.*": visitors.KEYS,
    "scenario": plan.SCENARIO_KEYS,
    "tune": plan.TUNE_KEYS,
    "sizing": sizing.KEYS,
    "sizing.target": sizing.TARGET_KEYS,
    "sizing.sizes": sizing.SIZE_KEYS,
}


def unknown_keys(data: dict, where: str = "") -> list[str]:
    """Keys a plan would refuse: top-level ones against TOP_KEYS, each table's against
    its own; a scenario's quick form and variants are plans of their own."""
    found = [f"{where}{k}" for k in data if k not in plan.TOP_KEYS]
    found += _table_keys(data, "", where)
    scenario = data.get("scenario")
    if isinstance(scenario, dict):
        if isinstance(scenario.get("quick"), dict):
            found += unknown_keys(scenario["quick"], f"{where}scenario.quick.")
        for name, variant in (scenario.get("variants") or {}).items():
            if isinstance(variant, dict):
                found += unknown_keys(variant, f"{where}scenario.variants.{name}.")
    return found


def _table_keys(table: dict, path: str, where: str) -> list[str]:
    found = []
    for key, value in table.items():
        here = f"{path}.{key}" if path else key
        if not path and key in ("networks", "visitors") and isinstance(value, dict):
            # Tables of the plan's own names: [networks.NAME], [visitors.NAME].
            for name, body in value.items():
                if isinstance(body, dict):
                    found += _keys_of(body, f"{key}.*", f"{where}{key}.{name}")
                    for side in ("down", "up"):
                        if key == "networks" and isinstance(body.get(side), dict):
                            found += _keys_of(body[side], f"networks.*.{side}", f"{where}{key}.{name}.{side}")
            continue
        if here not in TABLE_KEYS:
            continue
        for entry in value if isinstance(value, list) else [value]:
            if isinstance(entry, dict):
                found += _keys_of(entry, here, f"{where}{here}")
                found += _table_keys(entry, here, where)
    return found


def _keys_of(entry: dict, pattern: str, shown: str) -> list[str]:
    return [f"{shown}.{k}" for k in entry if k not in TABLE_KEYS[pattern]]


def toml_pieces(body: str) -> list[dict]:
    """A block as one TOML document, or, where its parts repeat a key, part by part."""
    try:
        return [tomllib.loads(body)]
    except tomllib.TOMLDecodeError:
        return [tomllib.loads(part) for part in re.split(r"\n[ \t]*\n", body) if part.strip()]


TOML_BLOCKS = [(page, body) for page in PAGES for lang, body in blocks(page.read_text()) if lang == "toml"]


def test_the_manual_shows_plans():
    """The checks below would pass on nothing: they must see the blocks they check."""
    assert len(TOML_BLOCKS) >= 10
    assert sum("stacks" in d for _, body in TOML_BLOCKS for d in toml_pieces(body)) >= 2


@pytest.mark.parametrize("page,body", TOML_BLOCKS, ids=[f"{rel(p)}:{i}" for i, (p, _) in enumerate(TOML_BLOCKS)])
def test_every_key_shown_is_one_a_plan_takes(page, body):
    for data in toml_pieces(body):
        assert unknown_keys(data) == [], f"{rel(page)}: a block shows keys no plan takes"


@pytest.mark.parametrize("page,body", [(p, b) for p, b in TOML_BLOCKS if "[[stacks]]" in b],
                         ids=lambda x: rel(x) if isinstance(x, Path) else "")
def test_every_whole_plan_shown_parses(page, body):
    for data in toml_pieces(body):
        if "stacks" in data:
            plan.parse(data, rel(page))


def test_the_key_checker_catches_a_misspelt_key():
    assert unknown_keys({"concurrancy": [1]}) == ["concurrancy"]
    assert unknown_keys({"search": {"budgett": "3m"}, "networks": {"x": {"down": {"rat": "1mbit"}}}}) == [
        "search.budgett", "networks.x.down.rat"]
    assert unknown_keys({"stacks": [{"id": "nginx-fpm", "knob": {}}]}) == ["stacks.knob"]
    assert unknown_keys({"scenario": {"quick": {"repetition": 5}}}) == ["scenario.quick.repetition"]
    assert unknown_keys({"tune": {"workloads": "wordpress-mix-slow"}}) == ["tune.workloads"]


def section(text: str, heading: str) -> str:
    """From a `## heading` line to the next `## ` one."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def test_the_plan_keys_page_names_every_key():
    page = (DOCS / "reference" / "plan-keys.md").read_text()
    top = section(page, "Top-level keys")
    assert {k for k in plan.TOP_KEYS if f"| `{k}` |" not in top} == set()
    for heading, keys in (("`[[stacks]]`", plan.STACK_KEYS), ("`[app]` and `[[app.urls]]`", app.KEYS),
                          ("`tls`", protocols.TLS_KEYS), ("`slo`", SLO_KEYS), ("`search`", loads.SEARCH_KEYS),
                          ("`stages`", loads.STAGE_KEYS), ("`[networks.NAME]`", profiles.PROFILE_KEYS),
                          ("`[visitors.NAME]`", visitors.KEYS), ("`machine`", machine.KEYS),
                          ("`[hosts]`", set(hosts.KEYS)), ("`[scenario]`", plan.SCENARIO_KEYS),
                          ("`[sizing]`", sizing.KEYS), ("`[visit]`", visits.KEYS)):
        text = section(page, heading)
        assert {k for k in keys if f"`{k}`" not in text and f'`"{k}"`' not in text} == set(), heading
    urls = section(page, "`[app]` and `[[app.urls]]`")
    assert {k for k in app.URL_KEYS if f"`urls.{k}`" not in urls} == set()
    tune = next(line for line in top.splitlines() if line.startswith("| `tune` |"))
    assert {k for k in plan.TUNE_KEYS if f"`{k}`" not in tune} == set()


# ------------------------------------------------------------------ (b) commands

def parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser and each command's, `scenario list` and its kin by both words."""
    top = build_parser()
    commands = dict(_subcommands(top))
    for name, sub in _subcommands(commands["scenario"]):
        commands[f"scenario {name}"] = sub
    return top, commands


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices.items())


def long_flags(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings if s.startswith("--")}


def invocations(chunk: str) -> list[list[str]]:
    """Each `stackbench …` in a piece of code, as its words (a shell comment ends it)."""
    found = []
    for line in chunk.splitlines():
        words = [w.strip("(`'\",;.)") for w in line.split()]
        words = words[:words.index("#")] if "#" in words else words
        starts = [i for i, w in enumerate(words) if w == "stackbench" or w.endswith("/stackbench")]
        for i, start in enumerate(starts):
            args = words[start + 1:starts[i + 1] if i + 1 < len(starts) else len(words)]
            if args:
                found.append(args)
    return found


COMMANDS = [(page, args) for page in PAGES for chunk in code(page.read_text()) for args in invocations(chunk)]


def test_the_manual_shows_commands():
    assert len(COMMANDS) >= 40
    assert {args[0] for _, args in COMMANDS} >= {"run", "scenario", "show", "compare", "export", "report"}


def test_every_command_shown_is_one_stackbench_has():
    top, commands = parsers()
    wrong = []
    for page, args in COMMANDS:
        rest = list(args)
        while rest and rest[0].startswith("-"):
            if rest[0] not in long_flags(top) and rest[0] not in ("-h",):
                wrong.append(f"{rel(page)}: stackbench {' '.join(args)}: no global flag {rest[0]}")
            rest.pop(0)
        if not rest:
            continue
        name = rest[0]
        if name == "scenario" and len(rest) > 1 and f"scenario {rest[1]}" in commands:
            name = f"scenario {rest[1]}"
        if name not in commands:
            wrong.append(f"{rel(page)}: stackbench {' '.join(args)}: no command {name!r}")
            continue
        allowed = long_flags(commands[name]) | long_flags(top)
        flags = {f for w in rest for f in re.findall(r"(?<![\w-])--[a-z][\w-]*", w)}
        wrong += [f"{rel(page)}: stackbench {' '.join(args)}: {name} has no {f}" for f in sorted(flags - allowed)]
    assert wrong == []


def test_the_cli_page_names_every_command_and_flag():
    top, commands = parsers()
    page = (DOCS / "reference" / "cli.md").read_text()
    assert {f for f in long_flags(top) if f"`{f}`" not in page} == set()
    for name, parser in commands.items():
        if name == "scenario":
            continue
        assert f"`stackbench {name}" in page, name
        if name.startswith("scenario "):
            text = section(page, "`stackbench scenario list | show | run`")
        else:
            text = section(page, next(h for h in re.findall(r"^## (`stackbench [^\n]*)$", page, re.M)
                                      if h.startswith(f"`stackbench {name}`") or h.startswith(f"`stackbench {name} ")))
        missing = {f for f in long_flags(parser) - {"--help"} if f"`{f}" not in text and f"{f}`" not in text}
        assert missing == set(), f"cli.md, {name}: {sorted(missing)}"


# ------------------------------------------------------------------ what the README and the guide list

def test_every_scenario_is_listed_with_its_question():
    readme = README.read_text()
    guide = (DOCS / "guide" / "scenarios.md").read_text()
    for s in scenarios.all_scenarios():
        for name, text in (("README.md", readme), ("docs/guide/scenarios.md", guide)):
            assert f"| `{s.name}` | {s.question}" in text, f"{name} does not list {s.name!r} with its question"


def test_every_exit_status_is_documented():
    statuses = {0} | {c.exit_code for c in vars(errors).values()
                      if isinstance(c, type) and issubclass(c, errors.StackbenchError)}
    readme = section(README.read_text(), "Exit status")
    page = (DOCS / "reference" / "exit-status.md").read_text()
    assert {s for s in statuses if not re.search(rf"(^|· |\n){s} ", readme)} == set()
    assert {s for s in statuses if f"\n| {s} |" not in page} == set()


# ------------------------------------------------------------------ (c) one screen

def test_the_readme_is_one_screen():
    assert len(README.read_bytes()) <= README_LIMIT


# ------------------------------------------------------------------ (d) links

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
REF_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: its text lower-cased, punctuation dropped,
    spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t]*#*$", prose(page.read_text()), re.M):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(page: Path) -> list[str]:
    text = SPAN.sub("", prose(page.read_text()))
    return LINK.findall(text) + REF_LINK.findall(text)


def test_every_relative_link_leads_somewhere():
    broken = []
    for page in PAGES:
        for target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{rel(page)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{rel(page)}: {target} (no such heading)")
    assert broken == []


def test_the_link_check_sees_links():
    assert sum(len(links(p)) for p in PAGES) >= 50
    assert slug("How it measures (and why)") == "how-it-measures-and-why"
    assert slug("`[app]` and `[[app.urls]]`") == "app-and-appurls"

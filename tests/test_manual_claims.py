"""Every claim of the manual held against the code that makes it true.

- Time: each scenario's `--quick --dry-run` (and the full form where a page quotes it) says how
  long it takes, its tunings included; every page that says how long a scenario takes —
  README.md, docs/, `scenario run --help`, the scenarios' own comments that `scenario show`
  prints — says what that dry run says. Any other "N minutes" in those pages is one of the
  few listed below (a measured figure with its source, `make test`), so a new claim cannot
  slip in unchecked.
- docs/guide/writing-a-plan.md's example plan: its dry run ends as the page quotes it, and
  the larger plan the page describes gets the dry run's plain word that its budget cannot
  hold it.
- `scenario show NAME --plan` prints a plan `stackbench run` takes as it is.
- docs/README.md links every guide.

The dry runs here make every check but the servers' own config checkers (runner/session.py
preflight: a second or two a plan, and the same stacks and knobs are checked by
test_every_printed_plan_runs_as_printed, in the slow tier): what is checked is the time they
print, which those checks do not change. Nothing is started."""

from __future__ import annotations

import contextlib
import io
import math
import re
import tomllib
from functools import cache
from pathlib import Path

import pytest

from stackbench import scenarios
from stackbench.cli import build_parser, main
from stackbench.commands import measure

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
IN_ALL = re.compile(r"^in all: about (?P<low>[\d.]+)(?:–(?P<high>[\d.]+))? min"
                    r"(?: \(up to (?P<worst>[\d.]+) min)?", re.M)


def _no_config_checks(plan, options, lab=None):  # see the module's docstring
    return []


def dry_run(argv: list[str]) -> str:
    """`stackbench ARGV --dry-run`'s output, in process."""
    real = measure.dry_check
    measure.dry_check = _no_config_checks
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            assert main([*argv, "--dry-run", "--db", ":memory:"]) == 0
    finally:
        measure.dry_check = real
    return out.getvalue()


@cache
def minutes(*argv: str) -> tuple[float, float, float]:
    """The dry run's last "in all" line: about LOW–HIGH min (up to WORST)."""
    found = IN_ALL.findall(dry_run(list(argv)))
    assert found, f"{argv}: the dry run says no time"
    low, high, worst = found[-1]
    high = high or low
    return float(low), float(high), float(worst or high)


def quick(name: str, variant: str | None = None) -> tuple[float, float, float]:
    return minutes("scenario", "run", name, "--quick", *(("--variant", variant) if variant else ()))


def full(name: str) -> tuple[float, float, float]:
    return minutes("scenario", "run", name)


def whole(low: float, high: float) -> str:
    """How the pages round a dry run's range: outwards, to whole minutes."""
    lo, hi = math.floor(low), math.ceil(high)
    return f"≤ {hi} min" if lo == 0 else f"{lo} min" if lo == hi else f"{lo}–{hi} min"


ALL = [(s.name, v) for s in scenarios.all_scenarios() for v in (None, *s.variants)]
LONG = sorted({name for name, v in ALL if math.ceil(quick(name, v)[1]) > 2})


def test_the_dry_run_totals_what_it_measures_first():
    """small-vps tunes two stacks before its cells: the dry run's time holds both."""
    out = dry_run(["scenario", "run", "small-vps", "--quick"])
    assert "2 tunings measured first" in out.strip().splitlines()[-1]
    cells = float(re.search(r"^\d+ cells \(.*?\), about ([\d.]+) min", out, re.M)[1])
    low, high, _ = quick("small-vps")
    untuned_low, untuned_high, _ = quick("small-vps", "untuned")  # the same cells, fixed pools
    # two tunings at 16 clients: 11 and 13 runs of ~4 s at most in the dry run's count
    assert cells == untuned_low and low > untuned_low and high > untuned_high + 1


def said(name: str, quick_form: bool) -> str:
    """The scenarios page's words for one form's time: the dry run's range in whole minutes,
    and a variant's where it differs."""
    def of(variant: str | None) -> str:
        return whole(*(quick(name, variant) if quick_form else
                       minutes("scenario", "run", name, *(("--variant", variant) if variant else ())))[:2])
    base = of(None)
    other = [f"`{v}`: {of(v)}" for v in scenarios.get(name).variants if of(v) != base]
    return base + (f" ({'; '.join(other)})" if other else "")


def test_the_scenarios_page_says_each_forms_time():
    page = (DOCS / "guide" / "scenarios.md").read_text()
    assert "| scenario | the question | variants | `--quick` takes | the full form |" in page
    for name in scenarios.names():
        row = re.search(rf"^\| `{name}` \|.*\| (?P<quick>[^|]+) \| (?P<full>[^|]+) \|$", page, re.M)
        assert row, f"scenarios.md has no row for {name}"
        assert (row["quick"], row["full"]) == (said(name, True), said(name, False)), name


def test_scenario_run_help_says_which_quick_forms_take_longer_than_two_minutes():
    run = build_parser()._subparsers._group_actions[0].choices["scenario"]  # type: ignore[union-attr]
    quick_help = next(a.help for a in run._subparsers._group_actions[0].choices["run"]._actions
                      if "--quick" in a.option_strings)
    assert "about 2 minutes" in quick_help
    for name in scenarios.names():
        longest = max(math.ceil(quick(n, v)[1]) for n, v in ALL if n == name)
        if name in LONG:
            assert f"{name} {longest}" in quick_help, (name, longest, quick_help)
        else:
            assert name not in quick_help and longest <= 2
    assert LONG == ["sizing", "small-vps"]  # if this changes, so does every page that names them


# Each page's words about a scenario's time, and what must be true of the dry run for them to be.
def _up_to(n: float):
    return lambda e: math.ceil(e[1]) <= n


def _range(lo: int, hi: int, worst: int | None = None):
    return lambda e: math.floor(e[0]) == lo and math.ceil(e[1]) == hi and (worst is None or math.ceil(e[2]) == worst)


CLAIMS = [
    (README, "scenario run htaccess --quick   # about 2 minutes", lambda: quick("htaccess"), _up_to(2)),
    (DOCS / "guide" / "first-run.md", "scenario run htaccess --quick   # about 2 minutes", lambda: quick("htaccess"),
     _up_to(2)),
    (DOCS / "guide" / "scenarios.md", "scenario run htaccess --quick   # its short form: about 2 minutes",
     lambda: quick("htaccess"), _up_to(2)),
    (DOCS / "reference" / "cli.md", "run it (--quick: about 2 minutes", lambda: quick("htaccess"), _up_to(2)),
    (DOCS / "README.md", "a quick form of about two minutes (the machine to buy and the small VPS take",
     lambda: max(quick(n) for n in scenarios.names() if n not in LONG), _up_to(2)),
    (DOCS / "guide" / "scenarios.md", "in about 2 minutes on a 2-core machine, but `small-vps` and `sizing`",
     lambda: max(quick(n) for n in scenarios.names() if n not in LONG), _up_to(2)),
    (DOCS / "guide" / "scenarios.md", "`small-vps --quick` 1–4 minutes, up to 10", lambda: quick("small-vps"),
     _range(1, 4, 10)),
    (DOCS / "guide" / "scenarios.md", "`sizing --quick` 2–19", lambda: quick("sizing"), _range(2, 19)),
    (DOCS / "guide" / "sizing.md", "on a fresh store says about 2–19 minutes", lambda: quick("sizing"),
     _range(2, 19)),
    (DOCS / "guide" / "machine-profiles.md", "its dry run says 1–4 minutes, up to 10", lambda: quick("small-vps"),
     _range(1, 4, 10)),
    (ROOT / "stackbench/scenarios/sizing.toml", "the full form's dry run says 20–40 minutes", lambda: full("sizing"),
     _range(20, 40)),
    (ROOT / "stackbench/scenarios/sizing.toml", "its dry run says 2–19\n# minutes", lambda: quick("sizing"),
     _range(2, 19)),
    (ROOT / "stackbench/scenarios/small-vps.toml", "the whole form's dry run says 5–9 minutes, up to 30",
     lambda: full("small-vps"), _range(5, 9, 30)),
    (ROOT / "stackbench/scenarios/static.toml", "within a full form's ten minutes", lambda: full("static"),
     _up_to(10)),
    (ROOT / "stackbench/scenarios/static.toml", "five runs a side within two minutes", lambda: quick("static"),
     _up_to(2)),
    (ROOT / "stackbench/scenarios/capacity.toml", "One search a side within 2 minutes", lambda: quick("capacity"),
     _up_to(2)),
    (ROOT / "stackbench/plans/default.toml", "3 to 4½ minutes on a 2-core machine", lambda: minutes("run"),
     _range(3, 5)),
    (DOCS / "reference" / "cli.md", "about 2 minutes, but on a fresh store `sizing` 19 and `small-vps` 4",
     lambda: (quick("sizing"), quick("small-vps")), lambda e: [math.ceil(x[1]) for x in e] == [19, 4]),
    (README, "runs the default plan, prints verdicts (~4 min)", lambda: minutes("run"), _range(3, 5)),
    (DOCS / "guide" / "first-run.md", "runs the default plan, prints verdicts (~4 min)", lambda: minutes("run"),
     _range(3, 5)),
]
# Held to the dry run by tests of their own: the scenarios page's table, writing-a-plan.md's
# quoted dry runs.
CHECKED_ELSEWHERE = ["in all: about 1.4–1.7 min (up to 3.4 min if every window stretches", "540 cells, 38 minutes",
                     "repetitions every comparison needs take about 38 min", "or a budget of 38 min or more"]
# Words about minutes that are not a dry run's: measured figures with their source, the tests'
# time, what a clock may drift by.
NOT_A_DRY_RUN = [
    "whole test suite (cargo test, 40 s of fuzzing, pytest; ~14 min on 2 cores)",
    "13 min 25 s with the set-up already done",
    "1,408 tests in 1 min 28 s",
    "239 that start servers in 10 min 33 s",
    "minutes of `make test`",
    "starts more than a minute after the last probe",
    "the first time takes minutes",
    "after five minutes",
    "where the two\nminutes allow",
    "(16 min 35 s measured with 2.5 s probes",
    "3 min 28 s – 4 min 52 s in three runs",
    "(4 min 40 s measured",
    "(22 min 37 s measured",
    "8 min 56 s measured",
    "2 min 14 s with its tunings stored",
    "the tunings 6 min 30 s of it",
    "two took 6 min 30 s measured, the other two 7 min measured",
    "made the quick form 5 min 20 s",
    "3 min 57 s measured on a fresh",
    "beginning no repetition that would end past 100 s",
]
TIME = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)?(?:½)?|two|ten|a few)(?:–\d+)?\s*\n?#?\s*(?:min\b|minutes?\b)", re.I)


@pytest.mark.parametrize("page, words, asked, holds", CLAIMS, ids=[f"{p.name}: {w[:40]}" for p, w, _, _ in CLAIMS])
def test_every_claim_of_time_is_what_the_dry_run_says(page, words, asked, holds):
    assert words in page.read_text(), f"{page.relative_to(ROOT)} no longer says {words!r}: update CLAIMS"
    assert holds(asked()), f"{page.relative_to(ROOT)} says {words!r}; the dry run says {asked()}"


def test_no_page_says_how_long_something_takes_unchecked():
    pages = [README, *DOCS.rglob("*.md"), *(ROOT / "stackbench/scenarios").glob("*.toml"),
             ROOT / "stackbench/plans/default.toml"]
    known = [w for _, w, _, _ in CLAIMS] + NOT_A_DRY_RUN + CHECKED_ELSEWHERE
    unchecked = []
    for page in pages:
        if page.name == "architecture.md":
            continue
        text = page.read_text()
        table = re.findall(r"^\| `[a-z0-9-]+` \|.*$", text, re.M) if page.name == "scenarios.md" else []
        covered = [(m.start(), m.start() + len(w)) for w in known + table for m in re.finditer(re.escape(w), text)]
        for m in TIME.finditer(text):
            if not any(start <= m.start() and m.end() <= end for start, end in covered):
                unchecked.append(f"{page.relative_to(ROOT)}: …{text[max(0, m.start() - 50):m.end()]}")
    assert unchecked == []


# ------------------------------------------------------------------ writing-a-plan.md's example

def _example() -> str:
    page = (DOCS / "guide" / "writing-a-plan.md").read_text()
    return re.search(r"```toml\n(.*?)```", page, re.S)[1]


def test_the_plan_example_fits_its_budget_and_its_dry_run_ends_as_the_page_says(tmp_path):
    page = (DOCS / "guide" / "writing-a-plan.md").read_text()
    plan = tmp_path / "htaccess.toml"
    plan.write_text(_example())
    out = dry_run(["run", str(plan)])
    last = out.strip().splitlines()[-1]
    assert f"```\n{last}\n```" in page and "budget:" not in out
    assert "20 cells" in out and "2 × 2 × 1 × 1 = 4 a repetition, 20 in the five repetitions" in page


def test_the_larger_plan_the_page_describes_gets_the_budget_line_it_quotes(tmp_path):
    page = (DOCS / "guide" / "writing-a-plan.md").read_text()
    text = (_example().replace("concurrency = [16]", "concurrency = [1, 16, 64]")
            .replace("keepalive = [true]", "keepalive = [true, false]")
            .replace('workloads = ["static-12b", "php-hello"]', 'workloads = ["static-12b", "php-hello", "php-100k"]')
            .replace("# protocol =", "protocol =").replace("# tls =", "tls ="))
    plan = tmp_path / "big.toml"
    plan.write_text(text)
    out = dry_run(["run", str(plan)])
    line = next(x for x in out.splitlines() if x.startswith("budget: "))
    assert f"```\n{line}\n```" in page
    assert "540 cells" in out and "540 cells, 38 minutes" in page and "about 38 min" in line


# ------------------------------------------------------------------ scenario show --plan

@pytest.mark.parametrize("name", scenarios.names())
def test_scenario_show_plan_prints_the_plan_alone(name, capsys, tmp_path):
    assert main(["scenario", "show", name, "--plan"]) == 0
    printed = capsys.readouterr().out
    assert tomllib.loads(printed)["scenario"]["question"]  # TOML from its first line to its last
    plan = tmp_path / f"{name}.toml"
    plan.write_text(printed)
    out = dry_run(["run", str(plan)])
    expected = dry_run(["scenario", "run", name])
    assert out == expected  # the same cells, checks and times as the scenario's own full form


@pytest.mark.slow
def test_every_printed_plan_runs_as_printed(tmp_path, capsys):
    """`stackbench run FILE --dry-run` with every check, the servers' config checkers too."""
    for name in scenarios.names():
        assert main(["scenario", "show", name, "--plan"]) == 0
        plan = tmp_path / f"{name}.toml"
        plan.write_text(capsys.readouterr().out)
        assert main(["run", str(plan), "--dry-run", "--db", str(tmp_path / "r.sqlite")]) == 0, name
        assert "configs checked" in capsys.readouterr().out


# ------------------------------------------------------------------ the index

def test_the_manual_index_links_every_guide_and_reference_page():
    index = (DOCS / "README.md").read_text()
    for page in sorted([*(DOCS / "guide").glob("*.md"), *(DOCS / "reference").glob("*.md")]):
        target = page.relative_to(DOCS).as_posix()
        assert f"]({target})" in index, f"docs/README.md has no link to {target}"
    readme = README.read_text()
    assert "](docs/guide/sizing.md)" in readme.split("## Read on")[1]


# ------------------------------------------------------------------ the lab's own words

FENCED = re.compile(r"^(```+|~~~+)[^\n]*\n.*?^\1[ \t]*$", re.M | re.S)
# Words the lab uses in a sense of its own: each page that uses one links its first use to the
# glossary, which defines it.
JARGON = {"cell": "cell", "seed": "seed"}


def _first_in_prose(text: str, word: str) -> int | None:
    """Where a page first uses `word` in its prose: not in a code block or span, a heading, or
    a link's target."""
    hidden = [m.span() for m in FENCED.finditer(text)]
    hidden += [m.span() for m in re.finditer(r"(?<!`)`[^`\n]+`(?!`)", text)]
    hidden += [m.span() for m in re.finditer(r"^#.*$", text, re.M)]
    hidden += [m.span(1) for m in re.finditer(r"\]\(([^)]*)\)", text)]
    return next((m.start() for m in re.finditer(rf"\b{word}s?\b", text, re.I)
                 if not any(a <= m.start() < b for a, b in hidden)), None)


@pytest.mark.parametrize("word", sorted(JARGON))
def test_the_first_use_of_each_of_the_labs_own_words_links_the_glossary(word):
    glossary = DOCS / "reference" / "glossary.md"
    assert f"\n## {word.capitalize()}\n" in glossary.read_text()
    unlinked = []
    for page in [README, *sorted(DOCS.rglob("*.md"))]:
        if page == glossary:
            continue
        text = page.read_text()
        at = _first_in_prose(text, word)
        if at is None:
            continue
        line_start, line_end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        link = re.compile(rf"\[[^\]]*\]\((?:\.\./)*(?:docs/)?(?:reference/)?glossary\.md#{JARGON[word]}\)")
        if not any(m.start() <= at < m.end() for m in link.finditer(text)) and \
                "glossary.md" not in text[line_start:line_end]:
            unlinked.append(f"{page.relative_to(ROOT)}: …{text[max(0, at - 40):at + 10]!r}")
    assert unlinked == []


def test_every_help_that_says_cell_says_what_one_is():
    for p in _parsers():
        text = " ".join(p.format_help().split())
        if re.search(r"\bcells?\b", text):
            assert "a cell is one stack measured on one workload at one load" in text, p.prog
            assert "docs/reference/glossary.md" in text, p.prog


def test_scenario_show_calls_a_claim_a_claim(capsys):
    assert main(["scenario", "show", "static"]) == 0
    out = capsys.readouterr().out
    assert "the claim: 'nginx is faster for static files'" in out and "the argument" not in out
    for page in [README, *DOCS.rglob("*.md")]:
        assert "the argument:" not in page.read_text(), page
    # a plan written with the older key is still taken
    from stackbench.planning import plan as plan_mod

    old = plan_mod.parse(tomllib.loads('[scenario]\nquestion = "?"\nseed = "they say"\n[[stacks]]\nid = "nginx-fpm"\n'),
                         "old.toml")
    assert old.scenario == {"question": "?", "seed": "they say"}


def _parsers():
    """The top-level parser and every command's."""
    out, todo = [], [build_parser()]
    while todo:
        p = todo.pop()
        out.append(p)
        for a in p._actions:
            if isinstance(getattr(a, "choices", None), dict):
                todo += [c for c in a.choices.values() if hasattr(c, "_actions")]
    return out


def test_every_argument_and_flag_of_every_command_says_what_it_is():
    import argparse

    bare = [f"{p.prog} {a.dest}" for p in _parsers() for a in p._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and not a.help]
    assert bare == []
    explain = next(p for p in _parsers() if p.prog == "stackbench explain")
    assert "the first cell: RUN:SEQ" in " ".join(explain.format_help().split())

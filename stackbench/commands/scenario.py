"""`stackbench scenario list` and `scenario show NAME`: the questions it can answer."""

from __future__ import annotations

import argparse
import sys
import textwrap

from stackbench import scenarios
from stackbench.report.text.style import Style


def cmd_scenario_list(args: argparse.Namespace) -> int:
    style = Style(sys.stdout)
    all_ = scenarios.all_scenarios()
    width = max(len(s.name) for s in all_)
    for s in all_:
        missing = s.missing
        line = f"{s.name.ljust(width)}  {s.question}" + (f"  [--variant {', '.join(s.variants)}]" if s.variants else "")
        if missing:
            line = style.dim(line + f"  [not yet: needs {', '.join(missing)}]")
        print(line)
    print(style.dim("\n`stackbench scenario show NAME` for the question and the plan (`--plan`: the plan alone, "
                    "to copy); `stackbench scenario run NAME [--quick] [--variant V]` runs it"))
    return 0


def cmd_scenario_show(args: argparse.Namespace) -> int:
    s = scenarios.get(args.name)
    if args.plan:
        # The plan alone, as a file `stackbench run` takes: the words above it would have
        # to be stripped by hand, so they are TOML comments here.
        print(f"# stackbench scenario {s.name}: `stackbench run FILE` runs its full form; "
              f"`stackbench scenario run {s.name} --quick` its quick one")
        print(s.text.rstrip())
        return 0
    style = Style(sys.stdout)
    print(style.bold(s.name) + ": " + s.question)
    for label, text in (("the claim", s.claim), ("what to look at", s.look_at), ("its pools", s.knobs)):
        if text:
            print(textwrap.fill(f"{label}: {text}", width=100, subsequent_indent="  "))
    if s.missing:
        print(style.warn(f"cannot run yet: needs {', '.join(s.missing)}"))
    print(style.dim(f"\nthe plan (`stackbench scenario show {s.name} --plan > my.toml` writes it alone; "
                    "change it and `stackbench run my.toml`):"))
    print(s.text.rstrip())
    return 0

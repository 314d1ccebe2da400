"""Named scenarios: shipped plans, one per question people argue about, each with a
[scenario] table (the question, the claim it tests, what to look at).

A scenario whose `requires` names a workload or load model this stackbench does not have
yet is listed with the reason, and becomes runnable when that lands: `workload:ID` is
met when the workload is registered, `load:NAME` when the plan format has that load model
(LOAD_MODELS below).

`[scenario.quick]` holds the keys `--quick` replaces; `[scenario.variants.NAME]` the keys
`--variant NAME` replaces after them (e.g. `https`: the same question asked over TLS), so
a variant has a quick form too — and `[scenario.variants.NAME.quick]` what its own quick
form replaces last (a variant with stacks of its own). `knobs` in [scenario] says whether
the scenario's pools are tuned or fixed, and why (`scenario show`).
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from stackbench import workloads
from stackbench.planning import plan as plan_mod
from stackbench.errors import UsageError

# Load models the plan format supports beyond closed-loop concurrency (stackbench/planning/loads.py);
LOAD_MODELS: frozenset[str] = frozenset({"ramps", "open-loop", "stages", "capacity", "slow-readers"})


@dataclass(frozen=True)
class Scenario:
    name: str
    question: str
    claim: str  # what people say, that the question tests (`claim`; `seed`, its older name, still read)
    look_at: str
    requires: tuple[str, ...]
    text: str  # the TOML as shipped
    variants: tuple[str, ...] = ()  # [scenario.variants.NAME], in the file's order
    knobs: str = ""  # tuned or fixed, and why

    @property
    def missing(self) -> list[str]:
        """What this stackbench lacks to run it, in words; empty when runnable."""
        out = []
        for need in self.requires:
            kind, _, what = need.partition(":")
            if kind == "workload" and what not in workloads.IDS:
                out.append(f"the workload {what!r}")
            elif kind == "load" and what not in LOAD_MODELS:
                out.append(f"the {what} load model")
        return out

    def plan(self, quick: bool = False, variant: str | None = None) -> plan_mod.Plan:
        return plan_mod.parse(self.data(quick, variant), f"scenario {self.name}" + (" --quick" if quick else "")
                              + (f" --variant {variant}" if variant else ""))

    def data(self, quick: bool = False, variant: str | None = None) -> dict[str, Any]:
        """The plan as a plan file's table, its quick form and variant applied (not checked:
        `plan` checks it; `stackbench size` asks its own question of the sizing's)."""
        if self.missing:
            raise UsageError(f"scenario {self.name!r} cannot run yet: it needs {', '.join(self.missing)}",
                             hint="`stackbench scenario list` shows which scenarios can run")
        if variant is not None and variant not in self.variants:
            raise UsageError(f"scenario {self.name!r} has no variant {variant!r}",
                             hint=(f"its variants: {', '.join(self.variants)}" if self.variants
                                   else "it has none; `stackbench scenario list` names the variants of each"))
        data = tomllib.loads(self.text)
        if quick:
            data.update(data["scenario"].get("quick", {}))
        if variant is not None:
            changes = dict(data["scenario"]["variants"][variant])
            own_quick = changes.pop("quick", {})  # a variant's own quick form: [scenario.variants.V.quick]
            data.update(changes)
            if quick:
                data.update(own_quick)
        if quick:
            _adapt(data)
        return data


# A quick form's repetitions (spec: every comparison decided in 2 minutes on 2 cores):
# its runs a side at least, then more while a throughput comparison is still without a
# verdict, none begun that would end past this long after the first (the rest of the
# 2 minutes: stacks' start, a WordPress site's provisioning, the report).
QUICK_BUDGET_S = 100
QUICK_MAX_REPETITIONS = 15


def _adapt(data: dict[str, Any]) -> None:
    """A quick form adapts (runner/repetitions.py): its repetitions become the least of
    repetitions = "auto" within QUICK_BUDGET_S. A form of fewer runs than a verdict needs
    (a capacity search's one) stays as it is."""
    reps = data.get("repetitions", 1)
    if reps != "auto":
        if not isinstance(reps, int) or reps < plan_mod.MIN_RUNS:
            return
        data.update(repetitions="auto", min_repetitions=reps, max_repetitions=max(reps, QUICK_MAX_REPETITIONS))
    data.setdefault("budget", f"{QUICK_BUDGET_S}s")


def names() -> list[str]:
    files = resources.files(__name__).iterdir()
    return sorted(f.name.removesuffix(".toml") for f in files if f.name.endswith(".toml"))


def get(name: str) -> Scenario:
    if name not in names():
        close = difflib.get_close_matches(name, names(), n=1)
        raise UsageError(f"no scenario {name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""),
                         hint="`stackbench scenario list` lists them")
    text = resources.files(__name__).joinpath(f"{name}.toml").read_text()
    meta: dict[str, Any] = tomllib.loads(text)["scenario"]
    return Scenario(name, meta["question"], meta.get("claim", meta.get("seed", "")), meta.get("look_at", ""),
                    tuple(meta.get("requires", ())), text, tuple(meta.get("variants", {})), meta.get("knobs", ""))


def all_scenarios() -> list[Scenario]:
    return [get(n) for n in names()]

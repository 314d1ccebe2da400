"""Plan parsing and expansion (unit)."""

from __future__ import annotations

import pytest

from stackbench.planning import plan as plan_mod
from stackbench.errors import PlanError


def parse(text: str) -> plan_mod.Plan:
    import tomllib

    return plan_mod.parse(tomllib.loads(text), "test.toml")


MINIMAL = """
concurrency = [64, 1, 16]
keepalive = [true, false]
workloads = ["static-12b", "php-hello"]
[[stacks]]
id = "nginx-fpm"
[[stacks]]
id = "apache-prefork-modphp"
knobs = { allow_override = "All" }
"""


def test_default_plan_is_the_seeds_question_with_verdicts():
    plan = plan_mod.load(None)
    cells = plan_mod.expand(plan)
    assert [v.label for v in plan.stacks] == ["nginx + FPM", "Apache mod_php", "Apache mod_php, AllowOverride All"]
    assert plan.baseline == "nginx + FPM" and plan.adaptive
    assert (plan.min_repetitions, plan.max_repetitions) == (6, 8)
    assert len(cells) == 3 * 3 * 8  # up to the cap
    assert {c.workload for c in cells} == {"static-12b", "php-hello", "php-100k"}
    # Short enough for the 5-minute budget with set-up: load, warm-up and profile pass
    # plus ~0.5 s to start and stop a stack per cell.
    assert len(cells) * plan.cell_seconds() < 300  # the worst case, all 8 repetitions (measured: 4 min 21 s)


def test_verdict_keys():
    plan = parse('baseline = "nginx-fpm"\nrepetitions = "auto"\ntarget_ci = "2%"\n'
                 'min_repetitions = 5\nmax_repetitions = 7\nequivalence = 0.01\n' + MINIMAL)
    assert (plan.baseline, plan.adaptive, plan.target_ci, plan.min_repetitions, plan.max_repetitions,
            plan.equivalence) == ("nginx-fpm", True, 0.02, 5, 7, 0.01)
    assert plan.repetitions == 7  # expanded up to the cap; the runner stops earlier
    assert max(c.repetition for c in plan_mod.expand(plan)) == 6


@pytest.mark.parametrize("extra,message", [
    ('baseline = "nginx"', "baseline 'nginx' is not one of the plan's stacks (did you mean 'nginx-fpm'?)"),
    ('repetitions = "many"', 'repetitions must be a whole number >= 1 or "auto"'),
    ('repetitions = "auto"\nmin_repetitions = 9\nmax_repetitions = 5', "min_repetitions (9) is above max_repetitions"),
    ('target_ci = "3 percent"', 'target_ci takes a share such as 0.03 or "3%"'),
    ("equivalence = 2", 'equivalence takes a share'),
    ("max_repetitions = 0", "max_repetitions must be a whole number >= 1"),
    ('repetitions = "auto"\nmin_repetitions = 3', "min_repetitions must be at least 5"),
    ('scenario = "x"', "scenario must be a table"),
    ('[scenario]\nquestin = "?"', "unknown key scenario.'questin' (did you mean 'question'?)"),
])
def test_bad_verdict_keys(extra, message):
    with pytest.raises(PlanError) as e:
        # a table goes after the plan's [[stacks]], a key before them
        parse(MINIMAL + extra + "\n" if extra.startswith("[") else extra + "\n" + MINIMAL)
    assert message in e.value.message


def test_expand_orders_cells_by_stack_then_workload_then_concurrency():
    cells = plan_mod.expand(parse(MINIMAL))
    assert len(cells) == 2 * 2 * 3 * 2
    assert [c.seq for c in cells] == list(range(len(cells)))
    first = cells[:6]
    assert {c.stack.id for c in first} == {"nginx-fpm"}
    assert [c.concurrency for c in first] == [1, 1, 16, 16, 64, 64]
    assert [c.keepalive for c in first] == [True, False] * 3


def test_descending_and_shuffled_orders():
    text = 'order = "descending"\n' + MINIMAL
    desc = plan_mod.expand(parse(text))
    assert [c.concurrency for c in desc[:6:2]] == [64, 16, 1]
    shuffled = plan_mod.expand(parse('order = "shuffled"\nseed = 7\n' + MINIMAL))
    again = plan_mod.expand(parse('order = "shuffled"\nseed = 7\n' + MINIMAL))
    assert [c.concurrency for c in shuffled] == [c.concurrency for c in again]  # reproducible
    assert sorted(c.concurrency for c in shuffled[:6:2]) == [1, 16, 64]


def test_a_levels_modes_alternate_their_order_across_repetitions_and_the_levels_keep_theirs():
    """With restart = "stack" a later cell meets a server its earlier ones warmed: each
    mode (here HTTPS and HTTP/2) runs first in every other repetition, so a protocol
    comparison is not the order's; the levels climb in every repetition (small-vps)."""
    cells = plan_mod.expand(parse('repetitions = 3\nrestart = "stack"\nconcurrency = [16, 64]\n'
                                  'protocol = ["https", "h2"]\nworkloads = ["static-12b"]\n'
                                  '[[stacks]]\nid = "nginx-fpm"\n'))
    by_rep = [[(c.concurrency, c.protocol) for c in cells if c.repetition == r] for r in range(3)]
    assert by_rep[0] == by_rep[2] == [(16, "https"), (16, "h2"), (64, "https"), (64, "h2")]
    assert by_rep[1] == [(16, "h2"), (16, "https"), (64, "h2"), (64, "https")]
    assert [c.seq for c in cells] == list(range(12))


def test_repetitions_interleave_stacks():
    cells = plan_mod.expand(parse('repetitions = 2\nworkloads = ["static-12b"]\nconcurrency = [1]\nkeepalive = [true]\n'
                                  '[[stacks]]\nid = "nginx-fpm"\n[[stacks]]\nid = "apache-prefork-modphp"\n'))
    assert [(c.repetition, c.stack.id) for c in cells] == [
        (0, "nginx-fpm"), (0, "apache-prefork-modphp"), (1, "nginx-fpm"), (1, "apache-prefork-modphp")]


def test_labels_name_the_knobs_that_differ_from_defaults():
    plan = parse('[[stacks]]\nid = "nginx-fpm"\nknobs = { pm = "static", pm_max_children = 5 }\n')
    assert plan.stacks[0].label == "nginx-fpm pm=static"  # 5 is the default: not in the label


@pytest.mark.parametrize("text, message", [
    ('[[stacks]]\nid = "nginx-php"\n', "unknown stack 'nginx-php'"),
    ('[[stacks]]\nid = "nginx-fpm"\nknobs = { pm = "sometimes" }\n', "knob 'pm' is one of"),
    ('[[stacks]]\nid = "nginx-fpm"\nknobs = { nope = 1 }\n', "has no knob 'nope'"),
    ('concurency = [1]\n[[stacks]]\nid = "nginx-fpm"\n', "did you mean 'concurrency'"),
    ('duration = "fast"\n[[stacks]]\nid = "nginx-fpm"\n', "not a duration"),
    ('workloads = ["php-hello", "cat.gif"]\n[[stacks]]\nid = "nginx-fpm"\n', "unknown workload 'cat.gif'"),
    ('concurrency = [0]\n[[stacks]]\nid = "nginx-fpm"\n', "whole numbers from 1 to 100,000"),
    ('name = "x"\n', "at least one [[stacks]]"),
    ('[[stacks]]\nid = "nginx-fpm"\n[[stacks]]\nid = "nginx-fpm"\n', "two stacks have the label"),
    ('[[stacks]]\nid = "nginx-fpm"\nknobs = { pm_max_children = "many" }\n', "whole number"),
])
def test_bad_plans_say_what_is_wrong(text, message):
    with pytest.raises(PlanError) as e:
        parse(text)
    assert message in e.value.message
    assert e.value.message.startswith("test.toml")


def test_bad_toml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("concurrency = [1,\n")
    with pytest.raises(PlanError, match="not valid TOML"):
        plan_mod.load(bad)
    with pytest.raises(PlanError, match="cannot read plan"):
        plan_mod.load(tmp_path / "absent.toml")

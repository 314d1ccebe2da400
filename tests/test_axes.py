"""Comparisons along an axis (unit): one verdicts.decide for every axis (analysis/axes.py)
— the stack, the protocol, the ramp's way, the visitors beside, a knob's setting, the
machine's size — the sides named as they are, never renamed stack labels or a stack folded
into the workload; the sentences and the export name both sides and the stack."""

from __future__ import annotations

import random

from stackbench.analysis import axes, protocols, ramps, verdicts
from stackbench.report import export
from stackbench.report.text import verdicts as verdicts_text
from cells import stored_cell, stored_run


def runs(rps: float, n: int = 5, *, seed: int = 1, start: int = 0, step: int = 2, **columns) -> list:
    """`n` repetitions of one cell around `rps` req/s, seqs start, start + step, …"""
    rng = random.Random(seed)
    out = []
    for rep in range(n):
        value = rps * rng.gauss(1, 0.01)
        out.append(stored_cell(seq=start + step * rep, repetition=rep, requests_per_s=value,
                               latency_p50_us=int(1e6 / value), latency_p99_us=int(3e6 / value),
                               requests_completed=int(value * 2), requests_failed=0, non_2xx=0,
                               connections_measured=16, connections_without_response=0, **columns))
    return out


def throughput(vs: verdicts.Verdicts) -> list[verdicts.Verdict]:
    return vs.for_metric("throughput")


def test_the_stack_axis_is_the_default_and_names_no_stack_beside_its_sides():
    cells = runs(1000, stack_label="nginx") + runs(1500, seed=2, start=1, stack_label="apache")
    vs = verdicts.decide(cells, "nginx")
    (v,) = throughput(vs)
    assert (vs.axis, v.baseline, v.candidate, v.within) == (axes.STACK, "nginx", "apache", None)
    assert not vs.self_comparison and v.better is True
    (row,) = [r for r in export.verdict_rows(vs) if r["metric"] == "throughput"]
    assert (row["axis"], row["stack"], row["workload"]) == ("stack", None, "php-hello")


def test_a_knob_axis_compares_settings_on_one_stack_with_its_other_knobs_equal():
    def knobs(workers: int, override: str = "None") -> dict:
        return {"stack_id": "apache-prefork", "knobs": {"max_workers": workers, "allow_override": override}}

    cells = (runs(1000, **knobs(8), stack_label="8 workers")
             + runs(1400, seed=2, start=1, **knobs(32), stack_label="32 workers")
             # the same settings with another knob changed: a group of their own
             + runs(700, seed=3, start=20, **knobs(8, "All"), stack_label="8 workers, All")
             + runs(720, seed=4, start=21, **knobs(32, "All"), stack_label="32 workers, All"))
    vs = verdicts.decide(cells, "max_workers = 8", axis=axes.knob("max_workers"))
    got = {(v.within, v.candidate, v.baseline): v for v in throughput(vs)}
    assert set(got) == {("apache-prefork", "max_workers = 32", "max_workers = 8")}
    assert len(throughput(vs)) == 2 and vs.self_comparison and vs.axis.name == "knob"
    faster, same = sorted(throughput(vs), key=lambda v: -v.comparison.ratio)
    assert 1.35 < faster.comparison.ratio < 1.45 and faster.better is True  # 1,400 against 1,000
    assert 1.0 < same.comparison.ratio < 1.05  # 720 against 700, the other knob's group
    line = verdicts_text.question_name(faster.question, faster.within) + ": " + verdicts_text.headline(faster, vs.band)
    assert line.startswith("apache-prefork · php-hello c=16 keep-alive: max_workers = 32 is 4")


def test_a_machine_axis_compares_each_stack_on_two_machine_profiles():
    small = stored_run(id=1, environment={"machine_profile": {"cpus": 1, "memory_bytes": 512 << 20,
                                                              "server_cpus": [0]}})
    large = stored_run(id=2, environment={"machine_profile": {"cpus": 2, "memory_bytes": 1 << 30}})
    cells = []
    for i, label in enumerate(("nginx", "apache")):
        cells += runs(1000 + 100 * i, seed=1 + i, start=i, run_id=1, stack_label=label)
        cells += runs(1800 + 100 * i, seed=3 + i, start=i, run_id=2, stack_label=label)
    axis = axes.machine([small, large])
    vs = verdicts.decide(cells, "1 CPU, 512 MiB", axis=axis)
    got = {v.within: v for v in throughput(vs)}
    assert set(got) == {"nginx", "apache"} and vs.family_sizes["throughput"] == 2
    assert all(v.candidate == "2 CPUs, 1 GiB" and v.better for v in got.values())
    assert verdicts_text.headline(got["nginx"], vs.band).startswith("2 CPUs, 1 GiB is 80 % faster than 1 CPU, 512 MiB")
    rows = [r for r in export.verdict_rows(vs) if r["metric"] == "throughput"]
    assert {(r["axis"], r["stack"], r["workload"]) for r in rows} == {
        ("machine", "nginx", "nginx · php-hello"), ("machine", "apache", "apache · php-hello")}
    assert axes.size_words(None) == axes.UNCONFINED


def test_a_self_comparison_keeps_the_cells_as_they_are():
    """The way down against the way up: the stack stays the cell's, the side is read."""
    cells = (runs(1000, leg="up", stack_label="nginx", status="ok") + runs(1300, seed=2, start=1, leg="down",
                                                                          stack_label="nginx"))
    bad = stored_cell(seq=99, repetition=5, leg="down", stack_label="nginx", engine=None, status="failed")
    vs = ramps.decide(cells + [bad])
    (v,) = throughput(vs)
    assert (v.baseline, v.candidate, v.within, v.question.leg) == (axes.UP, axes.DOWN, "nginx", None)
    (e,) = vs.excluded
    assert (e.stack_label, e.side, e.within, e.question.leg) == ("nginx", axes.DOWN, "nginx", None)
    assert v.candidate_excluded == ("not_measured",)
    assert all(c.stack_label == "nginx" for c in cells)


def test_the_protocol_axis_names_each_sides_baseline_among_those_asked():
    assert protocols.against("HTTPS", ["HTTP", "HTTPS"]) == "HTTP"
    assert protocols.against("HTTP/2", ["HTTP", "HTTPS", "HTTP/2"]) == "HTTPS"
    assert protocols.against("HTTP/2 → http/1.1", ["HTTP", "HTTP/2 → http/1.1"]) == "HTTP"
    assert protocols.against("HTTPS", ["HTTPS", "HTTP/2"]) is None  # no clear text asked there
    assert protocols.against("HTTP", ["HTTP", "HTTPS"]) is None
    tls = dict(protocol="https", handshake="keep-alive")
    cells = (runs(1000, stack_label="nginx") + runs(800, seed=2, start=1, stack_label="nginx", **tls)
             # HTTPS alone at another level: no clear text to compare with, and left out
             + runs(500, seed=3, start=30, stack_label="nginx", concurrency=64, **tls))
    vs = protocols.decide(cells)
    (v,) = throughput(vs)
    assert (v.baseline, v.candidate, v.within, v.question.protocol) == ("HTTP", "HTTPS", "nginx", "http/1.1")
    (row,) = [r for r in export.verdict_rows(vs) if r["metric"] == "throughput"]
    assert (row["axis"], row["stack"], row["workload"]) == ("protocol", "nginx", "nginx · php-hello")


def test_every_axis_is_declared_with_a_name_the_export_schema_knows():
    import json
    names = json.loads(export.SCHEMA_PATH.read_text())["$defs"]["verdict"]["properties"]["axis"]["enum"]
    declared = [axes.STACK, axes.PROTOCOL, axes.RAMP, axes.VISITORS, axes.knob("x"), axes.machine([])]
    assert [a.name for a in declared] == names
    assert [a.per_stack for a in declared] == [False] + [True] * 5

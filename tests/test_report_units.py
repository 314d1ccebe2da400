"""Unit tests of what the reports show: the table (order, unserved, failed rows, MiB),
caveats (one source, worded once), durations and pinning."""

from __future__ import annotations

import io
import json
from dataclasses import fields

import pytest

from stackbench import caveats
from stackbench.upkeep import pinning
from stackbench.analysis import cells as analyzed_cells, figures, questions, run_warnings
from stackbench.engine import SCHEMA_PATH, Caveat, EngineResult
from stackbench.engine.result import CAVEAT_FACTS, OomKilled
from stackbench.report.text import table
from stackbench.report.words import caveats as words
from stackbench.units import engine_duration, format_us, parse_duration_s
from cells import stored_cell, stored_run


def cell(seq, label="nginx-fpm", workload="php-hello", conc=16, ka=True, **kw):
    base = dict(seq=seq, stack_label=label, workload=workload, concurrency=conc, keepalive=ka, status="ok",
                error=None, requests_per_s=1234.4, latency_mean_us=1500.0, latency_p50_us=1200,
                latency_p99_us=9000, requests_failed=0, non_2xx=0, connections_measured=conc,
                connections_without_response=0, mem_rss_peak_bytes=3 * 2**20, mem_peak_bytes=4 * 2**20,
                requests_completed=1000, cpu_total_us=50_000, engine_cpu_us=20_000, procs_max=3, threads_max=3)
    base.update(kw)
    return stored_cell(**base)


RUN = stored_run(id=1, plan_name="p", status="complete", started_at="now", error=None,
                 environment={"cpu_model": "cpu", "cpu_count": 2, "kernel": "6", "pinning": {}})


def rows(cells):
    return table.rows(analyzed_cells.of(cells))


def render(cells, out):
    """The table of these cells with their warnings, as `show` prints it."""
    analyzed = analyzed_cells.of(cells)
    table.render(RUN, analyzed, run_warnings.of(analyzed), out)


def test_rows_of_one_question_are_together_keepalive_on_first():
    cells = [cell(0, ka=False), cell(1, conc=1), cell(2, label="apache", ka=False), cell(3), cell(4, workload="a")]
    order = [(r[0], r[1], r[2], r[3]) for r in rows(cells)]
    assert order == [("4", "a", "c=16", "on"), ("1", "php-hello", "c=1", "on"), ("3", "php-hello", "c=16", "on"),
                     ("0", "php-hello", "c=16", "off"), ("2", "php-hello", "c=16", "off")]
    groups = questions.group(cells)
    assert list(groups)[2] == questions.Question("php-hello", 16, True)


def test_figures_in_the_row_and_memory_in_mib():
    (row,) = rows([cell(0)])
    assert row[5:] == ("1,234", "1.50", "1.20", "9.00", "0", "0", "0", "3.0", "50", "-")
    assert "mem MiB" in table.COLUMNS


def test_unserved_uses_the_engines_connection_count_not_the_plans_concurrency():
    # page mode: 4 visitors × 6 connections each = 24 connections, 10 unserved
    c = cell(0, conc=4, connections_measured=24, connections_without_response=10)
    assert figures.of(c).unserved == figures.Unserved(10, 24)
    assert rows([c])[0][11] == "10/24 !"
    assert rows([cell(0, connections_without_response=None)])[0][11] == "-"


def test_a_failed_cell_without_measurement_is_one_failed_row():
    row = rows([cell(0, status="failed", engine=None, requests_per_s=None, error="nginx exited")])[0]
    assert row[5] == "FAILED" and set(row[6:]) == {"-"}
    out = io.StringIO()
    render([cell(0, status="failed", engine=None, error="nginx exited")], out)
    assert "warning: nginx-fpm: nginx exited" in out.getvalue()


def test_each_caveat_is_shown_once_with_the_cells_it_concerns():
    cv = [{"code": "short_run", "params": {"duration_us": 500_000}}]
    cells = [cell(i, conc=c, caveats=cv) for i, c in enumerate((1, 2, 4, 8))]
    out = io.StringIO()
    render(cells, out)
    text = out.getvalue().replace("\n  ", " ")  # warnings wrap at 120 columns
    lines = [x for x in text.splitlines() if x.startswith("warning:")]
    assert len(lines) == 1 and "less than 1 s" in lines[0] and "(+2 more)" in lines[0]
    assert all(len(x) <= 120 for x in out.getvalue().splitlines())


def doc(**kw):
    d = {"started_unix_us": 1, "duration_us": 2_000_000, "requests_per_s": 10.0,
         "requests": {"completed": 20, "failed": 0, "non_2xx": 0}, "latency_us": {"mean": 1.0, "percentiles": {}},
         "warnings": [], "warning_codes": []}
    d.update(kw)
    return d


def test_the_engines_caveats_are_taken_as_they_are_not_re_derived():
    # 1 failed of 100: the engine's threshold is "> 1 %", so it emitted nothing; the lab
    # must not add its own "failed" caveat with another threshold.
    r = EngineResult.from_doc(doc(requests={"completed": 99, "failed": 1, "non_2xx": 0}))
    assert caveats.for_cell(r, {}) == []
    r = EngineResult.from_doc(doc(warning_codes=[{"code": "requests_failed", "params": {"share": 0.05}}]))
    assert [c.code for c in caveats.for_cell(r, {})] == ["requests_failed"]


def test_lab_caveats_cache_hits_and_shared_cores():
    r = EngineResult.from_doc(doc(header_counts={"X-Cache": {"HIT": 90, "MISS": 10}}))
    got = caveats.for_cell(r, {"shared": True})
    assert got == [Caveat("cache_hits", {"header": "X-Cache", "share": 0.9}), Caveat("cores_shared")]
    assert "90% of responses were cache hits" in words.sentence(got[0])


def test_an_older_engine_without_codes_keeps_its_sentences():
    r = EngineResult.from_doc(doc(warning_codes=None, warnings=["something odd"]))
    assert words.sentence(r.caveats[0]) == "something odd"


@pytest.mark.parametrize("code", sorted(set(CAVEAT_FACTS) - {"text", "engine_text"}))
def test_every_known_code_has_a_sentence_even_with_no_params(code):
    assert words.sentence(Caveat(code, {})).strip()


def test_an_unknown_code_is_shown_not_dropped():
    assert words.sentence(Caveat("new_thing", {"n": 3})) == "new_thing (n=3)"


def test_every_engine_code_has_its_figures_typed_as_the_schema_names_them():
    """Each of the schema's warning codes has a facts class (engine/result.py) whose fields
    are the params the schema lists for it: a param the engine renames shows here."""
    warning = json.loads(SCHEMA_PATH.read_text())["$defs"]["warning_code"]
    assert set(warning["properties"]["code"]["enum"]) <= set(CAVEAT_FACTS)
    for rule in warning["allOf"]:
        code = rule["if"]["properties"]["code"]["const"]
        params = set(rule["then"]["properties"]["params"]["properties"])
        assert {f.name for f in fields(CAVEAT_FACTS[code])} == params, code


def test_a_lab_caveat_reads_back_from_the_store_as_it_was_made():
    made = caveats.memory_limit({"oom_kills": 2, "oom_kills_before": 1, "limit_bytes": 2**29})[0]
    assert made.params == {"count": 2, "before": 1, "after": 0, "limit_bytes": 2**29}  # the JSON the store keeps
    back = Caveat.from_dict(json.loads(json.dumps(made.as_dict())))
    assert back == made and back.facts == made.facts == OomKilled(2, 1, 0, 2**29)
    assert Caveat("new_thing", {"n": 3}).facts is None


@pytest.mark.parametrize("text,seconds", [("2s", 2.0), ("500ms", 0.5), ("1.5m", 90.0), (3, 3.0), ("250us", 0.00025),
                                          (" 2 s ", 2.0)])
def test_durations(text, seconds):
    assert parse_duration_s(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["2 days", "-1s", -1, True, "", "s"])
def test_bad_durations(bad):
    with pytest.raises(ValueError):
        parse_duration_s(bad)


def test_engine_duration_and_format():
    assert engine_duration(0.5) == "500ms" and engine_duration(2) == "2000ms"
    assert format_us(None) == "-" and format_us(1234) == "1.23"


def test_pinning_keeps_server_and_engine_apart():
    p = pinning.choose([0, 1])
    assert p.server_cpus == [0] and p.engine_cpus == [1] and not p.shared
    p = pinning.choose([0, 1, 2, 3, 4])
    assert p.server_cpus == [0, 1] and p.engine_cpus == [2, 3, 4]
    p = pinning.choose([3])
    assert p.server_cpus == p.engine_cpus == [3] and p.shared and p.as_dict()["shared"] is True


def test_steal_is_read_per_core_and_becomes_a_validity_gate(tmp_path):
    from stackbench.analysis import verdicts
    from stackbench.monitor import steal

    stat = tmp_path / "stat"
    line = "cpu{} {} 0 {} 500 0 0 10 {} 0 0\n"
    stat.write_text("cpu  1 2 3 4\n" + line.format(0, 100, 50, 20) + line.format(1, 300, 10, 0))
    before = steal.read([0], stat)
    assert before == steal.CpuTimes(100 + 50 + 500 + 10 + 20, 20)
    stat.write_text("cpu  1 2 3 4\n" + line.format(0, 180, 60, 90) + line.format(1, 300, 10, 0))
    after = steal.read([0], stat)
    assert steal.share(before, after) == pytest.approx(70 / 160)
    assert steal.read([5], stat) is None and steal.share(None, after) is None
    r = EngineResult.from_doc(doc())
    assert caveats.for_cell(r, {}, 0.01) == []
    (c,) = caveats.for_cell(r, {}, 0.12)
    assert c.code == "cpu_steal" and "took 12.0% of the server's CPU time" in words.sentence(c)
    assert verdicts.invalid_reasons(stored_cell(caveats=[c])) == ("cpu_steal",)


@pytest.mark.parametrize("given,share", [(0.03, 0.03), ("3%", 0.03), (" 2.5 % ".replace(" %", "%"), 0.025), ("0.2", 0.2)])
def test_shares(given, share):
    from stackbench.units import parse_share

    assert parse_share(given) == pytest.approx(share)


@pytest.mark.parametrize("bad", ["3 percent", "", "0%", "100%", 1, 0, -0.1, True])
def test_bad_shares(bad):
    from stackbench.units import parse_share

    with pytest.raises(ValueError):
        parse_share(bad)


def test_compare_takes_the_equivalence_band_as_a_share(capsys):
    from stackbench.cli import main

    with pytest.raises(SystemExit):
        main(["compare", "1", "2", "--equivalence", "-1"])
    assert "is not a share" in capsys.readouterr().err


def test_format_num_and_unserved_of_zero_connections():
    from stackbench.units import format_num

    assert format_num(None) == "-" and format_num(1234.5) == "1,234" and format_num(3 * 2**20, 1 / 2**20, 1) == "3.0"
    assert figures.of(cell(0, connections_measured=0, connections_without_response=0)).unserved.connections == 0


def test_a_caches_hits_over_several_runs_are_said_as_their_range_and_each_cache_apart():
    from stackbench.report.words import warnings as warning_words

    def group(*shares, header="X-Cache"):
        return run_warnings.CaveatGroup(tuple((None, Caveat("cache_hits", {"header": header, "share": s}))
                                              for s in shares), False)  # type: ignore[misc]

    # a logged-in share's cells hit less: the range, not the first run's figure for all
    assert warning_words.caveat(group(1.0, 0.78, 0.81)).startswith("X-Cache: 78–100% of responses were cache hits")
    assert warning_words.caveat(group(0.9, 0.9)).startswith("X-Cache: 90% of responses were cache hits")
    assert warning_words.caveat(group(0.904, 0.899)).startswith("X-Cache: 90% of responses")
    # Varnish's header and nginx's are two caches: two warnings
    analyzed = analyzed_cells.of([
        cell(0, label="varnish", caveats=[Caveat("cache_hits", {"header": "X-Cache", "share": 0.9})]),
        cell(1, label="nginx-cache", caveats=[Caveat("cache_hits", {"header": "X-Cache-Status", "share": 0.5})])])
    found = [g.first.facts.header for g in run_warnings.of(analyzed).caveats if g.first.code == "cache_hits"]
    assert sorted(found) == ["X-Cache", "X-Cache-Status"]


def test_requests_unanswered_with_none_completed_say_so_not_a_slowest_of_0_ms():
    # slow-clients --quick: prefork held by the slow visitors answered nobody, and the
    # warning read "slowest completed response 0 ms"
    none = Caveat("in_flight_old", {"count": 16, "threshold_us": 100_000, "oldest_us": 999_000, "slowest_us": 0})
    assert "(oldest 999 ms; no response completed)" in words.sentence(none), words.sentence(none)
    some = Caveat("in_flight_old", {"count": 2, "threshold_us": 100_000, "oldest_us": 999_000, "slowest_us": 41_000})
    assert "slowest completed response 41 ms" in words.sentence(some), words.sentence(some)

"""The HTML report (tier 1 and 2): built from real store files of older schemas and from
runs made with the fake Lab (repetitions and verdicts, page mode, a cache, an
up-then-down ramp, a capacity search) — with a fake monitor that stores samples,
processes and system calls — and read back as a document: one offline file, every
stack, the verdict sentences, axis titles on every chart, the charts' numbers in their
tables, labels escaped, under 3 MB. Opened in headless Chromium when it is installed."""

from __future__ import annotations

import html
import io
import os
import random
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from stackbench import runner
from stackbench.planning import plan as plan_mod
from stackbench.analysis import verdicts
from stackbench.analysis.run import analyze
from stackbench.cli import main
from stackbench.engine import EngineResult
from stackbench.model.cost import CgroupSample
from stackbench.monitor.processes import ProcessMemory
from stackbench.model.cost import StoredCost
from stackbench.monitor.session import CellReadings, count_syscalls, derive
from stackbench.monitor.syscalls import WindowCounts
from stackbench.upkeep.pinning import Pinning
from stackbench.report.html import page, reproduce
from stackbench.report.text import verdicts as verdicts_text
from stackbench.report.text.verdicts import headline, question_name
from stackbench.store import Store
from tests.conftest import require_tool
from tests.test_runner_order import lab  # noqa: F401  (the fake Lab fixture)

DATA = Path(__file__).parent / "data"
EVIL = '<script>alert("x")</script> & AllowOverride All'
T0 = 1_700_000_000_000_000  # the fake engine's start, µs since the epoch
LIMIT = 3 * 2**20  # bytes: the report of the default plan's run must stay under this

FULL = f"""
name = "report <test>"
duration = "3s"
warmup = "0s"
syscall_profile = "0.5s"
concurrency = [4, 16]
keepalive = [true]
workloads = ["php-hello", "mixed-page"]
repetitions = 6  # six a side stay significant after Holm over 12 comparisons
baseline = "nginx + FPM"

[[stacks]]
id = "nginx-fpm"
label = "nginx + FPM"

[[stacks]]
id = "apache-prefork-modphp"
label = "Apache None"
knobs = {{ allow_override = "None" }}

[[stacks]]
id = "apache-prefork-modphp"
label = {EVIL!r}
knobs = {{ allow_override = "All" }}

[[stacks]]
id = "varnish-apache"
label = "Varnish"
"""

SPEED = {"nginx + FPM": 1000.0, "Apache None": 1400.0, EVIL: 1250.0, "Varnish": 5000.0, "A": 800.0, "B": 1600.0}
EXTRA_OPENAT = {EVIL: 4}  # AllowOverride All: the .htaccess lookups


class FakeStackMonitor:
    """Samples, processes and system calls as the real monitor stores them."""

    def __init__(self, label: str, state: dict):
        self.label, self.state = label, state

    def begin_cell(self):
        pass

    def end_cell(self) -> CellReadings:
        n = self.state["cells"] = self.state.get("cells", 0) + 1
        grow = 4 if "Apache" in self.label or "AllowOverride" in self.label else 0
        samples = [CgroupSample(T0 + k * 500_000, None, (20 + k * grow) * 2**20, 2**20, 0,
                                k * 150_000 + n, None, None, 3 + k * grow // 4, 3 + k * grow // 4) for k in range(7)]
        kind = "apache2" if grow else "php-fpm8.2"
        return CellReadings(cost=derive(StoredCost(peak_mem_bytes=40 * 2**20), samples), samples=samples,
                            # PSS split the kernel's way: anon + shmem its own, file-backed the machine's code
                            processes=[ProcessMemory(100 + i, 1, kind, 12 * 2**20, (4 + i % 2) * 2**20, 1,
                                                     (1 + i % 2) * 2**20, 2**19, 5 * 2**19) for i in range(5)])

    def begin_profile(self) -> bool:
        return True

    def end_profile(self, readings: CellReadings, result: EngineResult) -> None:
        per_request = {"openat": 1 + EXTRA_OPENAT.get(self.label, 0), "read": 2, "writev": 1, "epoll_wait": 2}
        rps = result.requests_per_s
        counts = {k: int(v * rps) for k, v in per_request.items()}
        count_syscalls(readings, WindowCounts({**counts, "total": sum(counts.values())}, 1.0), rps)

    def stop(self):
        pass


class FakeCostMonitor:
    cgroup_parent = None
    state: dict = {}

    def __init__(self, *args, **kwargs):
        pass

    def for_stack(self, instance):
        return FakeStackMonitor(instance.label, self.state)

    def close(self):
        pass


def engine(rng: random.Random):
    """An engine whose stacks serve SPEED[label] req/s × c-dependent noise."""
    def load(spec, cpus=None):
        label = next(lb for lb in sorted(SPEED, key=len, reverse=True) if spec.url.startswith(f"http://{lb}"))
        if spec.rate:  # open loop: 1 ms up to the stack's speed, 40 ms above it
            rate, p50 = min(spec.rate, SPEED[label] * 2), 1_000 if spec.rate <= SPEED[label] * 2 else 40_000
        else:
            rate = SPEED[label] * min(spec.connections, 16) ** 0.3 * rng.uniform(0.97, 1.03)
            p50 = int(1e6 / rate * spec.connections / 2) + 50
        pct = {"50": p50, "90": p50 * 2, "99": p50 * 4, "99.9": p50 * 8, "99.99": p50 * 12, "100": p50 * 20}
        doc = {"schema_version": 1, "started_unix_us": T0, "duration_us": 3_000_000, "requests_per_s": rate,
               "requests": {"completed": int(rate * 3), "ok_2xx": int(rate * 3), "non_2xx": 0, "failed": 0},
               "latency_us": {"mean": p50 * 1.2, "percentiles": pct},
               "timeline": [{"t_s": s, "requests": int(rate), "errors": 0, "p50_us": p50, "p99_us": p50 * 4}
                            for s in range(3)],
               "connections_measured": spec.connections, "connections_without_response": 0,
               "engine_cpu": {"user_us": 10_000, "system_us": 5_000}, "warnings": [], "warning_codes": []}
        if label == "Varnish":
            doc["header_counts"] = {"X-Cache": {"HIT": 90, "MISS": 10}}
        if spec.page:
            doc["pages"] = {"completed": int(rate / 12 * 3), "failed": 0, "per_s": rate / 12}
            doc["page_load_us"] = {"percentiles": {k: v * 6 for k, v in pct.items()}}
        return EngineResult.from_doc(doc)
    return load


def make_run(db: Path, fake, text: str) -> int:
    fake.monitor = FakeCostMonitor
    fake.load = engine(random.Random(7))
    store = Store(db)
    plan = plan_mod.parse(tomllib.loads(text), "report-test.toml")
    outcome = runner.run_plan(plan, store, options=runner.Options(pinning=Pinning([0], [1])), lab=fake)
    store.close()
    return outcome.run_id


def report(db: Path, *run_ids: int) -> str:
    store = Store(db)
    runs = [analyze(store.run(i), store.cells(i), store.search_rows(i)) for i in run_ids]
    return page.render(runs, store, "2026-01-01T00:00:00+00:00")


def figures_of(text: str) -> list[str]:
    return re.findall(r"<figure.*?</figure>", text, re.S)


NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def check_document(text: str, labels: list[str]) -> None:
    """What every report must be."""
    assert text.startswith("<!doctype html>") and text.rstrip().endswith("</html>")
    assert len(text.encode()) < LIMIT
    # offline: nothing to fetch — no external source, link, import or url()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", text, re.I)
    assert not re.search(r"url\(\s*['\"]?\s*(?:https?:)?//", text, re.I)
    assert "<link" not in text and "@import" not in text and "<img" not in text and "<iframe" not in text
    assert "http://" not in text and "https://" not in text
    for label in labels:
        assert html.escape(label) in text
    ids = re.findall(r' id="([^"]+)"', text)
    assert len(ids) == len(set(ids)) and set(re.findall(r'href="#([^"]+)"', text)) <= set(ids)
    figs = figures_of(text)
    for fig in figs:
        svgs = re.findall(r"<svg viewBox.*?</svg>", fig, re.S)
        assert svgs, "a figure without a chart"
        for s in svgs:
            assert re.search(r'class="axis-title x-title"[^>]*>[^<]+</text>', s)
            if "<polyline" in s or "<circle" in s:
                assert re.search(r'class="axis-title y-title"[^>]*>[^<]+</text>', s)
            assert "<circle" in s or "<rect" in s, "a chart without data"
        # every number a hover shows is in the figure's table
        table = re.search(r"<table>.*</table>", fig, re.S).group(0)
        in_table = set(NUMBER.findall(html.unescape(re.sub(r"<[^>]+>", " ", table))))
        for s in svgs:
            for hover in re.findall(r"<(?:circle|rect)[^>]*><title>(.*?)</title>", s):
                missing = set(NUMBER.findall(html.unescape(hover))) - in_table
                assert not missing, f"{hover!r}: {missing} not in the table"


# -- real stores of older schemas ----------------------------------------------------

@pytest.mark.parametrize("version", [3, 6, 7])
def test_report_of_a_real_store(version, tmp_path):
    db = tmp_path / "store.sqlite"
    shutil.copy(DATA / f"store-v{version}.sqlite", db)
    store = Store(db)  # migrates
    run_id = store.latest_run_id()
    run, cells = store.run(run_id), store.cells(run_id)
    text = report(db, run_id)
    check_document(text, [c.stack_label for c in cells])
    assert "Reproduce it" in text and html.escape(run.plan_name) in text
    # Measured before "auto" was the default, its plan silent on it: rerun as it was.
    assert re.search(r"<pre><code>\.venv/bin/stackbench [^<]*--cpu-idle as-is</code></pre>", text)
    for c in cells:
        for program, version_ in c.versions.items():
            assert html.escape(version_) in text
    vs = verdicts.for_run(run, cells)
    if vs is None:  # v3 and v6: no baseline, so no verdicts, and the page says how to get them
        assert "No verdicts between stacks for this run" in text and "repetitions = 5" in text
    else:  # v7: a baseline, one run a side: the terminal's "no verdict" sentence
        for v in vs.for_metric("throughput"):
            assert html.escape(headline(v, vs.band)) in text
    if version == 3:  # AllowOverride All against nginx: the .htaccess storm is a chart
        assert "System calls: apache-prefork-modphp allow_override=All against nginx-fpm" in text
        assert "Memory per process" in text and "Latency against throughput" in text
    if version == 7:  # its CPU was noisy (CV 24 %): the report says so
        assert "CPU speed varied by a CV of 24%" in text


def test_report_of_store_v3_is_small(tmp_path):
    db = tmp_path / "store.sqlite"
    shutil.copy(DATA / "store-v3.sqlite", db)
    assert len(report(db, 1).encode()) < 300 * 1024


# -- runs made with the fake Lab -----------------------------------------------------

def test_a_repeated_run_with_a_baseline(lab, tmp_path):
    _, _, fake = lab
    db = tmp_path / "r.sqlite"
    run_id = make_run(db, fake, FULL)
    text = report(db, run_id)
    labels = ["nginx + FPM", "Apache None", EVIL, "Varnish"]
    check_document(text, labels)
    assert "<script>alert" not in text and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text
    assert html.escape("report <test>") in text
    store = Store(db)
    run, cells = store.run(run_id), store.cells(run_id)
    vs = verdicts.for_run(run, cells)
    through = vs.for_metric("throughput")
    assert through and any(v.better for v in through)
    for v in through:
        assert html.escape(f"{question_name(v.question)}:") in text and html.escape(headline(v, vs.band)) in text
    terminal = io.StringIO()  # the terminal's verdict lines, word for word
    verdicts_text.render(vs, terminal)
    plain = html.unescape(re.sub(r"<[^>]+>", "", text))
    lines = [line for line in terminal.getvalue().splitlines() if " keep-alive: " in line]
    assert len(lines) == len(through) and all(line in plain for line in lines)
    assert any(" — and " in line for line in lines)
    assert "No verdicts" not in text
    for title in ("Throughput against concurrency", "Latency percentiles", "Latency against throughput",
                  "Memory against concurrency", "CPU per request against concurrency", "Memory per process",
                  "Second by second", "System calls per request", "Cache hit ratio (X-Cache)",
                  "Page load time against concurrency"):
        assert title in text, title
    # whiskers: the CI of each median over six runs
    assert text.count('class="wh ') > 20
    # the AllowOverride storm: +4 openat per request against Apache None, at a glance
    diff = next(f for f in figures_of(text) if f"System calls: {html.escape(EVIL)} against Apache None" in f)
    assert "<td>openat</td>" in diff and "+4.00" in diff
    # the plan reads back as the same data
    assert tomllib.loads(reproduce.toml(run.plan)) == run.plan
    assert "stackbench run report-test.toml" in text
    assert len(set(re.findall(r'class="chip (c\d)"', text))) == 4  # a colour per stack


def test_a_ramp_and_a_capacity_search_in_one_report(lab, tmp_path):
    _, _, fake = lab
    db = tmp_path / "r.sqlite"
    stacks = '[[stacks]]\nid = "nginx-fpm"\nlabel = "A"\n[[stacks]]\nid = "apache-prefork-modphp"\nlabel = "B"\n'
    ramp = make_run(db, fake, 'concurrency = [1, 8, 32]\nramp = "updown"\nwarmup = "0s"\nduration = "3s"\n'
                              'syscalls = false\nkeepalive = [true]\nworkloads = ["static-12b"]\n'
                              'repetitions = 5\n' + stacks)
    capacity = make_run(db, fake, 'load = "capacity"\nslo = { p99 = "10ms" }\nduration = "1s"\nwarmup = "0s"\n'
                                  'syscalls = false\nkeepalive = [true]\nworkloads = ["php-hello"]\n'
                                  'baseline = "A"\n' + stacks)
    text = report(db, ramp, capacity)
    check_document(text, ["A", "B"])
    assert f'id="r{ramp}-run"' in text and f'id="r{capacity}-run"' in text
    assert "The way down against the way up" in text and "way down vs way up" in text
    assert "the whole walk" in text and f"stackbench timeline {ramp}:" in text and "--walk" in text
    assert "Capacity at p99 ≤ 10 ms" in text and "Capacity — php-hello" in text
    # A's 95 % CI around its 1,600 req/s (held at what its met probes served, when the fit or
    # the interval's top was above)
    assert re.search(r"<td>1,[0-9]{3}–1,[0-9]{3} req/s(, held at what a probe served \(fitted 1,[0-9]{3}\)"
                     r"|, its top held at what a probe served)?</td>", text)
    assert "fitted capacity, php-hello" in text and "half the probes meet: the edge" in text  # the fitted curves
    assert 'class="ref"' in text and "dot" in text and "hollow" in text  # the target; missed probes
    assert "Latency against throughput — static-12b" in text
    assert "No verdicts between stacks for this run" in text  # the ramp has no baseline: how to get them now
    assert f"stackbench show {ramp} --baseline A</code>" in text
    # each run opens with its answer: the capacities', the way down against the way up
    assert "<strong>php-hello keep-alive, capacity:</strong> B sustains 2.0× as much load as A." in text
    assert "in requests a second against way up, way down: no clear difference at any level." in text


# -- the command ---------------------------------------------------------------------

def test_report_command_writes_one_file(tmp_path, monkeypatch, capsys):
    db = tmp_path / "store.sqlite"
    shutil.copy(DATA / "store-v7.sqlite", db)
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--db", str(db)]) == 0
    assert (tmp_path / "report-1.html").stat().st_size > 10_000
    assert "wrote report-1.html" in capsys.readouterr().err
    assert main(["report", "1", "1", "--db", str(db), "-o", str(tmp_path / "x.html")]) == 0
    assert (tmp_path / "x.html").read_text().count('id="r1-run"') == 1


def test_report_command_errors(tmp_path, capsys):
    assert main(["report", "--db", str(tmp_path / "absent.sqlite")]) == 2
    assert "no results store at" in capsys.readouterr().err
    Store(tmp_path / "empty.sqlite").close()
    assert main(["report", "--db", str(tmp_path / "empty.sqlite")]) == 1
    assert "no runs" in capsys.readouterr().err
    shutil.copy(DATA / "store-v7.sqlite", tmp_path / "s.sqlite")
    assert main(["report", "9", "--db", str(tmp_path / "s.sqlite")]) == 2
    assert "no run 9" in capsys.readouterr().err
    assert main(["report", "--db", str(tmp_path / "s.sqlite"), "-o", str(tmp_path / "no" / "dir.html")]) == 2
    assert "cannot write" in capsys.readouterr().err


# -- in a browser --------------------------------------------------------------------

def test_the_report_opens_in_headless_chromium(lab, tmp_path):
    chromium = require_tool("chromium", "chromium")
    _, _, fake = lab
    db = tmp_path / "r.sqlite"
    out = tmp_path / "report.html"
    out.write_text(report(db, make_run(db, fake, FULL)))
    shot = tmp_path / "shot.png"
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
         "--window-size=1280,2000", f"file://{out}"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # no script error and nothing the page itself asked to load
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    assert not console, console


def test_the_rerun_command_keeps_the_idle_cores_the_run_was_measured_with():
    from cells import stored_run
    from stackbench.report.html.reproduce import _idle_flag, rerun_command

    assert _idle_flag(stored_run(environment={"cpu_idle": {"asked": "auto"}})) == ""  # today's default says it
    assert _idle_flag(stored_run()) == " --cpu-idle as-is"  # before the lab recorded it: as-is, the default then
    assert _idle_flag(stored_run(plan={"cpu_idle": "poll"}, environment={"cpu_idle": {"asked": "poll"}})) == ""
    assert rerun_command("scenario static --quick", " --cpu-idle as-is")[0] == \
        ".venv/bin/stackbench scenario run static --quick --cpu-idle as-is"  # as the README types it

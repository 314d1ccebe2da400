"""The HTML report as a reader sees it, laid out by headless Chromium at 1300 px wide: the
report of a run like the default plan's — the real one `stackbench run` stored
(tests/data/store-v12-default.sqlite.gz), and one the fake Lab makes with today's schema —
opens with its answer, stays under 8,000 px tall, and no two of its charts' text labels
overlap (each label's box measured by a script injected into a copy of the page, every
folded chart unfolded first, the result written into the DOM that Chromium dumps)."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from stackbench.report.html import svg
from tests.conftest import require_tool
from tests.test_migrations import unpack_v12
from tests.test_report_html import SPEED, make_run, report
from tests.test_runner_order import lab  # noqa: F401  (the fake Lab fixture)

WIDTH = 1300
TALLEST = 8000  # px: the default run's page at WIDTH, every folded chart folded
DEFAULT_PLAN = Path(__file__).parent.parent / "stackbench" / "plans" / "default.toml"

# Runs as the page is parsed (getBoundingClientRect lays it out): the page's height as
# it opens, then — every <details> unfolded — each SVG text's box, and the pairs of one
# chart whose boxes overlap by more than a pixel each way.
MEASURE = """
<script>(function(){
  var height = document.documentElement.scrollHeight;
  document.querySelectorAll("details").forEach(function(d){ d.open = true; });
  var boxes = [];
  document.querySelectorAll("svg").forEach(function(s, k){
    s.querySelectorAll("text").forEach(function(t){
      var r = t.getBoundingClientRect();
      if (r.width > 0 && r.height > 0) boxes.push([k, r.left, r.top, r.right, r.bottom, t.textContent]);
    });
  });
  var overlaps = [];
  for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++) {
    var a = boxes[i], b = boxes[j];
    if (a[0] !== b[0]) continue;
    var w = Math.min(a[3], b[3]) - Math.max(a[1], b[1]), h = Math.min(a[4], b[4]) - Math.max(a[2], b[2]);
    if (w > 1 && h > 1) overlaps.push([a[5], b[5], w, h]);
  }
  var out = document.createElement("pre");
  out.id = "stackbench-layout";
  out.textContent = JSON.stringify({height: height, width: innerWidth, texts: boxes.length, overlaps: overlaps,
    first: document.querySelector("section.run > *:nth-child(2)").className});
  document.body.appendChild(out);
})();</script>
"""


def layout(page: str, tmp_path: Path) -> dict:
    chromium = require_tool("chromium", "chromium")
    copy = tmp_path / "measured.html"
    copy.write_text(page.replace("</body>", MEASURE + "</body>"))
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         f"--window-size={WIDTH},1000", "--dump-dom", f"file://{copy}"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="stackbench-layout">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stdout[-2000:]
    return json.loads(html.unescape(found.group(1)))


def check(measured: dict) -> None:
    assert measured["width"] == WIDTH
    assert measured["texts"] > 100  # the charts were laid out
    assert not measured["overlaps"], measured["overlaps"][:10]
    assert measured["height"] < TALLEST, measured["height"]
    assert measured["first"] == "answer"  # under the run's title, the answer before anything else


def test_the_default_plans_real_run_reads_as_an_answer_in_under_8000_px(tmp_path):
    db = unpack_v12(tmp_path)
    page = report(db, 1)
    # the answer names the workloads it speaks of
    assert "<code>static-12b</code>: a 12-byte static HTML file" in page
    check(layout(page, tmp_path))


def test_a_default_plan_run_of_todays_store_reads_as_an_answer_in_under_8000_px(lab, tmp_path):
    _, _, fake = lab
    SPEED.update({"Apache mod_php": 1400.0, "Apache mod_php, AllowOverride All": 1100.0})
    plan = DEFAULT_PLAN.read_text().replace('repetitions = "auto"', "repetitions = 6")
    plan = re.sub(r"(min|max)_repetitions = \d+\n", "", plan)
    db = tmp_path / "r.sqlite"
    page = report(db, make_run(db, fake, plan))
    assert "own memory per process: anon + shmem PSS (MiB)" in page  # today's store splits PSS
    check(layout(page, tmp_path))


def test_a_negative_bars_value_never_crosses_into_the_rows_label():
    """A bar reaching the left edge prints its value right of the zero line, in its own row."""
    groups = [svg.Group("setsockopt", (svg.Bar(-1.94, "c0", "t", "−1.94"),)),  # the default run's
              svg.Group("read", (svg.Bar(1.18, "c0", "t", "+1.18"),)),
              svg.Group("recvfrom", (svg.Bar(-0.97, "c0", "t", "−0.97"),))]
    doc = svg.bars(groups, svg.linear("calls", [-1.94, 1.18, -0.97, -1, 1]), "d")
    left = float(re.search(r'class="row-label" x="([\d.]+)"', doc).group(1)) + 8
    zero = float(re.search(r'<path class="axis" d="M[\d.]+,[\d.]+H[\d.]+M([\d.]+),', doc).group(1))
    values = dict((t, (float(x), a)) for x, a, t in
                  re.findall(r'class="bar-value" x="([\d.]+)" y="[\d.]+" text-anchor="(\w+)">([^<]+)<', doc))
    assert values["−1.94"] == (zero + 4, "start")  # no room left of it: beside the zero line
    x, anchor = values["−0.97"]
    assert anchor == "end" and x - svg._value_width("−0.97") >= left  # room: at the bar's end, clear of the label

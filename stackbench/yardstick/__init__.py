"""A yardstick of a core: how fast one core of a machine runs PHP, as one number a user
can measure on any machine with `php-cli` (`stackbench yardstick`), so that a size
measured here ("0.5 CPU") can be said in a unit that travels ("0.5 of a core like this
one, yardstick 680") and rescaled to another machine (docs/methods/sizing.md).

The work is fixed (work.php beside this file): units of what a PHP page does — strings
built and split, an MD5, a small sort, a hash table filled —, run by `php -n` (no
php.ini: no opcache, no JIT, no debugger a user's VPS may load, so every machine runs
the same interpreter path) on one core, single-threaded, in REPETITIONS repetitions of
UNITS units after one not counted. Each repetition's speed is thousands of units a
second; the figure is their median, with the slowest and the fastest as its spread. The
work's checksum is checked, so two yardsticks always measured the same work.

Bigger is faster. It measures PHP 8.2 as Debian builds it best; the PHP version is
recorded with it, since another version's interpreter runs the same work at another
speed.

STACKBENCH_YARDSTICK=off skips it before a run (the figure is then "not measured"): the
test suite sets it (tests/conftest.py), as it does the CPU-steadiness probe's; the tests
that read it unset it. The command `stackbench yardstick` always measures.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from stackbench.errors import MissingBinary, StackbenchError

SKIP_VAR = "STACKBENCH_YARDSTICK"
SCRIPT = Path(__file__).with_name("work.php")
UNITS = 35_000  # ~50 ms a repetition on this lab's 2-core VM (bench/RESULTS.md, "The yardstick")
REPETITIONS = 9
CHECK = 1_365_433  # work.php's checksum for UNITS units: the same on every machine
# Debian 12's PHP first (the lab's stacks run it), then whatever `php` a user's machine has.
BINARIES = ("php8.2", "php")
PACKAGE = "php8.2-cli"
TIMEOUT_S = 120  # a core 50× slower than this lab's still finishes


@dataclass(frozen=True)
class Yardstick:
    """One machine's core, measured: thousands of work units a second (bigger = faster)."""

    score: float  # the repetitions' median
    low: float  # the slowest repetition's
    high: float  # the fastest repetition's
    repetitions: int
    php: str | None = None  # PHP's version that ran it
    cpu: int | None = None  # the core it was pinned to (None: not pinned)

    def as_dict(self) -> dict[str, Any]:
        return {"score": self.score, "low": self.low, "high": self.high, "repetitions": self.repetitions,
                "php": self.php, "cpu": self.cpu}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Yardstick:
        return cls(float(d["score"]), float(d["low"]), float(d["high"]), int(d["repetitions"]), d.get("php"),
                   d.get("cpu"))

    @property
    def spread(self) -> float:
        """(fastest − slowest) / median: how steady the core was while measured."""
        return (self.high - self.low) / self.score if self.score else 0.0

    @classmethod
    def pooled(cls, found: Sequence[Yardstick]) -> Yardstick | None:
        """Several measurements of one core (each size's run of a sizing) as one: the
        median of their figures, the slowest and fastest repetition of any, every
        repetition counted."""
        if not found:
            return None
        phps = {y.php for y in found}
        cpus = {y.cpu for y in found}
        return cls(statistics.median(y.score for y in found), min(y.low for y in found), max(y.high for y in found),
                   sum(y.repetitions for y in found), phps.pop() if len(phps) == 1 else None,
                   cpus.pop() if len(cpus) == 1 else None)

    def describe(self) -> str:
        """"680 (spread 652–701 over 9 repetitions, PHP 8.2.36)"."""
        php = f", PHP {self.php}" if self.php else ""
        return f"{self.score:.0f} (spread {self.low:.0f}–{self.high:.0f} over {self.repetitions} repetitions{php})"


class YardstickFailed(StackbenchError):
    """PHP ran but did not do the yardstick's work (a broken or a very different PHP)."""

    exit_code = 3


def php_binary() -> str | None:
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return found
    return None


def measure(cpu: int | None, repetitions: int = REPETITIONS) -> Yardstick:
    """The yardstick of core `cpu` (None: wherever the scheduler puts it). Raises
    MissingBinary when no PHP is installed, YardstickFailed when it did not do the work."""
    php = php_binary()
    if php is None:
        missing = MissingBinary("php", PACKAGE)
        missing.hint = f"apt-get install {PACKAGE} (another machine: its PHP 8 command-line package, e.g. php-cli)"
        raise missing

    try:
        try:
            res = _run(php, repetitions, cpu)
        except subprocess.TimeoutExpired:
            raise
        except subprocess.SubprocessError:  # the core could not be taken (not this process's to use)
            cpu = None
            res = _run(php, repetitions, None)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise YardstickFailed(f"{php} could not run the yardstick: {e}") from None
    out = parse(res.stdout, repetitions)
    if res.returncode != 0 or out is None:
        tail = (res.stderr or res.stdout).strip()[-400:]
        raise YardstickFailed(f"{php} did not do the yardstick's work (exit status {res.returncode})",
                              detail=tail or None, hint=f"the yardstick needs PHP 8 (apt-get install {PACKAGE})")
    return Yardstick(out.score, out.low, out.high, out.repetitions, out.php, cpu)


def _run(php: str, repetitions: int, cpu: int | None) -> subprocess.CompletedProcess[str]:
    """work.php on core `cpu` (None: unpinned); pinning that fails is the caller's to see."""
    def pin() -> None:
        if cpu is not None:
            os.sched_setaffinity(0, [cpu])

    return subprocess.run([php, "-n", str(SCRIPT), str(repetitions), str(UNITS)], capture_output=True, text=True,
                          timeout=TIMEOUT_S, preexec_fn=pin)


def parse(stdout: str, repetitions: int) -> Yardstick | None:
    """work.php's answer as a Yardstick (its core not known here); None when it is not
    the fixed work, whole."""
    try:
        doc = json.loads(stdout.strip().splitlines()[-1])
        ns = [int(x) for x in doc["ns"]]
        check = int(doc["check"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    if check != CHECK or len(ns) != repetitions or min(ns, default=0) <= 0:
        return None
    speeds = [UNITS / (t / 1e9) / 1000 for t in ns]
    return Yardstick(statistics.median(speeds), min(speeds), max(speeds), len(speeds), doc.get("php"))


def for_run(cpus: Sequence[int]) -> Yardstick | None:
    """Before a run, on the first of the server's cores: None when skipped
    (STACKBENCH_YARDSTICK=off) or when it cannot be measured here (no PHP: a run of
    static files needs none) — a run never fails for its yardstick."""
    if os.environ.get(SKIP_VAR, "").lower() == "off":
        return None
    try:
        return measure(cpus[0] if cpus else None)
    except StackbenchError:
        return None

"""A plan's `[visit]`: what one visit to the site is — its pages in order (a page, or a
weighted choice of pages or of leaving), the visitor's think time between them, whether
each page is fetched with its assets as a browser does, and which share of the visitors
log in first (swept, like keep-alive: `logged_in = ["0%", "50%"]`). With it, `concurrency`
counts visitors and `rate` visits a second; the runner asks the load engine for the
journey (runner/visits.py; loadgen/README.md, "Visits").

    [visit]
    pages = ["/", { choice = [{ path = "/?p=1", weight = 3 }, { path = "/?p=2" }, { leave = true }] }]
    think = { mean = "2s", max = "10s" }   # exponential; "2s" is fixed; { min, max } uniform
    assets = ["/style.css", "/app.js"]    # true: the workload's own page assets
    logged_in = ["0%", "50%"]

The same keys state the visit model a sizing in visits needs (pages a visit, assets, think
time, logged-in share): `Visit.pages_a_visit` and `Visit.requests_a_page` say what a visit
is expected to cost in hits before anything is measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from stackbench.keys import reject_unknown
from stackbench.units import parse_duration_s, parse_share

KEYS = {"pages", "think", "assets", "logged_in"}
STEP_KEYS = {"choice"}
OPTION_KEYS = {"path", "weight", "leave"}
THINK_KEYS = {"mean", "max", "min"}
MAX_THINK_S = 600.0  # a think time longer than ten minutes is a visitor who left
# A WordPress login's requests (workloads/login.py): the form, its post, the redirect's page.
LOGIN_REQUESTS = 3


@dataclass(frozen=True)
class Option:
    """One option of a choice: a page, or leaving the site (path None)."""

    path: str | None
    weight: int = 1


@dataclass(frozen=True)
class Step:
    """A page (one option, never leaving) or a weighted choice."""

    options: tuple[Option, ...]

    @property
    def choice(self) -> bool:
        return len(self.options) > 1 or self.options[0].path is None

    def page_share(self) -> float:
        """The share of visits reaching this step that view a page here (not leaving)."""
        total = sum(o.weight for o in self.options)
        return sum(o.weight for o in self.options if o.path is not None) / total


@dataclass(frozen=True)
class Think:
    """The visitor's time between requests, in seconds: none, fixed, exponential (a mean,
    capped) or uniform (min to max)."""

    kind: str = "none"
    mean_s: float = 0.0  # fixed: the time; exponential: the mean
    min_s: float | None = None
    max_s: float | None = None

    def words(self) -> str:
        if self.kind == "none":
            return "no think time"
        if self.kind == "fixed":
            return f"{self.mean_s:g} s think time"
        if self.kind == "uniform":
            return f"{self.min_s:g}–{self.max_s:g} s think time"
        return f"{self.mean_s:g} s mean think time"

    def long_s(self) -> float:
        """A long think, for how long a visit may last: fixed, itself; uniform, its max;
        exponential, 3 × its mean (its 95th percentile), at most its cap."""
        if self.kind == "exponential":
            return min(3 * self.mean_s, self.max_s if self.max_s is not None else 3 * self.mean_s)
        return self.max_s if self.kind == "uniform" and self.max_s is not None else self.mean_s


@dataclass(frozen=True)
class Visit:
    steps: tuple[Step, ...]
    think: Think = Think()
    # True: each page with the workload's own page assets; a tuple: these paths; (): none
    assets: bool | tuple[str, ...] = False
    logged_in: tuple[float, ...] = (0.0,)  # the shares swept, 0 to 1

    def pages_a_visit(self) -> float:
        """Pages a visit is expected to view: each step's page share times the share of
        visits still there (a choice's `leave` ends the visit)."""
        still, pages = 1.0, 0.0
        for step in self.steps:
            share = step.page_share()
            pages += still * share
            still *= share
        return pages

    def thinks_a_visit(self, share: float = 0.0) -> float:
        """Think times a visit is expected to hold: one before each step after the first
        that it reaches (the engine thinks, then draws the step), and for the logged-in
        `share` two more, before the login's post and before the first page
        (loadgen/README.md, "Visits")."""
        still, n = 1.0, 0.0
        for i, step in enumerate(self.steps):
            n += still if i else 0.0
            still *= step.page_share()
        return n + 2 * share

    def php_a_visit(self, share: float, login_requests: int = LOGIN_REQUESTS) -> float:
        """The requests a visit makes of PHP: its pages, and for the logged-in `share` the
        login's (its assets are files)."""
        return self.pages_a_visit() + share * login_requests

    def lead_s(self, page_s: float, share: float) -> float:
        """About the longest a visit lasts when each page (and login request) takes
        `page_s`: every step reached, each think long (`Think.long_s`). An open loop of
        visits that has run this long has its visits' pages at their steady rate."""
        login = share > 0
        thinks = len(self.steps) - 1 + (2 if login else 0)
        return thinks * self.think.long_s() + (len(self.steps) + (LOGIN_REQUESTS if login else 0)) * page_s

    def hits_a_visit(self, assets: int, share: float, login_requests: int = LOGIN_REQUESTS) -> float:
        """Requests a visit is expected to cost (the hits a sizing in visits counts): its
        page views, each asset once (the visitor's browser keeps what it got for the visit:
        the engine's cache_assets), and for the logged-in `share` the login's requests
        (WordPress: the form, its post, the redirect's page)."""
        return self.pages_a_visit() + (assets if self.steps else 0) + share * login_requests

    def asset_paths(self, workload_assets: tuple[str, ...]) -> tuple[str, ...]:
        if self.assets is True:
            return workload_assets
        return self.assets if isinstance(self.assets, tuple) else ()

    def words(self) -> str:
        """"3 pages a visit, 2 s mean think time, with assets"."""
        return (f"{self.pages_a_visit():.3g} pages a visit, {self.think.words()}"
                + (", with assets" if self.assets else ""))


def share_words(share: float) -> str:
    """0.5 -> "50% logged in"."""
    return f"{share * 100:g}% logged in"


def parse(data: Any, fail: Callable[[str], Exception]) -> Visit | None:
    """The plan's [visit] table; None without one."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise fail('visit must be a table: [visit] with pages = ["/", "/about/"]')
    reject_unknown(data, KEYS, "visit", fail)
    pages = data.get("pages")
    if not isinstance(pages, list) or not pages:
        raise fail('visit.pages must be a list of at least one page, e.g. pages = ["/", "/?p=1"]')
    steps = tuple(_step(p, i, fail) for i, p in enumerate(pages))
    if steps[0].choice and any(o.path is None for o in steps[0].options):
        raise fail("visit.pages[0]: a visit begins with a page; its first step cannot leave")
    return Visit(steps, _think(data.get("think"), fail), _assets(data.get("assets", False), fail),
                 _shares(data.get("logged_in", [0]), fail))


def _path(value: Any, where: str, fail: Callable[[str], Exception]) -> str:
    if not isinstance(value, str) or not value.startswith("/") or any(c.isspace() for c in value):
        raise fail(f"{where} must be a path starting with / (no spaces), not {value!r}")
    return value


def _step(entry: Any, i: int, fail: Callable[[str], Exception]) -> Step:
    where = f"visit.pages[{i}]"
    if isinstance(entry, str):
        return Step((Option(_path(entry, where, fail)),))
    if not isinstance(entry, dict):
        raise fail(f"{where} must be a path or {{ choice = [...] }}, not {entry!r}")
    reject_unknown(entry, STEP_KEYS, where, fail)
    options = entry.get("choice")
    if not isinstance(options, list) or not options:
        raise fail(f'{where}.choice must be a list of {{ path = "/…", weight = N }} or {{ leave = true }}')
    parsed = []
    for k, o in enumerate(options):
        at = f"{where}.choice[{k}]"
        if not isinstance(o, dict):
            raise fail(f'{at} must be {{ path = "/…", weight = N }} or {{ leave = true, weight = N }}')
        reject_unknown(o, OPTION_KEYS, at, fail)
        weight = o.get("weight", 1)
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 1_000_000:
            raise fail(f"{at}.weight must be a whole number from 1 to 1000000, not {weight!r}")
        leave = o.get("leave", False)
        if leave is not True and leave is not False:
            raise fail(f"{at}.leave takes true or false, not {leave!r}")
        if leave == ("path" in o):
            raise fail(f"{at} is either a page (path) or leaving (leave = true), not both or neither")
        parsed.append(Option(None if leave else _path(o["path"], f"{at}.path", fail), weight))
    return Step(tuple(parsed))


def _seconds(value: Any, where: str, fail: Callable[[str], Exception]) -> float:
    try:
        s = parse_duration_s(value)
    except ValueError:
        raise fail(f"{where} takes a duration such as \"2s\" or \"500ms\", not {value!r}") from None
    if s > MAX_THINK_S:
        raise fail(f"{where} must be at most 10m, not {value!r}")
    return s


def _think(value: Any, fail: Callable[[str], Exception]) -> Think:
    if value is None:
        return Think()
    if not isinstance(value, dict):
        s = _seconds(value, "visit.think", fail)
        return Think("fixed", s) if s > 0 else Think()
    reject_unknown(value, THINK_KEYS, "visit.think", fail)
    if "mean" in value:
        if "min" in value:
            raise fail('visit.think is { mean, max } (exponential) or { min, max } (uniform), not both')
        mean = _seconds(value["mean"], "visit.think.mean", fail)
        cap = _seconds(value["max"], "visit.think.max", fail) if "max" in value else None
        if mean <= 0 or (cap is not None and cap < mean):
            raise fail("visit.think: the mean must be above 0 and the max at least the mean")
        return Think("exponential", mean, max_s=cap)
    if "min" in value and "max" in value:
        lo, hi = _seconds(value["min"], "visit.think.min", fail), _seconds(value["max"], "visit.think.max", fail)
        if hi < lo:
            raise fail("visit.think: max must be at least min")
        return Think("uniform", (lo + hi) / 2, lo, hi)
    raise fail('visit.think takes a duration ("2s": fixed), { mean = "2s", max = "10s" } (exponential) or '
               '{ min = "1s", max = "3s" } (uniform)')


def _assets(value: Any, fail: Callable[[str], Exception]) -> bool | tuple[str, ...]:
    if isinstance(value, bool):
        return value
    if isinstance(value, list) and value:
        return tuple(_path(v, f"visit.assets[{i}]", fail) for i, v in enumerate(value))
    raise fail(f"visit.assets takes true (the workload's page assets), false, or a list of paths, not {value!r}")


def _shares(value: Any, fail: Callable[[str], Exception]) -> tuple[float, ...]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise fail("visit.logged_in must not be empty")
    out = []
    for v in values:
        if v in (0, "0%", "0") and not isinstance(v, bool):
            out.append(0.0)
            continue
        if v in (1, "100%", "1") and not isinstance(v, bool):
            out.append(1.0)
            continue
        try:
            out.append(parse_share(v))
        except ValueError:
            raise fail(f"visit.logged_in takes shares from \"0%\" to \"100%\" (or 0 to 1), not {v!r}") from None
    if len(set(out)) != len(out):
        raise fail("visit.logged_in names a share twice")
    return tuple(out)

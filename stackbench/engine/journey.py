"""A visit as the engine is asked for it (`stackbench-load --journey`): typed here, written
as the JSON the engine reads (loadgen/README.md, "Visits"). A visitor logs in if asked
(the form's page, the form posted, the answer's redirect followed), then takes each step
— a page with its assets, or a weighted choice of pages or of leaving — thinking before
every request but the visit's first. Each visitor has its own cookie jar and connections
(up to LoadSpec.page_conns); its browser keeps the assets it got for the visit unless
`cache_assets` is off.

    Journey(steps=(Page("/", assets=("/style.css",)),
                   Choice((Page("/?p=1", weight=3), Exit(weight=1))),
                   Page("/about/")),
            think=Think.exponential(3000),
            login=Login("/wp-login.php", form=(("log", user), ("pwd", password)),
                        form_page="/wp-login.php"))
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Think:
    """How long a visitor reads before its next request, in ms: none, fixed, exponential
    (a mean, capped at `max_ms`: 10 × the mean unless given) or uniform (min to max)."""

    kind: str = "none"
    ms: float | None = None
    mean_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None

    @classmethod
    def fixed(cls, ms: float) -> "Think":
        return cls("fixed", ms=ms)

    @classmethod
    def exponential(cls, mean_ms: float, max_ms: float | None = None) -> "Think":
        return cls("exponential", mean_ms=mean_ms, max_ms=max_ms)

    @classmethod
    def uniform(cls, min_ms: float, max_ms: float) -> "Think":
        return cls("uniform", min_ms=min_ms, max_ms=max_ms)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for key in ("ms", "mean_ms", "min_ms", "max_ms"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass(frozen=True)
class Page:
    """A page view: the page, then its assets. `name` is its row in the result (default:
    its path); `weight` counts inside a Choice, `think` (the time before it) as a step."""

    path: str
    assets: tuple[str, ...] = ()
    name: str | None = None
    weight: int = 1
    think: Think | None = None

    def as_json(self, in_choice: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"page": self.path}
        if self.assets:
            out["assets"] = list(self.assets)
        if self.name is not None:
            out["name"] = self.name
        if in_choice:
            out["weight"] = self.weight
        elif self.think is not None:
            out["think"] = self.think.as_json()
        return out


@dataclass(frozen=True)
class Exit:
    """Inside a Choice: the visitor leaves the site there (the visit ends complete)."""

    weight: int = 1


@dataclass(frozen=True)
class Choice:
    """A step that draws one of its options by weight."""

    options: tuple[Page | Exit, ...]
    think: Think | None = None

    def as_json(self) -> dict[str, Any]:
        options = [{"exit": True, "weight": o.weight} if isinstance(o, Exit) else o.as_json(in_choice=True)
                   for o in self.options]
        out: dict[str, Any] = {"choice": options}
        if self.think is not None:
            out["think"] = self.think.as_json()
        return out


@dataclass(frozen=True)
class Login:
    """The form posted to `path` (`application/x-www-form-urlencoded`), after a GET of
    `form_page` if given (WordPress sets its test cookie there); a 3xx answer's Location
    on the same server is followed unless `follow_redirect` is off. `forms` instead of
    `form`: one per account, each visit posting one drawn at random. The engine writes the
    forms' values into no result (they read "*")."""

    path: str
    form: tuple[tuple[str, str], ...] = ()
    form_page: str | None = None
    follow_redirect: bool = True
    name: str | None = None
    forms: tuple[tuple[tuple[str, str], ...], ...] = ()

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "follow_redirect": self.follow_redirect}
        if self.forms:
            out["forms"] = [dict(f) for f in self.forms]
        else:
            out["form"] = dict(self.form)
        if self.form_page is not None:
            out["form_page"] = self.form_page
        if self.name is not None:
            out["name"] = self.name
        return out


@dataclass(frozen=True)
class Journey:
    steps: tuple[Page | Choice, ...]
    think: Think | None = None
    login: Login | None = None
    headers: tuple[tuple[str, str], ...] = ()  # on every request of a visit, besides -H
    cache_assets: bool = True

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"steps": [s.as_json() for s in self.steps], "cache_assets": self.cache_assets}
        if self.think is not None:
            out["think"] = self.think.as_json()
        if self.login is not None:
            out["login"] = self.login.as_json()
        if self.headers:
            out["headers"] = dict(self.headers)
        return out

    def text(self) -> str:
        """The JSON text `--journey` takes."""
        return json.dumps(self.as_json(), separators=(",", ":"))

"""The user's own PHP application: a docroot served read-only from where it is, through
every stack, with the URLs, weights and checks the plan gives. A plan says:

    workloads = ["app"]
    [app]
    docroot = "/srv/shop/public"        # served as it is; the lab writes nothing there
    front_controller = "/index.php"     # optional: paths that are not files go to it
    env = { SHOP_DB_HOST = "127.0.0.1" }  # optional: environment given to PHP
    [[app.urls]]
    path = "/"
    weight = 3                          # optional, default 1
    status = 200                        # optional, default 200
    contains = "Welcome"                # optional: a string the body must contain

What the lab cannot know — a database the application needs — the user runs and names
in `env` (docs/guide/your-application.md).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from stackbench.errors import PlanError
from stackbench.servers.workers import closed_parent
from stackbench.workloads.base import PHP_ERRORS, Check, Url, Workload

ID = "app"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEYS = {"docroot", "front_controller", "env", "urls"}
URL_KEYS = {"path", "weight", "status", "contains"}


def build(table: dict[str, Any] | None, source: str = "plan") -> Workload:
    """The `app` workload from a plan's [app] table; a PlanError names what is wrong."""
    def fail(msg: str) -> PlanError:
        return PlanError(f"{source}: [app] {msg}")

    if not isinstance(table, dict):
        raise fail("is missing: the app workload needs an [app] table with docroot = \"/path\"")
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise fail(f"has an unknown key {unknown[0]!r}; its keys are: {', '.join(sorted(KEYS))}")
    docroot = table.get("docroot")
    if not isinstance(docroot, str) or not docroot:
        raise fail("needs docroot = \"/path/to/the/application's/public/directory\"")
    root = Path(docroot).resolve()
    if not root.is_dir():
        raise fail(f"docroot {docroot!r} is not a directory")
    _check_readable(root, fail)
    front = table.get("front_controller")
    if front is not None and (not isinstance(front, str) or not front.startswith("/")):
        raise fail(f"front_controller must be a path such as \"/index.php\", not {front!r}")
    if front is not None and not (root / front.lstrip("/")).is_file():
        raise fail(f"front_controller {front!r} is not a file under {root}")
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, (str, int)) for v in env.values()):
        raise fail("env must be a table of strings, e.g. env = { DB_HOST = \"127.0.0.1\" }")
    # They are written into each server's config: a name that is not one, or a value
    # with a line break or a quote, would write config lines of its own.
    bad = next((k for k in env if not ENV_NAME.fullmatch(k)), None)
    if bad is not None:
        raise fail(f"env name {bad!r} is not an environment variable name (letters, digits, _)")
    bad = next((k for k, v in env.items() if any(c in str(v) for c in '\n\r"\\')), None)
    if bad is not None:
        raise fail(f"env value of {bad} holds a line break, a quote or a backslash, which the servers' "
                   "configs cannot carry")
    raw_urls = table.get("urls") or [{"path": "/"}]
    if not isinstance(raw_urls, list):
        raise fail("urls must be a list of tables: [[app.urls]] path = \"/\"")
    urls = tuple(_url(u, i, fail) for i, u in enumerate(raw_urls))
    return Workload(
        ID, f"your application at {root}", urls=urls, needs_php=True, docroot=lambda: root,
        front_controller=front, php_env={str(k): str(v) for k, v in env.items()},
        # Nothing is written into the user's tree: PHP's state is read by a prepend file.
        probe="prepend")


def _url(entry: Any, index: int, fail) -> Url:
    if not isinstance(entry, dict):
        raise fail(f"urls[{index}] must be a table with a path")
    unknown = sorted(set(entry) - URL_KEYS)
    if unknown:
        raise fail(f"urls[{index}] has an unknown key {unknown[0]!r}; its keys are: {', '.join(sorted(URL_KEYS))}")
    path = entry.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        raise fail(f"urls[{index}].path must start with /, not {path!r}")
    weight = entry.get("weight", 1)
    status = entry.get("status", 200)
    for name, value in (("weight", weight), ("status", status)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise fail(f"urls[{index}].{name} must be a whole number >= 1, not {value!r}")
    contains = entry.get("contains")
    if contains is not None and not isinstance(contains, str):
        raise fail(f"urls[{index}].contains must be a string, not {contains!r}")
    check = Check(content_type="", status=status, contains=(contains.encode(),) if contains else (),
                  forbids=PHP_ERRORS)
    return Url(path, check, weight)


def _check_readable(root: Path, fail) -> None:
    """The servers' workers (www-data) must reach the tree: every parent searchable by
    others, the tree itself readable."""
    if os.geteuid() != 0:
        return
    closed = closed_parent(root)
    if closed is not None:
        raise fail(f"{closed} is not searchable by other users, so the servers' workers (www-data) "
                   f"could not read {root}")
    if not root.stat().st_mode & 0o004:
        raise fail(f"{root} is not readable by other users (the servers' workers run as www-data)")

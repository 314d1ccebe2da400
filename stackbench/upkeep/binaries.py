"""Finding the lab's own programs (the load engine, the link emulator): an environment
variable first (a build elsewhere), then the repository's release build, then PATH —
and when none is there, one sentence that says how to build it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

REPO_ROOT = Path(__file__).resolve().parents[2]


def find(name: str, env: str, crate: str, missing: Callable[..., Exception], what: str) -> str:
    candidates = [os.environ.get(env), str(REPO_ROOT / crate / "target" / "release" / name), shutil.which(name)]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise missing(f"{what} {name} is not built",
                  hint=f"run ./scripts/setup.sh (it runs cargo build --release in {crate}/)")

"""Terminal styling that honours NO_COLOR (https://no-color.org) and TTY detection."""

from __future__ import annotations

import os
import sys
from typing import TextIO


def use_color(stream: TextIO) -> bool:
    # environment variables (NO_COLOR, TERM), not data read by key
    return stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


class Style:
    def __init__(self, stream: TextIO = sys.stdout):
        self.on = use_color(stream)

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.on else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def warn(self, text: str) -> str:
        return self._wrap("33", text)

    def error(self, text: str) -> str:
        return self._wrap("31", text)

    def good(self, text: str) -> str:
        return self._wrap("32", text)

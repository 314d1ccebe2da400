"""Clean-up steps: every one runs even when one before it fails (a store that became
unwritable must not leave perf running), and a step's own failure never replaces the
exception that is already on its way (a Ctrl-C stays a Ctrl-C).
"""

from __future__ import annotations

from typing import Callable


def each(*steps: Callable[[], None]) -> None:
    """Every step; the first failure is raised after the last step."""
    failure: Exception | None = None
    for step in steps:
        try:
            step()
        except Exception as e:
            failure = failure or e
    if failure is not None:
        raise failure


def quietly(step: Callable[[], object]) -> None:
    """A clean-up step while another exception is on its way: that one is reported."""
    try:
        step()
    except Exception:  # noqa: BLE001 - the exception in flight says what went wrong
        pass

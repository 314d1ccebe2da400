"""One sentence for a key a table does not have (plan tables, network profiles, visitor
classes, the [app] table): where, which key, and the keys it does have."""

from __future__ import annotations

from typing import Callable, Iterable


def reject_unknown(data: dict, known: Iterable[str], where: str, fail: Callable[[str], Exception]) -> None:
    known = sorted(known)
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise fail(f"{where} has an unknown key {unknown[0]!r}; its keys are: {', '.join(known)}")

"""PHP's state in force while a stack was verified (workloads/php_probe.py reads it from
the stack itself: a knob only asks for opcache)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class PhpState:
    opcache: bool | None = None  # opcache enabled (None: not said)
    sapi: str | None = None  # fpm-fcgi, apache2handler, cgi-fcgi, …
    php: str | None = None  # PHP's version

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PhpState:
        opcache = d.get("opcache")
        return cls(bool(opcache) if opcache is not None else None, d.get("sapi"), d.get("php"))

    def as_dict(self) -> dict[str, Any]:
        """As the probe answers it, and as stored."""
        return {"opcache": self.opcache, "sapi": self.sapi, "php": self.php}

"""Stacks of the spec that Debian does not package: OpenLiteSpeed (LSAPI) and HHVM.

They stay in the registry so `stackbench stacks` lists them with the reason they cannot
run, and so a plan naming them fails with that reason instead of "unknown stack". A
user-installed binary is detected; driving it is not implemented (each class says why).
"""

from __future__ import annotations

import re
from typing import Any

from stackbench.errors import UsageError
from stackbench.servers.base import Context, Requirement, Server
from stackbench.stacks import installed
from stackbench.stacks.base import Stack

OLS_BINARY = "/usr/local/lsws/bin/openlitespeed"


class NotPackaged(Stack):
    binary: str
    where_to_get: str  # the reason shown while the binary is absent
    knobs = ()

    def requirements(self) -> list[Requirement]:
        return [Requirement(self.binary, "", reason=self.where_to_get)]

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        raise UsageError(f"stack {self.id!r} cannot run here: {self.unavailable() or self.where_to_get}")


class OpenLiteSpeed(NotPackaged):
    id = "openlitespeed"
    description = "OpenLiteSpeed + lsphp over LSAPI (not packaged by Debian)"
    binary = OLS_BINARY
    where_to_get = ("not packaged by Debian: install OpenLiteSpeed and lsphp from LiteSpeed's repository "
                    "which puts them under /usr/local/lsws")

    def unavailable(self) -> str | None:
        # lshttpd reads $SERVER_ROOT/conf/httpd_config.conf with SERVER_ROOT fixed at
        # /usr/local/lsws: no private config in a run directory without editing that tree.
        return (f"found {self.binary}, but OpenLiteSpeed only reads its configuration from "
                "/usr/local/lsws/conf, which stackbench does not edit; running it is not implemented")


class Hhvm(NotPackaged):
    id = "hhvm"
    description = "HHVM (FastCGI) behind nginx (not packaged by Debian)"
    binary = "hhvm"
    where_to_get = ("not packaged by Debian: install HHVM from Facebook's repository "
                    "so that hhvm is on PATH")

    def unavailable(self) -> str | None:
        found = installed.version(self.binary)
        major = int(re.match(r"\d+", found).group()) if found else None
        if major is not None and major >= 4:
            return f"found HHVM {found}, but HHVM 4 and later run Hack only, not PHP (the PHP workloads cannot run)"
        return f"found HHVM {found or '(unknown version)'}, but running it is not implemented"

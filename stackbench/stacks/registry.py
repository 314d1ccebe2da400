"""The explicit table of stack families. A new family is added here, by hand: no
discovery by globbing at import time (TechEmpower's toolset does that, and it hurts)."""

from __future__ import annotations

from stackbench.errors import UsageError
from stackbench.stacks.apache_event_fpm import ApacheEventFpm
from stackbench.stacks.apache_prefork_modphp import ApachePreforkModphp
from stackbench.stacks.apache_worker_fcgid import ApacheWorkerFcgid
from stackbench.stacks.base import Stack
from stackbench.stacks.caddy_fpm import CaddyFpm
from stackbench.stacks.h2o_fpm import H2oFpm
from stackbench.stacks.jetty_fpm import JettyFpm
from stackbench.stacks.lighttpd_fpm import LighttpdFpm
from stackbench.stacks.nginx_cache_apache import NginxCacheApache
from stackbench.stacks.nginx_fpm import NginxFpm
from stackbench.stacks.nginx_proxy_apache import NginxProxyApache
from stackbench.stacks.unpackaged import Hhvm, OpenLiteSpeed
from stackbench.stacks.varnish_apache import VarnishApache

# In the order of docs/servers.md's stack table ("The stacks").
STACKS: dict[str, Stack] = {s.id: s for s in (
    ApachePreforkModphp(),
    ApacheEventFpm(),
    ApacheWorkerFcgid(),
    NginxFpm(),
    NginxProxyApache(),
    NginxCacheApache(),
    VarnishApache(),
    LighttpdFpm(),
    H2oFpm(),
    CaddyFpm(),
    JettyFpm(),
    OpenLiteSpeed(),
    Hhvm(),
)}


def get(stack_id: str) -> Stack:
    try:
        return STACKS[stack_id]
    except KeyError:
        known = ", ".join(STACKS)
        raise UsageError(f"unknown stack {stack_id!r}; known stacks: {known}",
                         hint="`stackbench stacks` lists them with their knobs") from None

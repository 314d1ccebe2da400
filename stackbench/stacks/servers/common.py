"""Knobs shared by every front server, so a plan can set them once for all stacks."""

from stackbench.stacks.base import Knob

# Same keep-alive policy on every front by default, so keep-alive results compare servers,
# not their distributions' defaults (Debian: nginx 65 s / 1000 requests, Apache 5 s / 100).
KEEPALIVE_KNOBS = (
    Knob("keepalive_timeout", 5, "seconds an idle kept-alive connection stays open"),
    Knob("keepalive_requests", 1000, "requests served on one connection before the server closes it"),
)

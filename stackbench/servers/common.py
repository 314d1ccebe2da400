"""Knobs shared by every front server, so a plan can set them once for all stacks."""

from stackbench.servers.base import Knob

# Same keep-alive policy on every front by default, so keep-alive results compare servers,
# not their distributions' defaults (Debian: nginx 65 s / 1000 requests, Apache 5 s / 100).
KEEPALIVE_KNOBS = (
    Knob("keepalive_timeout", 5, "seconds an idle kept-alive connection stays open"),
    Knob("keepalive_requests", 1000, "requests served on one connection before the server closes it"),
)


def keepalive_knobs(*, requests_unsupported_by: str, note: str = "") -> tuple[Knob, ...]:
    """The shared keep-alive knobs; for a front without a per-connection request limit
    the knob stays (a plan sets it once for every stack) but its help says it is ignored."""
    timeout, requests = KEEPALIVE_KNOBS
    return (timeout, Knob(requests.name, requests.default,
                          f"ignored by {requests_unsupported_by}: it has no per-connection request limit{note}"))

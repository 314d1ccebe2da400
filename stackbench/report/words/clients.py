"""The load's clients and the server's host in words (the terminal and the HTML report):
as the run connects them, and after the table, what each did and how closely they
started together (analysis/clients.py)."""

from __future__ import annotations

from stackbench.analysis.clients import Clients
from stackbench.units import format_num


def _host(c: dict) -> str:
    if c.get("offset_us") is None:
        return c["host"]
    return (f"{c['host']} ({c.get('cpus')} CPUs, clock {c['offset_us']:+,} µs from this one "
            f"± {c.get('offset_uncertainty_us', c.get('uncertainty_us'))} µs)")


def clients_line(clients: list[dict]) -> str:
    """As the run connects them: each client, and an SSH host's CPUs and clock offset."""
    return f"{len(clients)}, the load spread over them: " + "; ".join(_host(c) for c in clients)


def server_line(server: dict, what: str = "the stack") -> str:
    """The server's host (environment.server_host): where the stack ran, what the host is,
    and how well its clock is known (its samples are moved to this machine's clock)."""
    env = server.get("environment") or {}
    pin = env.get("pinning") or {}
    where = "this machine, through SSH" if server.get("same_machine") else f"{env.get('cpu_model') or 'unknown CPU'} × " \
        f"{env.get('cpu_count')}, kernel {env.get('kernel')}"
    clock = f"; clock {server['offset_us']:+,} µs from this one ± {server.get('offset_uncertainty_us')} µs" \
        if server.get("offset_us") is not None else ""
    what = "the database" if server.get("role") == "database" else what
    return (f"{server['host']} at {server.get('address')} ({where}); {what} on its cores {pin.get('server_cpus')}, "
            f"the lab's agent on {pin.get('engine_cpus')}{clock}")


def lines(found: Clients) -> list[str]:
    """Each client with what it did, then how closely they began (text and HTML)."""
    out = []
    for c in found.clients:
        host = _host({"host": c.host, "offset_us": c.offset_us, "uncertainty_us": c.uncertainty_us, "cpus": c.cpus})
        out.append(f"{host}: {format_num(c.completed)} responses, {format_num(c.failed)} failed, over {c.cells} cells")
    if found.worst_spread_us is not None:
        clock = f" (clocks known to ± {found.clock_uncertainty_us:,} µs)" if found.clock_uncertainty_us else " (one clock)"
        out.append(f"began within {found.worst_spread_us:,} µs of each other at worst, "
                   f"{found.median_spread_us:,} µs in the median cell{clock}")
    return out

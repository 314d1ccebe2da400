"""The load's clients and the server's host in words (the terminal and the HTML report):
as the run connects them, and after the table, what each did and how closely they
started together (analysis/clients.py)."""

from __future__ import annotations

from stackbench.analysis.clients import Clients
from stackbench.model.environment import ClientHost, HostFacts
from stackbench.units import format_num


def _host(host: str, offset_us: int | None, uncertainty_us: int | None, cpus: int | None) -> str:
    if offset_us is None:
        return host
    return f"{host} ({cpus} CPUs, clock {offset_us:+,} µs from this one ± {uncertainty_us} µs)"


def clients_line(clients: list[ClientHost]) -> str:
    """As the run connects them: each client, and an SSH host's CPUs and clock offset
    (hosts/clients.py, live: the store keeps what each client did instead)."""
    return f"{len(clients)}, the load spread over them: " + "; ".join(
        _host(c.host, c.offset_us, c.offset_uncertainty_us, c.cpus) for c in clients)


def server_line(server: HostFacts, what: str = "the stack") -> str:
    """The server's host (environment.server_host): where the stack ran, what the host is,
    and how well its clock is known (its samples are moved to this machine's clock)."""
    env = server.environment
    pin = env.pinning
    where = "this machine, through SSH" if server.same_machine else f"{env.cpu_model or 'unknown CPU'} × " \
        f"{env.cpu_count}, kernel {env.kernel}"
    clock = f"; clock {server.offset_us:+,} µs from this one ± {server.offset_uncertainty_us} µs" \
        if server.offset_us is not None else ""
    what = "the database" if server.role == "database" else what
    return (f"{server.host} at {server.address} ({where}); {what} on its cores {pin.server_cpus if pin else None}, "
            f"the lab's agent on {pin.engine_cpus if pin else None}{clock}")


def lines(found: Clients) -> list[str]:
    """Each client with what it did, then how closely they began (text and HTML)."""
    out = []
    for c in found.clients:
        host = _host(c.host, c.offset_us, c.uncertainty_us, c.cpus)
        out.append(f"{host}: {format_num(c.completed)} responses, {format_num(c.failed)} failed, over {c.cells} cells")
    if found.worst_spread_us is not None:
        clock = f" (clocks known to ± {found.clock_uncertainty_us:,} µs)" if found.clock_uncertainty_us else " (one clock)"
        out.append(f"began within {found.worst_spread_us:,} µs of each other at worst, "
                   f"{found.median_spread_us:,} µs in the median cell{clock}")
    return out

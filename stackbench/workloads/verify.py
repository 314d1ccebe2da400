"""Check that a running stack serves a workload correctly before it is measured."""

from __future__ import annotations

import http.client

from stackbench.errors import VerifyFailed
from stackbench.workloads.base import Workload


def fetch(host: str, port: int, path: str, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def verify(host: str, port: int, workload: Workload, stack_label: str) -> None:
    """Every URL of the workload answers as its Check says."""
    for url in workload.urls:
        where = f"{stack_label} {workload.id} (GET {url.path})"
        try:
            status, headers, body = fetch(host, port, url.path)
        except (OSError, http.client.HTTPException) as e:
            raise VerifyFailed(f"{where}: no valid HTTP response: {e}") from None
        problem = url.check.problem(status, headers, body)
        if problem:
            raise VerifyFailed(f"{where}: {problem[0]}", detail=problem[1])

"""Check that a running stack serves a workload correctly before it is measured."""

from __future__ import annotations

import http.client

from stackbench.errors import VerifyFailed
from stackbench.workloads import Workload


def fetch(port: int, path: str, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def verify(port: int, workload: Workload, stack_label: str) -> None:
    """Status 200, the right content type, the exact body (or length)."""
    where = f"{stack_label} {workload.id} (GET {workload.path})"
    try:
        status, headers, body = fetch(port, workload.path)
    except (OSError, http.client.HTTPException) as e:
        raise VerifyFailed(f"{where}: no valid HTTP response: {e}") from None
    if status != 200:
        raise VerifyFailed(f"{where}: status {status}, expected 200", detail=body[:300].decode(errors="replace"))
    ctype = headers.get("content-type", "")
    if not ctype.startswith(workload.content_type):
        raise VerifyFailed(f"{where}: content type {ctype!r}, expected {workload.content_type}")
    if workload.body is not None and body != workload.body:
        raise VerifyFailed(f"{where}: body differs from the expected {len(workload.body)} bytes "
                           f"(got {len(body)} bytes)", detail=body[:300].decode(errors="replace"))
    if workload.body is None and len(body) != workload.expected_length():
        raise VerifyFailed(f"{where}: body is {len(body)} bytes, expected {workload.expected_length()}")

"""What PHP really runs with, read back from PHP itself during verification: whether
opcache is in force (a knob only *asks* for it; a pool, a php-cgi or a module can
disagree), the SAPI and PHP's version. Stored with every cell.

Two ways in, the same answer: a probe script in the docroot (the lab's generated
docroots, its WordPress tree), or — for a tree the lab must not write to (the user's
own application) — an auto_prepend file that answers only requests carrying a probe
header, with a response header. The prepend file runs on every request of such a
workload (one include of a few lines): documented in docs/guide/your-application.md.
"""

from __future__ import annotations

import http.client
import json

PROBE_PATH = "/stackbench-probe.php"
PROBE_HEADER = "X-Stackbench-Probe"
ANSWER_HEADER = "x-stackbench-php"

_STATE = (
    "$s = function_exists('opcache_get_status') ? @opcache_get_status(false) : false;"
    "$state = json_encode(['opcache' => is_array($s) && !empty($s['opcache_enabled']),"
    " 'sapi' => PHP_SAPI, 'php' => PHP_VERSION]);"
)
SCRIPT = ("<?php\n// stackbench: reports PHP's state in force (opcache, SAPI, version) as JSON.\n"
          + _STATE + "\nheader('Content-Type: application/json');\necho $state;\n").encode()
PREPEND = ("<?php\n// stackbench: answers only the lab's verification probe, with a header.\n"
           "if (isset($_SERVER['HTTP_X_STACKBENCH_PROBE'])) { " + _STATE
           + " header('X-Stackbench-PHP: ' . $state); }\n").encode()


def read(host: str, port: int, how: str, path: str, timeout: float = 10.0) -> dict | None:
    """PHP's state as {"opcache": bool, "sapi": str, "php": str}; None when the stack
    gave no answer (a static-only workload, probe "none")."""
    if how == "none":
        return None
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        if how == "script":
            conn.request("GET", PROBE_PATH)
        else:
            conn.request("GET", path, headers={PROBE_HEADER: "1"})
        resp = conn.getresponse()
        body = resp.read()
        raw = body if how == "script" else (resp.getheader(ANSWER_HEADER) or "").encode()
        if resp.status != 200 or not raw:
            return None
        state = json.loads(raw)
        return state if isinstance(state, dict) else None
    except (OSError, http.client.HTTPException, ValueError):
        return None
    finally:
        conn.close()

"""The servers' own status pages, polled while the load runs: nginx stub_status, Apache
mod_status (?auto), PHP-FPM's status page. They tell what the cgroup cannot: busy vs
idle workers, the listen queue, how many requests the server itself counted.

Polled from their own thread once a second with a short timeout, so a saturated server
delays only its own status sample, never the cgroup sampler.
"""

from __future__ import annotations

import http.client
import re
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class StatusSample:
    t_unix_us: int
    server: str
    values: dict[str, int]


def parse_nginx(text: str) -> dict[str, int]:
    """stub_status: 'Active connections: N', 'accepts handled requests' line, then
    'Reading: R Writing: W Waiting: K'."""
    out: dict[str, int] = {}
    m = re.search(r"Active connections:\s*(\d+)", text)
    if m:
        out["active_connections"] = int(m.group(1))
    m = re.search(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s*$", text, re.M)
    if m:
        out["accepts"], out["handled"], out["requests"] = map(int, m.groups())
    for key in ("Reading", "Writing", "Waiting"):
        m = re.search(rf"{key}:\s*(\d+)", text)
        if m:
            out[key.lower()] = int(m.group(1))
    return out


APACHE_KEYS = {"Total Accesses": "total_accesses", "BusyWorkers": "busy_workers", "IdleWorkers": "idle_workers",
               "ConnsTotal": "connections", "Processes": "processes"}


def parse_apache(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in APACHE_KEYS:
            try:
                out[APACHE_KEYS[key.strip()]] = int(float(value.strip()))
            except ValueError:
                pass
    return out


FPM_KEYS = {"accepted conn": "accepted_connections", "listen queue": "listen_queue",
            "max listen queue": "max_listen_queue", "idle processes": "idle_processes",
            "active processes": "active_processes", "total processes": "total_processes",
            "max children reached": "max_children_reached", "slow requests": "slow_requests"}


def parse_fpm(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in FPM_KEYS and value.strip().isdigit():
            out[FPM_KEYS[key.strip()]] = int(value.strip())
    return out


PARSERS = {"nginx": parse_nginx, "apache": parse_apache, "fpm": parse_fpm}


def fetch(url: str, timeout_s: float = 0.5) -> str | None:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)
    try:
        conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""))
        resp = conn.getresponse()
        body = resp.read().decode(errors="replace")
        return body if resp.status == 200 else None
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


class StatusPoller:
    """Polls {name: (kind, url)} every `interval_s` in a background thread."""

    def __init__(self, pages: dict[str, tuple[str, str]], interval_s: float = 1.0):
        self.pages = pages
        self.interval_s = interval_s
        self.samples: list[StatusSample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.pages:
            self._thread = threading.Thread(target=self._loop, name="stackbench-status", daemon=True)
            self._thread.start()

    def stop(self) -> list[StatusSample]:
        self._stop.set()
        if self._thread:
            self._thread.join()
            self._poll()  # a last reading after the load: the server's final counters
        return self.samples

    def _loop(self) -> None:
        while True:
            self._poll()
            if self._stop.wait(self.interval_s):
                return

    def _poll(self) -> None:
        for name, (kind, url) in self.pages.items():
            text = fetch(url)
            # A page that does not answer is a reading too: every worker held, often.
            values = PARSERS[kind](text) if text is not None else {UNANSWERED: 1}
            self.samples.append(StatusSample(time.time_ns() // 1000, name, values))


UNANSWERED = "unanswered"  # a poll the page did not answer within its timeout

# What holds a request on each server, as its status page names it.
BUSY_KEYS = {"apache2": "busy_workers", "php-fpm": "active_processes", "nginx": "writing"}


def busy_max(status: list) -> dict[str, int]:
    """The most workers each server had busy at once during the window, from its own
    status page: Apache's busy workers, PHP-FPM's active processes, nginx's connections
    being written to. A server whose every worker is held cannot answer its status page,
    so a missing figure can itself mean "all busy" — the process count says the rest."""
    out: dict[str, int] = {}
    for s in status:
        key = BUSY_KEYS.get(s.server)
        if key and key in s.values:
            out[s.server] = max(out.get(s.server, 0), int(s.values[key]))
    return out


def unanswered(status: list) -> dict[str, int]:
    """Per server, the polls its status page did not answer during the window."""
    out: dict[str, int] = {}
    for s in status:
        if s.values.get(UNANSWERED):
            out[s.server] = out.get(s.server, 0) + 1
    return out

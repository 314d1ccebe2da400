"""`stackbench serve` on real servers, as a user runs it (a subprocess): the printed URL
answers curl and ab (over TLS too, trusting the printed CA); it ends at --for, Ctrl-C or
SIGTERM with exit 0, and leaves no server process, cgroup or run directory behind. While
up, it holds the lab's run lock."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_stack, require_tool, wait_until
from stackbench.monitor.cgroup import LAB, ROOT
from stackbench.upkeep import lock

pytestmark = pytest.mark.servers

STACKBENCH = Path(sys.executable).parent / "stackbench"  # the venv's own script, as a user types it


class Served:
    """A `stackbench serve` subprocess, read up to its banner: what it printed."""

    def __init__(self, workdir: Path, *args: str):
        self.proc = subprocess.Popen([str(STACKBENCH), "serve", "nginx-fpm", "--workload", "php-hello",
                                      "--workdir", str(workdir), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []
        for line in self.proc.stdout:  # the banner ends with the "up …" line
            lines.append(line)
            if line.startswith("up "):
                break
        self.banner = "".join(lines)
        assert self.banner.startswith("nginx-fpm is up"), self.banner + self.proc.stderr.read()
        self.url = re.search(r"(http://127\.0\.0\.1:\d+/hello\.php)", self.banner).group(1)
        tls = re.search(r"(https://127\.0\.0\.1:\d+/hello\.php)", self.banner)
        self.tls_url = tls.group(1) if tls else None
        ca = re.search(r"CA to trust\s+(\S+)", self.banner)
        self.ca = Path(ca.group(1)) if ca else None
        self.rundir = Path(re.search(r"run directory\s+(\S+)", self.banner).group(1))
        self.pids = [int(p) for p in re.findall(r"\b(\d+)\b", re.search(r"processes\s+(.*)", self.banner).group(1))]

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, self.banner + out + err


def curl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([require_tool("curl", "curl"), "-s", "--max-time", "5", *args],
                          capture_output=True, text=True)


def left_behind(served: Served) -> list[str]:
    """What a stopped serve left: its servers, its run directory, its cgroups."""
    found = [f"process {pid}" for pid in served.pids if Path(f"/proc/{pid}").exists()
             and "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[-1][:3]]
    if served.rundir.exists():
        found.append(f"run directory {served.rundir}")
    found += [str(p) for p in ROOT.glob(f"*/{LAB}/run-{served.proc.pid}*")]
    found += [str(p) for p in ROOT.glob(f"*/{LAB}/*/{served.rundir.name}*")]
    return found


def listening(pids: list[int]) -> list[str]:
    """The local addresses the processes `pids` listen on (TCP and UDP), from ss."""
    out = subprocess.run(["ss", "-Hlntup"], capture_output=True, text=True, check=True).stdout
    return [line.split()[4] for line in out.splitlines()
            if any(f"pid={pid}," in line for pid in pids)]


def test_serve_for_a_while_answers_curl_and_ab_and_leaves_nothing(workdir):
    require_stack("nginx-fpm")
    served = Served(workdir, "--for", "5s")
    got = curl(served.url)
    assert got.stdout == "Hello World", got
    assert served.rundir.is_dir() and (served.rundir / "nginx" / "nginx.conf").is_file()
    ab = subprocess.run([require_tool("ab", "apache2-utils"), "-k", "-n", "500", "-c", "4", served.url],
                        capture_output=True, text=True, timeout=20)
    assert re.search(r"Complete requests:\s+500\b", ab.stdout) and re.search(r"Failed requests:\s+0\b", ab.stdout), \
        ab.stdout + ab.stderr
    status, said = served.finish()
    assert status == 0, said
    assert "stopped nginx-fpm: no server process, cgroup or run directory left" in said
    assert left_behind(served) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C", "SIGTERM"])
def test_serve_holds_the_lock_until_ctrl_c_and_leaves_nothing(workdir, sig):
    require_stack("nginx-fpm")
    served = Served(workdir)
    try:
        assert curl(served.url).stdout == "Hello World"
        up = left_behind(served)  # the check sees what a running serve has
        assert any(w.startswith("process") for w in up) and f"run directory {served.rundir}" in up, up
        assert any(f"run-{served.proc.pid}" in w for w in up), up
        assert listening(served.pids) and all(a.startswith("127.0.0.1:") for a in listening(served.pids)), \
            "a server listens beyond loopback"
        holder = lock.holder()
        assert holder and f"pid {served.proc.pid}: stackbench serve nginx-fpm" in holder, holder
    finally:
        served.proc.send_signal(sig)
    status, said = served.finish()
    assert status == 0, said
    assert "Traceback" not in said
    assert wait_until(lambda: left_behind(served) == [], 5), left_behind(served)
    assert lock.holder() is None or "stackbench serve" not in lock.holder()


def test_serve_over_tls_answers_curl_trusting_the_printed_ca(workdir):
    require_stack("nginx-fpm")
    served = Served(workdir, "--protocol", "h2", "--for", "5s")
    assert served.tls_url and served.ca and served.ca.is_file(), served.banner
    got = curl("--http2", "--cacert", str(served.ca), "-w", " %{http_code} %{http_version}", served.tls_url)
    assert got.stdout == "Hello World 200 2", got
    untrusted = curl(served.tls_url)  # the lab's CA is its own: no system store trusts it
    assert untrusted.returncode == 60, untrusted
    assert curl(served.url).stdout == "Hello World"  # clear text beside it, as a run's TLS start does
    status, said = served.finish()
    assert status == 0, said
    assert left_behind(served) == []

"""A throw-away nginx for the engine benchmarks: one worker, many listening ports, a
12-byte file — a bare server the engines are compared against, not a stack of the lab.

Renders a minimal config into a private temp dir (pid, logs and all five
*_temp_path inside it, so nothing under /var is touched), checks it with
`nginx -t`, and runs it under the lab's own supervisor (stackbench/upkeep/supervise.py:
pinned, own session, ready by polling stub_status against a deadline, SIGQUIT then
SIGKILL of the process group).
"""

import contextlib
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stackbench.upkeep.supervise import run_checked, spawn, wait_ready  # noqa: E402

CONF = """\
daemon off;
master_process on;
worker_processes 1;
{rlimit}
error_log {dir}/error.log;
pid {dir}/nginx.pid;
events {{ worker_connections {worker_connections}; }}
http {{
    access_log off;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    default_type text/html;
    keepalive_requests 1000000;
    server {{
{listen}
        root {dir}/www;
        location = /nginx_status {{ stub_status; }}
    }}
}}
"""

BODY = b"hello world\n"  # the 12-byte file of the spec


def free_ports(n):
    """n distinct free ports (all bound at once, so none is handed out twice)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Nginx:
    def __init__(self, core=0, worker_connections=1024, rlimit_nofile=None, ports=1):
        self.core = core
        self.n_ports = ports
        self.ports = []
        self.worker_connections = worker_connections
        self.rlimit_nofile = rlimit_nofile
        self.dir = None
        self.proc = None
        self.port = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/"

    def fresh_url(self):
        """A URL on a port no earlier run used. Connection-per-request runs leave
        ~28k sockets in TIME_WAIT on the server side for 60 s; a later run reusing
        those 4-tuples hits the slower TIME_WAIT-recycling path, so runs are only
        comparable on ports of their own."""
        if not self.ports:
            raise RuntimeError("all listening ports used: start nginx with more ports")
        return f"http://127.0.0.1:{self.ports.pop(0)}/"

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="stackbench-nginx-")
        os.chmod(self.dir, 0o755)  # workers run as nobody and must read www/
        os.mkdir(os.path.join(self.dir, "www"))
        with open(os.path.join(self.dir, "www", "index.html"), "wb") as f:
            f.write(BODY)
        self.ports = free_ports(self.n_ports)
        self.port = self.ports.pop(0)
        listen = "\n".join(f"        listen 127.0.0.1:{p} backlog=4096;"
                           for p in [self.port] + self.ports)
        rlimit = f"worker_rlimit_nofile {self.rlimit_nofile};" if self.rlimit_nofile else ""
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(CONF.format(dir=self.dir, listen=listen, rlimit=rlimit,
                                worker_connections=self.worker_connections))
        prefix = ["nginx", "-p", self.dir + "/", "-c", conf]
        status, out = run_checked(prefix + ["-t", "-q"])
        if status != 0:
            self._cleanup()
            raise RuntimeError(f"nginx -t failed: {out.strip()}")
        self.proc = spawn("nginx", prefix, cwd=Path(self.dir), cpus=[self.core], stop_signal=signal.SIGQUIT)
        try:
            wait_ready(self.proc, self._answers, deadline_s=5)
        except BaseException:
            self.stop()
            raise
        return self

    def _answers(self):
        with contextlib.suppress(OSError):
            self.status()
            return True
        return False

    def _status_lines(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/nginx_status", timeout=5) as r:
            return r.read().decode().split("\n")

    def status(self):
        """(active connections, requests served so far, this query excluded)."""
        lines = self._status_lines()
        active = int(lines[0].split(":")[1])
        requests = int(lines[2].split()[2]) - 1
        return active, requests

    def accepted(self):
        """Connections accepted so far, this query's excluded."""
        return int(self._status_lines()[2].split()[0]) - 1

    def requests(self):
        return self.status()[1]

    def worker_cpu_s(self):
        """CPU seconds used so far by the nginx workers (children of the master)."""
        total = 0.0
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                pids = f.read().split()
        except OSError:
            return 0.0
        for pid in pids:
            total += process_cpu_s(pid)
        return total

    def stop(self):
        if self.proc:
            self.proc.stop()
        self._cleanup()

    def _cleanup(self):
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __exit__(self, *exc):
        self.stop()
        return False


TICK = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def machine_busy_s():
    """CPU seconds all cores spent busy since boot (everything but idle and iowait)."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / TICK


def wait_quiet(threshold=0.15, max_wait_s=120):
    """Waits until the machine is idle (other work running makes runs incomparable:
    the same wrk run varies 43k-63k req/s here under load). Returns the busy share
    seen last (cores busy / cores), whether or not it got below the threshold."""
    cores = os.cpu_count() or 1
    deadline = time.monotonic() + max_wait_s
    while True:
        b0, t0 = machine_busy_s(), time.monotonic()
        time.sleep(0.5)
        share = (machine_busy_s() - b0) / (time.monotonic() - t0) / cores
        if share < threshold or time.monotonic() > deadline:
            return share
        time.sleep(1)


def stop_on_signals():
    """Turn SIGTERM/SIGHUP into KeyboardInterrupt so `with Nginx()` cleans up."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def run_measured(cmd, timeout=120):
    """Runs a client to completion; returns (stdout, wall_s, cpu_s of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, wall, cpu

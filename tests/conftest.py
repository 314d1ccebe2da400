"""Shared fixtures. Tests that start real servers are marked `servers`: they need the
packages installed by scripts/setup.sh and root (to drop workers to www-data). In CI
(CI=true) a missing server is a failure; on a developer's machine it is a skip that says why."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable, Iterator
from pathlib import Path

import pytest

from stackbench import yardstick
from stackbench.monitor import cpu_noise
from stackbench.stacks import installed
from stackbench.stacks.registry import STACKS

# A shell starts a background job (`make test &`, `nohup`, CI runners) with SIGINT
# ignored, and an ignored signal stays ignored across exec: every `stackbench run` the
# tests start would then ignore their Ctrl-C, and the tests that send one would measure
# the launcher, not the lab. A handler (unlike SIG_IGN) is reset to the default in a
# child, so Python there installs its own KeyboardInterrupt as a user's terminal would.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The CPU-steadiness probe (monitor/cpu_noise.py) spends 2 s before every run; no test
# but its own reads the figure (docs/reference/tests.md).
os.environ[cpu_noise.SKIP_VAR] = "off"
# The yardstick (stackbench/yardstick/) spends ~0.5 s before every run the same way; the
# tests that read it unset this.
os.environ[yardstick.SKIP_VAR] = "off"


def require_stack(stack_id: str) -> None:
    gone = installed.missing(STACKS[stack_id])
    if gone:
        msg = f"{stack_id} needs {', '.join(r.package for r in gone)} (run ./scripts/setup.sh)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


def run_real_plan(text: str, name: str, stack_id: str):
    """A plan's TOML run through the whole runner on real servers, into a store in memory:
    (store, its cells in run order), the run complete."""
    import tomllib

    from stackbench import runner
    from stackbench.planning import plan as plan_mod
    from stackbench.store import Store

    require_stack(stack_id)
    store = Store()
    outcome = runner.run_plan(plan_mod.parse(tomllib.loads(text), name), store)
    assert outcome.status == "complete", outcome.errors
    return store, store.cells(outcome.run_id)


def require_tool(name: str, package: str) -> str:
    path = shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin")
    if not path:
        msg = f"{name} not found (apt-get install {package})"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


def commands() -> dict[int, str]:
    """Every process's command line (its arguments joined by spaces), by pid."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
    return found


def wait_until(done: Callable[[], object], seconds: float, while_=lambda: True) -> bool:
    """Polls `done` every 50 ms for up to `seconds` (while `while_` holds); its last answer."""
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline and while_():
        time.sleep(0.05)
    return bool(done())


def stop_lab(lab: subprocess.Popen, how: str) -> None:
    """A running `stackbench run` stopped by a Ctrl-C or a kill -9, and its exit status
    what that ending gives."""
    lab.send_signal(signal.SIGINT if how == "Ctrl-C" else signal.SIGKILL)
    assert lab.wait(timeout=30) == (130 if how == "Ctrl-C" else -9), lab.stderr.read()


def hold_run_lock(path: Path) -> subprocess.Popen:
    """Another process holding the lab's run lock at `path` (as a measuring lab would), until
    it is killed."""
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                               "from stackbench.upkeep.lock import RunLock; RunLock(Path(sys.argv[1])).acquire(); "
                               "print('held', flush=True); time.sleep(60)", str(path)],
                              stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parent.parent)
    assert holder.stdout.readline().strip() == "held"
    return holder


@pytest.fixture
def workdir():
    """A run-directory parent the servers' unprivileged workers can traverse (pytest's
    tmp_path lives under a 0700 directory, which www-data cannot enter)."""
    path = Path(tempfile.mkdtemp(prefix="stackbench-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _sshd_host(env: dict[str, str]) -> Iterator[Path]:
    from sshd_host import sshd_in_namespace

    if not Path("/usr/sbin/sshd").exists():
        msg = "the SSH tests need openssh-server (run ./scripts/setup.sh)"
        pytest.fail(msg) if os.environ.get("CI") else pytest.skip(msg)
    with sshd_in_namespace(env) as tmp:
        yield tmp


@pytest.fixture
def ssh_host():
    """Another host, over SSH: an sshd in a network namespace (sshd_host.py); yields the
    directory with its ssh_config, which names it `remote-test`. The agent there collects
    its host's environment as the lab does here, and the sessions sshd opens (which inherit
    none of the lab's variables) have the CPU probe and the yardstick off as above: no test
    on this host reads them, and each agent's start spent 2 s and 1.3 s on them."""
    yield from _sshd_host({cpu_noise.SKIP_VAR: "off", yardstick.SKIP_VAR: "off"})


@pytest.fixture
def ssh_host_measuring_yardstick():
    """The same host, its agent measuring the yardstick (the sizing against a server host)."""
    yield from _sshd_host({cpu_noise.SKIP_VAR: "off"})

"""Per-process memory: RSS and PSS from /proc/PID/smaps_rollup.

Summed RSS overcounts shared pages badly (≈10× for a 32-child prefork: docs/servers.md,
"Memory: PSS, not summed RSS"); PSS splits each shared page among its users, so
per-process PSS adds up to the truth. Its parts are kept too: anonymous and shmem PSS add
up to what the stack's cgroup is charged (its anon + shmem), while file-backed PSS is the
process's share of code pages the whole machine shares — charged to whichever cgroup read
them first, seldom the stack's (docs/methods.md, "Memory"). PSS costs 150–300 µs per
process, so it is read once per cell, right after the load, while every worker still
exists — not on the sampling path.
"""

from __future__ import annotations

from stackbench.model.cost import ProcessMemory


def snapshot(pids: list[int]) -> list[ProcessMemory]:
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            comm = stat[stat.find(b"(") + 1:stat.rfind(b")")].decode(errors="replace")
            fields = stat[stat.rfind(b")") + 2:].split()
            ppid, threads = int(fields[1]), int(fields[17])
            rollup = _rollup(pid)
        except (OSError, ValueError, IndexError):
            continue  # exited meanwhile
        out.append(ProcessMemory(pid, ppid, comm, rollup.get("Rss"), rollup.get("Pss"), threads,
                                 rollup.get("Pss_Anon"), rollup.get("Pss_Shmem"), rollup.get("Pss_File")))
    return out


def _rollup(pid: int) -> dict[str, int]:
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                values[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return values

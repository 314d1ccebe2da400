"""The floor clients (bench/floor-client/): the least a HTTP/1.1 keep-alive client can
spend per request on this machine — floor.c on epoll, uring/ on io_uring — built on
first use and measured beside the engine, so its figures can be read against what the
kernel leaves to any client, not only against wrk."""

import json
import os
import subprocess

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor-client")
KINDS = ("floor", "floor-uring")


def binary(kind="floor"):
    """The compiled floor client of `kind`, rebuilt when its source changed."""
    if kind == "floor":
        source, built = os.path.join(HERE, "floor.c"), os.path.join(HERE, ".build", "floor")
        if not os.path.exists(built) or os.path.getmtime(built) < os.path.getmtime(source):
            os.makedirs(os.path.dirname(built), exist_ok=True)
            subprocess.run(["cc", "-O2", "-Wall", "-o", built, source], check=True)
        return built
    if kind == "floor-uring":
        manifest = os.path.join(HERE, "uring", "Cargo.toml")
        subprocess.run(["cargo", "build", "--quiet", "--release", "--manifest-path", manifest], check=True)
        return os.path.join(HERE, "uring", "target", "release", "floor-uring")
    raise ValueError(kind)


def command(url, conns, secs, kind="floor"):
    return [binary(kind), "-c", str(conns), "-d", str(secs), url]


def own_rate(out):
    """(requests/s, failed, ok) from a floor client's JSON line."""
    doc = json.loads(out)
    return doc["requests_per_s"], doc["requests"]["failed"], doc["requests"]["ok"]

#!/usr/bin/env python3
"""Does the engine tests' own schema validator (loadgen/tests/common/schema.rs) give the
same verdict as Python's jsonschema (Draft 2020-12)? Real engine documents (runs against
a local http.server: closed loop, open loop, a failing target) and copies of them with
one field deleted, retyped, set negative, to null, to 1.5, or an undeclared field added;
both validators judge every one, made strict the same way (the tests' schema_errors).

    .venv/bin/python scripts/schema-parity.py [--mutations N] [--seed S]

Prints the counts and exits 1 when any verdict differs (naming the documents)."""

from __future__ import annotations

import argparse
import copy
import http.server
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "loadgen" / "target" / "release" / "stackbench-load"
SCHEMA = ROOT / "loadgen" / "schema" / "result-v1.schema.json"
STRICT = ["", "/properties/config", "/properties/stages/items", "/properties/engine"]  # as schema_errors


def strict_schema() -> dict:
    schema = json.loads(SCHEMA.read_text())
    for pointer in STRICT:
        node = schema
        for part in filter(None, pointer.split("/")):
            node = node[part]
        node["additionalProperties"] = False
    return schema


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def engine_documents(url: str) -> list[dict]:
    runs = [["-n", "200", "-c", "4"], ["-d", "2s", "-c", "2", "--rate", "100"],
            ["-n", "50", "-c", "2", "--no-keepalive"], ["-n", "20", "-c", "1", url.rsplit(":", 1)[0] + ":1/"],
            # Visits: a login (this server answers the POST 501) and a page with an asset.
            ["-n", "6", "-c", "2", "--journey",
             '{"login": {"path": "/", "form": {"a": "b"}}, "steps": [{"page": "/", "assets": ["/?x"]}]}']]
    docs = []
    for args in runs:
        target = [] if args[-1].startswith("http") else [url]
        out = subprocess.run([str(ENGINE), "--json", *args, *target], capture_output=True, text=True, timeout=60)
        docs.append(json.loads(out.stdout))
    return docs


def paths(node, prefix=()):
    if prefix:
        yield prefix
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield from paths(value, prefix + (key,))


def mutated(doc: dict, rng: random.Random) -> dict:
    copy_ = copy.deepcopy(doc)
    path = rng.choice(list(paths(copy_)))
    parent = copy_
    for key in path[:-1]:
        parent = parent[key]
    key, how = path[-1], rng.random()
    if how < 0.3 and isinstance(parent, dict):
        del parent[key]
    elif how < 0.5:
        parent[key] = "x"
    elif how < 0.65:
        parent[key] = -1
    elif how < 0.8:
        parent[key] = None
    elif how < 0.9 and isinstance(parent, dict):
        parent["zz_undeclared"] = 1
    else:
        parent[key] = 1.5
    return copy_


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutations", type=int, default=100, help="mutated copies of each real document")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        docs = engine_documents(f"http://127.0.0.1:{server.server_address[1]}/")
    finally:
        server.shutdown()
    rng = random.Random(args.seed)
    every = docs + [mutated(d, rng) for d in docs for _ in range(args.mutations)]
    validator = jsonschema.Draft202012Validator(strict_schema())
    with tempfile.TemporaryDirectory(prefix="schema-parity-") as tmp:
        python = {}
        for i, doc in enumerate(every):
            name = f"doc-{i:04d}.json"
            (Path(tmp) / name).write_text(json.dumps(doc))
            python[name] = not any(validator.iter_errors(doc))
        subprocess.run(["cargo", "test", "--profile", "ci-test", "--quiet", "--test", "engine", "--",
                        "--ignored", "--exact", "schema_verdicts_of_a_directory"],
                       cwd=ROOT / "loadgen", env={**os.environ, "SCHEMA_PARITY_DIR": tmp}, check=True,
                       stdout=subprocess.DEVNULL)
        rust = json.loads((Path(tmp) / "verdicts-rust.json").read_text())
    differ = sorted(n for n in python if rust.get(n) != python[n])
    valid = sum(python.values())
    print(f"{len(every)} documents ({len(docs)} real), {valid} valid and {len(every) - valid} invalid by "
          f"Python's jsonschema; the tests' validator differs on {len(differ)}" + (f": {differ}" if differ else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

"""The lab's own code, packed to run on another host (hosts/agent.py): the `stackbench`
package with its templates and workloads, and the pure-Python libraries it renders
configs with (Jinja2, MarkupSafe without its C speed-up, which falls back to Python).
Nothing is installed there: the bundle is unpacked into ~/.cache/stackbench/ and run
with the host's python3, the same code as the lab's, byte for byte (its SHA-256 names it).

The generated JPEGs go along as the lab made them (workloads/media.py reads them there
first), so the host serves the same bytes and needs no Pillow.

Packed the same way every time (sorted, no timestamps, no bytecode), so one build of
the lab ships once per host.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

import jinja2
import markupsafe

import stackbench
from stackbench import workloads
from stackbench.workloads import media

# The packages the agent imports, by their directories here.
PACKAGES = (stackbench, jinja2, markupsafe)
SKIP_SUFFIXES = (".pyc", ".so", ".c")  # bytecode is rebuilt there; C extensions are this Python's


@dataclass(frozen=True)
class Bundle:
    data: bytes  # a gzipped tar of the packages' directories, at the top level
    digest: str  # its SHA-256, hex


@functools.cache
def build() -> Bundle:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for package in PACKAGES:
            root = root_of(package)
            for path in sorted(root.rglob("*")):
                if not path.is_file() or "__pycache__" in path.parts or path.suffix in SKIP_SUFFIXES:
                    continue
                info = tarfile.TarInfo(str(Path(root.name) / path.relative_to(root)))
                data = path.read_bytes()
                info.size, info.mode, info.mtime = len(data), 0o644, 0
                tar.addfile(info, io.BytesIO(data))
        workloads.DOCUMENTS  # noqa: B018 - builds every generated document, JPEGs included
        for name, data in sorted(media.made.items()):
            info = tarfile.TarInfo(str(Path("stackbench") / media.SHIPPED.relative_to(root_of(stackbench)) / name))
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    packed = gzip.compress(raw.getvalue(), mtime=0)
    return Bundle(packed, hashlib.sha256(packed).hexdigest())


def root_of(package) -> Path:
    return Path(package.__file__).parent

"""Workloads: the documents the lab generates, serves, verifies and measures.

Each workload is a URL path, the files it needs in the docroot, and what a correct answer
looks like (status, content type, exact body or length). A stack that answers anything
else is not measured (STYLE.md: verify before measuring, as TechEmpower does).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stackbench.errors import UsageError


@dataclass(frozen=True)
class Workload:
    id: str
    path: str  # URL path, starts with /
    description: str
    files: dict[str, bytes] = field(default_factory=dict)  # docroot-relative name -> content
    content_type: str = "text/html"
    body: bytes | None = None  # exact expected body, or None to check only the length
    length: int | None = None
    needs_php: bool = False

    def expected_length(self) -> int:
        return len(self.body) if self.body is not None else (self.length or 0)


HELLO_HTML = b"Hello World\n"  # 12 bytes, the classic "static" of these comparisons
assert len(HELLO_HTML) == 12

# ~100 KB from PHP: a realistic page-sized response, built by a loop so the script does
# some work (and the body is checkable: PHP_100K_LINE repeated).
PHP_100K_LINE = b"<p>stackbench 100 KB workload: lorem ipsum dolor sit amet, consectetur adipiscing.</p>\n"
PHP_100K_REPEAT = 1200
PHP_100K_SCRIPT = (
    b'<?php\n'
    b'$line = "' + PHP_100K_LINE.rstrip(b"\n") + b'\\n";\n'
    b'for ($i = 0; $i < ' + str(PHP_100K_REPEAT).encode() + b'; $i++) { echo $line; }\n'
)

WORKLOADS: dict[str, Workload] = {w.id: w for w in (
    Workload("static-12b", "/hello.html", "a 12-byte static HTML file",
             files={"hello.html": HELLO_HTML}, body=HELLO_HTML),
    Workload("php-hello", "/hello.php", 'PHP: <?php echo "Hello World";',
             files={"hello.php": b'<?php echo "Hello World";\n'}, body=b"Hello World", needs_php=True),
    Workload("php-100k", "/100k.php", "PHP: a script that emits ~100 KB",
             files={"100k.php": PHP_100K_SCRIPT}, body=PHP_100K_LINE * PHP_100K_REPEAT, needs_php=True),
)}


def get(workload_id: str) -> Workload:
    try:
        return WORKLOADS[workload_id]
    except KeyError:
        known = ", ".join(WORKLOADS)
        raise UsageError(f"unknown workload {workload_id!r}; known workloads: {known}") from None


def docroot_files() -> dict[str, bytes]:
    """Every workload's files; one docroot serves them all."""
    files: dict[str, bytes] = {"index.html": b"<!doctype html><title>stackbench</title>\n"}
    for w in WORKLOADS.values():
        files.update(w.files)
    return files

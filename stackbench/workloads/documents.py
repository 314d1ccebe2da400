"""The generated documents of the seed comparisons: static files of 12 bytes and ~100 KB,
a ~150 KB JPEG, PHP hello world, a PHP script that emits ~100 KB, and a PHP page that
waits 50 ms (a slow backend)."""

from __future__ import annotations

from stackbench.workloads import media
from stackbench.workloads.base import Check, Url, Workload

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

STATIC_12B = Workload(
    "static-12b", "a 12-byte static HTML file",
    urls=(Url("/hello.html", Check(body=HELLO_HTML)),), files={"hello.html": HELLO_HTML})

PHP_HELLO = Workload(
    "php-hello", 'a PHP script printing "Hello World" (11 bytes)',
    urls=(Url("/hello.php", Check(body=b"Hello World")),),
    files={"hello.php": b'<?php echo "Hello World";\n'}, needs_php=True)

PHP_100K = Workload(
    "php-100k", "a PHP script printing ~100 KB",
    urls=(Url("/100k.php", Check(body=PHP_100K_LINE * PHP_100K_REPEAT)),),
    files={"100k.php": PHP_100K_SCRIPT}, needs_php=True)

# ~100 KB of HTML: a long article, the seeds' "100 KB file".
STATIC_100K_HTML = (b"<!doctype html>\n<html><head><title>stackbench 100 KB</title></head><body>\n"
                    + PHP_100K_LINE * 1170 + b"</body></html>\n")

STATIC_100K = Workload(
    "static-100k", "a ~100 KB static HTML file",
    urls=(Url("/100k.html", Check(body=STATIC_100K_HTML)),), files={"100k.html": STATIC_100K_HTML})


# Said without building the photo (workloads.describe: a report names it, never encodes it).
JPEG_150K_DESCRIPTION = "a ~150 KB JPEG, generated from a fixed seed"


def static_jpeg_150k() -> Workload:
    """Built on first use (workloads/__init__.py): encoding the photo takes ~0.1 s."""
    photo = media.jpeg(150_000)
    return Workload(
        "static-jpeg-150k", JPEG_150K_DESCRIPTION,
        urls=(Url("/photo.jpg", Check(content_type="image/jpeg", body=photo)),), files={"photo.jpg": photo})


# A slow backend: the script holds its worker (an FPM child, a prefork child) for 50 ms
# without using CPU, as a page waiting on a remote API or a slow query does.
SLEEP_MS = 50
PHP_SLEEP = Workload(
    "php-sleep", f"a PHP script that waits {SLEEP_MS} ms (a slow backend; no CPU)",
    urls=(Url("/sleep.php", Check(body=f"slept {SLEEP_MS} ms\n".encode())),),
    files={"sleep.php": f'<?php usleep({SLEEP_MS * 1000}); echo "slept {SLEEP_MS} ms\\n";\n'.encode()},
    needs_php=True)

"""The generated documents of the seed comparisons: a 12-byte static file, PHP hello
world, and a PHP script that emits ~100 KB."""

from __future__ import annotations

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
    "php-hello", 'PHP: <?php echo "Hello World";',
    urls=(Url("/hello.php", Check(body=b"Hello World")),),
    files={"hello.php": b'<?php echo "Hello World";\n'}, needs_php=True)

PHP_100K = Workload(
    "php-100k", "PHP: a script that emits ~100 KB",
    urls=(Url("/100k.php", Check(body=PHP_100K_LINE * PHP_100K_REPEAT)),),
    files={"100k.php": PHP_100K_SCRIPT}, needs_php=True)

"""A mixed page: one PHP page and the assets a theme page references — 2 stylesheets,
3 scripts, 6 images — fetched the way a browser does (the page, then its assets over up
to 6 connections per visitor: the engine's page mode). This is where event-driven
fronts are said to win: with keep-alive a browser's 6 connections each hold a prefork
child, whether it serves a static file or PHP.

Sizes are those of a typical WordPress theme page (a framework stylesheet and a small
block one, jQuery-sized, theme-sized and tracker-sized scripts, a hero photograph, four
thumbnails and a logo): ~560 KB in all, of which the PHP page is ~30 KB.
"""

from __future__ import annotations

import random

from stackbench.workloads import media
from stackbench.workloads.base import Check, Url, Workload

PAGE = "/mixed/index.php"
STYLESHEETS = {"/mixed/css/theme.css": 62_000, "/mixed/css/blocks.css": 12_000}
SCRIPTS = {"/mixed/js/jquery.min.js": 87_000, "/mixed/js/theme.js": 14_000, "/mixed/js/stats.js": 4_000}
IMAGES = {"/mixed/img/hero.jpg": 150_000, "/mixed/img/thumb-1.jpg": 40_000, "/mixed/img/thumb-2.jpg": 36_000,
          "/mixed/img/thumb-3.jpg": 32_000, "/mixed/img/thumb-4.jpg": 28_000, "/mixed/img/logo.jpg": 6_000}
ARTICLE_PARAGRAPHS = 60


def _text(size: int, seed: int, line: str) -> bytes:
    """Deterministic text of exactly `size` bytes, built from `line` with numbered fields."""
    rng = random.Random(seed)
    out = bytearray()
    i = 0
    while len(out) < size:
        out += line.format(i=i, n=rng.randint(0, 9999), c=rng.randrange(0xFFFFFF)).encode()
        i += 1
    return bytes(out[:size - 1]) + b"\n"


def _css(size: int, seed: int) -> bytes:
    return _text(size, seed, ".c{i} {{ color: #{c:06x}; margin: {n}px 0; padding: 0 {n}px; }}\n")


def _js(size: int, seed: int) -> bytes:
    return _text(size, seed, "function f{i}(a) {{ return a * {n} + 0x{c:x}; }}\n")


_PARAGRAPH = ("the lab serves a page made of PHP and static assets, as most real sites are. Lorem ipsum "
              "dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et "
              "dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi "
              "ut aliquip ex ea commodo consequat.")


def _head() -> str:
    css = "".join(f'<link rel="stylesheet" href="{p}">\n' for p in STYLESHEETS)
    img = "".join(f'<img src="{p}" alt="">\n' for p in IMAGES)
    return f"<!doctype html>\n<html><head><title>stackbench mixed page</title>\n{css}</head><body>\n{img}"


def _tail() -> str:
    return "".join(f'<script src="{p}"></script>\n' for p in SCRIPTS) + "</body></html>\n"


def _page_script() -> bytes:
    """The PHP page: literal HTML around a loop that writes the article (PHP drops the
    newline right after ?>, so the tail follows it directly)."""
    loop = (f'<?php for ($i = 0; $i < {ARTICLE_PARAGRAPHS}; $i++) {{ '
            f'echo "<p>Paragraph $i: {_PARAGRAPH}</p>\\n"; }} ?>')
    return (_head() + loop + "\n" + _tail()).encode()


def _page_body() -> bytes:
    """What the page script prints (checked exactly)."""
    paragraphs = "".join(f"<p>Paragraph {i}: {_PARAGRAPH}</p>\n" for i in range(ARTICLE_PARAGRAPHS))
    return (_head() + paragraphs + _tail()).encode()


# Said without building the images (workloads.describe); docs/reference/workloads.md has the sizes.
DESCRIPTION = "a PHP page + 2 CSS, 3 JS, 6 images (~490 KB in all), fetched like a browser"


def mixed_page() -> Workload:
    """Built on first use (workloads/__init__.py): its six JPEGs take ~0.25 s to encode."""
    files: dict[str, bytes] = {PAGE.lstrip("/"): _page_script()}
    urls = [Url(PAGE, Check(body=_page_body()))]
    for i, (path, size) in enumerate(STYLESHEETS.items()):
        files[path.lstrip("/")] = body = _css(size, seed=10 + i)
        urls.append(Url(path, Check(content_type="text/css", body=body)))
    for i, (path, size) in enumerate(SCRIPTS.items()):
        files[path.lstrip("/")] = body = _js(size, seed=20 + i)
        # text/javascript or application/javascript, by server: the body is what matters.
        urls.append(Url(path, Check(content_type="", body=body)))
    for i, (path, size) in enumerate(IMAGES.items()):
        files[path.lstrip("/")] = body = media.jpeg(size, seed=30 + i)
        urls.append(Url(path, Check(content_type="image/jpeg", body=body)))
    return Workload(
        "mixed-page", DESCRIPTION,
        urls=tuple(urls), files=files, needs_php=True, page_mode=True)


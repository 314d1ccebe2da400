"""The lab's WordPress site, generated from a fixed seed: posts, pages, categories, tags
and comments with fixed dates, so every provisioning serves the same bytes (and the
snapshot's cache key changes only when this does).

Sizes are those of a small real blog: 40 posts of 300–900 words, a few pages, eight
categories, comments on most posts — enough that the home page, an archive and a
search run the queries a real site runs, not a "Hello world!" post.
"""

from __future__ import annotations

import datetime as dt
import json
import random

SEED = 20240101
TITLE = "stackbench WordPress"
POSTS = 40
PAGES = 5
POSTS_PER_PAGE = 10

_WORDS = (
    "server request latency cache worker process thread socket kernel memory module config "
    "static dynamic page visitor browser response header upstream backend front proxy pool "
    "queue timeout keepalive benchmark measure result figure median interval repeat sample "
    "apache nginx php opcache database query index table row column theme plugin template "
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt "
    "ut labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco "
    "laboris nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit voluptate"
).split()
CATEGORIES = ("Servers", "PHP", "Caching", "Databases", "Benchmarks", "Networking", "Security", "Notes")
AUTHORS = ("Ada", "Brian", "Chen", "Dana", "Emil", "Fatima", "Goran", "Hana")
START = dt.datetime(2024, 1, 1, 9, 0, 0)
# The site's visitors who log in: subscribers (they read; they cannot edit), each with the
# display name a page personalised for them shows. Their passwords are no part of the
# content: every start of the database sets its own (wordpress/accounts.py). The names
# are made of words the generated posts never use, so an anonymous page never shows one.
READERS = (("reader1", "Reader Quince"), ("reader2", "Reader Rowan"), ("reader3", "Reader Sorrel"),
           ("reader4", "Reader Tamsin"))


def _sentence(rng: random.Random, words: int) -> str:
    s = " ".join(rng.choice(_WORDS) for _ in range(words))
    return s[0].upper() + s[1:] + "."


def _paragraphs(rng: random.Random, words: int) -> str:
    """Block-editor paragraphs, as WordPress 5+ stores them."""
    out, left = [], words
    while left > 0:
        n = min(left, rng.randint(40, 90))
        left -= n
        sentences, body = [], n
        while body > 0:
            k = min(body, rng.randint(6, 16))
            body -= k
            sentences.append(_sentence(rng, k))
        out.append("<!-- wp:paragraph -->\n<p>" + " ".join(sentences) + "</p>\n<!-- /wp:paragraph -->")
    return "\n\n".join(out)


def _slug(title: str) -> str:
    return "-".join(title.lower().replace(".", "").split())


def generate(seed: int = SEED) -> dict:
    rng = random.Random(seed)
    categories = [{"name": c, "slug": _slug(c), "description": _sentence(rng, 10)} for c in CATEGORIES]
    items = []
    used: set[str] = set()
    for i in range(POSTS + PAGES):
        page = i >= POSTS
        title = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 6))).title()
        slug = _slug(title)
        while slug in used:  # the same words drawn twice: WordPress would suffix "-2"
            slug += "-x"
        used.add(slug)
        date = START + dt.timedelta(days=i * 3, hours=rng.randint(0, 8), minutes=rng.randint(0, 59))
        comments = []
        for j in range(0 if page else rng.choice((0, 1, 2, 3, 5, 8))):
            author = rng.choice(AUTHORS)
            comments.append({"author": author, "email": f"{author.lower()}@example.invalid",
                             "content": _sentence(rng, rng.randint(8, 40)),
                             "date": str(date + dt.timedelta(hours=j + 1, minutes=rng.randint(0, 59)))})
        items.append({
            "type": "page" if page else "post", "title": title, "slug": slug,
            "content": _paragraphs(rng, rng.randint(300, 900)),
            "excerpt": "", "date": str(date),
            "categories": [] if page else sorted(rng.sample([c["slug"] for c in categories], rng.randint(1, 2))),
            "tags": [] if page else sorted(set(rng.sample(_WORDS, 3))),
            "comments": comments,
        })
    return {
        "site": {"title": TITLE, "tagline": "A deterministic site for measuring web stacks",
                 "admin": "admin", "email": "admin@example.invalid", "password": "stackbench-admin",
                 "language": "", "posts_per_page": POSTS_PER_PAGE},
        "categories": categories,
        "posts": items,
        "readers": [{"login": login, "name": name, "email": f"{login}@example.invalid"} for login, name in READERS],
    }


def as_json(seed: int = SEED) -> str:
    return json.dumps(generate(seed), sort_keys=True, indent=1)


def urls(seed: int = SEED) -> dict[str, str]:
    """Representative URLs of the site: home, one post, one category, one search."""
    content = generate(seed)
    post = next(p for p in content["posts"] if p["type"] == "post" and p["comments"])
    return {"home": "/", "post": f"/{post['slug']}/", "category": f"/category/{content['categories'][0]['slug']}/",
            "search": "/?s=cache"}

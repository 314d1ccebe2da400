"""The WordPress site's accounts on each start: the readers (subscribers who log in,
content.py's READERS) and the admin get passwords of this start's own, set in the start's
copy of the database before it accepts its first connection (the database's own init
file, workloads/mariadb.py) — like the database's password, and for the same reasons:
the snapshot is shared by every start and its provisioning is in this repository for
anyone to read, so it lets nobody in (install.php stores a hash no password matches).

The readers' passwords go to the lab alone (Context.site_logins, then the start's logins
file: workloads/login.py); the admin's is kept by no one — nothing of the lab logs in as
the admin.

WordPress stores phpass's portable hash (wp-includes/class-phpass.php, PasswordHash(8,
true): "$P$B", an 8-character salt, 2^13 rounds of MD5); it is computed here, so that
no PHP runs against the database at start and WordPress never rewrites the row on a
login (it does for a plain MD5 hash: wp_check_password in wp-includes/pluggable.php).
"""

from __future__ import annotations

import hashlib
import secrets

from stackbench.workloads.login import Login
from stackbench.workloads.wordpress import content

ADMIN = "admin"
# phpass's alphabet, and WordPress's cost: PasswordHash(8, true) writes "B" (8 + 5 = 13).
_ITOA64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_COUNT_LOG2 = 13

# How a visitor logs in (wp-login.php): the form a browser posts, with the test cookie
# WordPress sets on the login page and refuses a login without ("cookies are blocked").
# redirect_to sends a visitor who follows the redirect to the home page, as a reader
# coming back to the site would be, instead of the dashboard's profile page that
# WordPress picks for a subscriber.
LOGIN = Login(
    path="/wp-login.php",
    fields=(("log", "{user}"), ("pwd", "{password}"), ("wp-submit", "Log In"), ("redirect_to", "/"),
            ("testcookie", "1")),
    cookie="wordpress_test_cookie=WP%20Cookie%20check",
    session_cookie="wordpress_logged_in_",
    personalised=b'id="wpadminbar"',
    users=content.READERS,
)


def portable_hash(password: str, salt: str | None = None) -> str:
    """phpass's portable hash of `password` (crypt_private): WordPress checks it with
    wp_check_password. `salt`: 8 characters of phpass's alphabet (tests pin it)."""
    salt = salt if salt is not None else "".join(secrets.choice(_ITOA64) for _ in range(8))
    if len(salt) != 8 or any(c not in _ITOA64 for c in salt):
        raise ValueError("a phpass salt is 8 characters of ./0-9A-Za-z")
    raw = password.encode()
    digest = hashlib.md5(salt.encode() + raw).digest()
    for _ in range(1 << _COUNT_LOG2):
        digest = hashlib.md5(digest + raw).digest()
    return "$P$" + _ITOA64[_COUNT_LOG2] + salt + _encode64(digest)


def _encode64(data: bytes) -> str:
    """phpass's encode64: each group of up to 3 bytes, little-endian, 6 bits a character
    (a group of n bytes gives n + 1 characters)."""
    out = []
    for i in range(0, len(data), 3):
        group = data[i:i + 3]
        value = int.from_bytes(group, "little")
        out += [_ITOA64[(value >> shift) & 0x3F] for shift in range(0, 6 * (len(group) + 1), 6)]
    return "".join(out)


def new_passwords() -> dict[str, str]:
    """This start's passwords: {login: password} for every reader and the admin, 32
    characters of [A-Za-z0-9_-] (nothing to quote in SQL, nothing to escape in a form)."""
    return {login: secrets.token_urlsafe(24) for login in (*(u for u, _ in content.READERS), ADMIN)}


def readers(passwords: dict[str, str]) -> dict[str, str]:
    """Of this start's passwords, the readers' (what the lab keeps: the admin's is not)."""
    return {u: passwords[u] for u, _ in content.READERS}


def init_sql(database: str, passwords: dict[str, str]) -> str:
    """The statements that give each account this start's password, for the database's
    init file (run as its root before the first connection is accepted)."""
    return "".join(f"UPDATE `{database}`.`wp_users` SET user_pass = '{portable_hash(password)}' "
                   f"WHERE user_login = '{login}';\n" for login, password in passwords.items())

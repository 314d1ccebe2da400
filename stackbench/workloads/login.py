"""How a visitor logs in to a workload's application, and the accounts a stack start
gives its visitors.

A workload that has visitors who log in (WordPress) says how in a `Login`: the form to
POST and where, the cookie the POST must carry, the cookie a success sets, and what a
page personalised for a logged-in visitor carries. The accounts are a start's own: their
passwords are made when the start's database is (workloads/wordpress/accounts.py) and
kept in the start's run directory, in one file readable by the lab alone (mode 0600,
`logins.json`): a journey of the load engine reads it there, so no password is ever on a
command line or in anything the lab stores.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote_plus

# In a stack start's run directory (removed with it), read and written by the lab alone.
LOGINS_FILE = "logins.json"
FORMAT = 1


@dataclass(frozen=True)
class Account:
    user: str
    name: str  # the display name a page personalised for this visitor shows
    password: str = field(repr=False)  # this start's: never in a repr, a log or the store


@dataclass(frozen=True)
class Login:
    path: str  # the login page: a GET is given the test cookie, a POST of the form logs in
    # The form as a browser posts it (urlencoded); "{user}" and "{password}" stand for the
    # account's. Every start's names and passwords are [A-Za-z0-9_-]: nothing to escape.
    fields: tuple[tuple[str, str], ...]
    cookie: str  # "name=value" the POST must carry (the application's test cookie)
    session_cookie: str  # the prefix of the name of the cookie a successful login sets
    personalised: bytes  # what a page for a logged-in visitor carries (and no anonymous one)
    users: tuple[tuple[str, str], ...]  # (user, display name) of the accounts a start has

    def template(self) -> str:
        """The form's body with {user} and {password} left to fill in."""
        return "&".join(f"{quote_plus(k)}={v if v in ('{user}', '{password}') else quote_plus(v)}"
                        for k, v in self.fields)

    def body(self, account: Account) -> bytes:
        return self.template().replace("{user}", account.user).replace("{password}", account.password).encode()

    def accounts(self, passwords: dict[str, str]) -> list[Account]:
        """The start's accounts: each user with its display name and this start's
        password (`passwords`: {user: password}, Context.site_logins)."""
        return [Account(user, name, passwords[user]) for user, name in self.users if user in passwords]


def write(rundir: Path, login: Login, passwords: dict[str, str]) -> Path:
    """The start's logins file: everything a visitor needs to log in, its accounts with
    their passwords; created 0600 (never wider, not even for an instant)."""
    path = rundir / LOGINS_FILE
    doc = {"format": FORMAT, "path": login.path, "method": "POST",
           "content_type": "application/x-www-form-urlencoded", "body": login.template(), "cookie": login.cookie,
           "session_cookie": login.session_cookie,
           "accounts": [{"user": a.user, "password": a.password, "name": a.name}
                        for a in login.accounts(passwords)]}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def read(path: Path) -> list[Account]:
    """The accounts of a start's logins file."""
    doc = json.loads(path.read_text())
    return [Account(a["user"], a["name"], a["password"]) for a in doc["accounts"]]

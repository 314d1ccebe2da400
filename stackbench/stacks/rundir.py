"""A stack instance's run directory: the lab's own (mode 0700, marked for the sweep of
leftovers.py), yet passable by the servers' unprivileged users.

Why both: the directory holds rendered configs, logs, sockets and (for WordPress) a
database, and sits in a shared temp dir — no other local user has any business in it.
But the servers' workers are other users: www-data (every front's workers, PHP), mysql
(MariaDB) and Varnish's varnish/vcache, and they must reach the docroot, the sockets
and their own files below it. So the directory is 0700 for everyone else, and each of
those users gets one POSIX ACL entry that lets it *pass through* (--x: not list, not
read, not write): what it can then open is decided by the modes of the entries below,
as before. `ls -l` shows it as drwx--x---+ (the group bits show the ACL's mask).
"""

from __future__ import annotations

import errno
import os
import pwd
import struct
from pathlib import Path

from stackbench.upkeep import leftovers

# The system users of the packages' servers (Debian creates them); those missing here
# are skipped.
WORKER_USERS = ("www-data", "mysql", "varnish", "vcache")

# <linux/posix_acl_xattr.h>: a version, then (tag, perm, id) entries sorted by tag and id.
_ACL_XATTR = "system.posix_acl_access"
_ACL_VERSION = 2
_USER_OBJ, _USER, _GROUP_OBJ, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
_NO_ID = 0xFFFFFFFF
_R, _W, _X = 4, 2, 1


def make(stack_id: str, base: Path, drop_to_workers: bool) -> Path:
    """A new run directory under `base`. `drop_to_workers`: the servers run their
    workers as other users (the lab runs as root)."""
    path = leftovers.make_dir(f"stackbench-{stack_id}-", base)
    path.chmod(0o700)
    if drop_to_workers:
        uids = sorted({pw.pw_uid for name in WORKER_USERS if (pw := _user(name)) is not None})
        try:
            os.setxattr(path, _ACL_XATTR, passage_acl(uids))
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.ENOTSUP):
                raise
            # A file system without ACLs: the workers must still get through.
            path.chmod(0o711)
    return path


def passage_acl(uids: list[int]) -> bytes:
    """rwx for the owner, --x for each of `uids`, nothing for the group and others."""
    entries = [(_USER_OBJ, _R | _W | _X, _NO_ID), *[(_USER, _X, uid) for uid in uids],
               (_GROUP_OBJ, 0, _NO_ID), (_MASK, _X, _NO_ID), (_OTHER, 0, _NO_ID)]
    return struct.pack("<I", _ACL_VERSION) + b"".join(struct.pack("<HHI", *e) for e in entries)


def passers(path: Path) -> list[int]:
    """The uids the directory's ACL lets pass (for tests and `--keep-rundir` users)."""
    try:
        raw = os.getxattr(path, _ACL_XATTR)
    except OSError:
        return []
    entries = [struct.unpack_from("<HHI", raw, 4 + 8 * i) for i in range((len(raw) - 4) // 8)]
    return [ident for tag, perm, ident in entries if tag == _USER and perm & _X]


def _user(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None

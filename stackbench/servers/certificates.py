"""The run's own certificate authority and the one leaf every front serves, made with the
openssl CLI inside the stack's run directory (`RUNDIR/tls/`) and removed with it.

Why a CA and not a self-signed leaf: the load engine and the verification then check a
real chain against a trust anchor the lab hands them (`--cacert`, Python's `cafile`), as
a browser does, and a test can tell "untrusted" from "trusted". The CA signs one leaf and
nothing else; its key never leaves the run directory.

Private keys are created mode 0600 — opened with O_CREAT|O_EXCL and that mode before a
byte is written (openssl prints the key on its standard output; it is never a file of
openssl's making, so it is never world-readable for an instant). Who reads them:

- nginx, Apache, lighttpd, h2o and hitch load the key while still root, before their
  workers drop to the worker user: root-owned 0600 is enough, and the tests start every
  front so (tests/test_tls_stacks_real.py).
- Caddy and Jetty never run as root here (servers/caddy.py and servers/jetty.py start them
  as the worker user), so their key is handed to that user, still 0600 (Caddy's PEM by
  `give_key_to`; Jetty's a PKCS12 copy, `pkcs12`) — which PHP's workers, the same user,
  could read too: a 3-day loopback certificate, gone with the run directory.
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from stackbench.errors import ServerError

KINDS = ("ecdsa", "rsa")
# A few days: long enough for any run, short enough that a kept run directory's
# certificate is worthless soon after (and a client that ignores dates would show).
VALID_DAYS = 3
HOSTS = ("127.0.0.1", "localhost")

# The openssl CLI's own config for these two certificates (never the system's
# /etc/ssl/openssl.cnf, whose defaults could change what is issued).
_OPENSSL_CNF = """\
# Rendered by stackbench: what the run's CA and its one leaf certificate say.
[req]
distinguished_name = dn
prompt = no
[dn]
CN = stackbench run CA
[ca_ext]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[leaf_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, {key_usage}
extendedKeyUsage = serverAuth
subjectAltName = {san}
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""


@dataclass(frozen=True)
class Certificates:
    """The files of one run's TLS, all inside `directory`."""

    directory: Path
    kind: str  # "ecdsa" (P-256) or "rsa" (2048 bits): the CA's and the leaf's keys alike
    ca: Path  # the CA's certificate (PEM): the clients' only trust anchor
    ca_key: Path  # 0600
    leaf: Path  # the leaf's certificate (PEM), for 127.0.0.1 and localhost
    key: Path  # the leaf's private key (PEM), 0600
    bundle: Path  # the leaf's key then its certificate in one file, 0600 (hitch's pem-file)

    def private_files(self) -> list[Path]:
        return [self.ca_key, self.key, self.bundle]

    def give_key_to(self, user: str | None) -> None:
        """The leaf's key (and the bundle) owned by `user`, still 0600: for a server that
        reads it unprivileged. The CA's key stays root's."""
        if user is None:
            return
        pw = pwd.getpwnam(user)
        for path in (self.key, self.bundle):
            os.chown(path, pw.pw_uid, pw.pw_gid)


def make(directory: Path, kind: str = "ecdsa", *, days: int = VALID_DAYS,
         hosts: tuple[str, ...] = HOSTS) -> Certificates:
    """A new CA and a leaf for `hosts` signed by it, in `directory` (created mode 0711:
    the run directory above it already keeps out everyone but the servers' users, and a
    server that reads its key unprivileged must reach it)."""
    if kind not in KINDS:
        raise ValueError(f"certificate kind {kind!r} is not one of {KINDS}")
    directory.mkdir(mode=0o700)
    directory.chmod(0o711)  # whatever the umask
    certs = Certificates(directory, kind, ca=directory / "ca.pem", ca_key=directory / "ca.key",
                         leaf=directory / "leaf.pem", key=directory / "leaf.key",
                         bundle=directory / "leaf-bundle.pem")
    cnf = directory / "openssl.cnf"
    san = ", ".join(f"IP:{h}" if _is_ip(h) else f"DNS:{h}" for h in hosts)
    # An RSA key exchange is not offered (only ECDHE suites), but keyEncipherment is
    # what RSA server certificates carry; ECDSA signs only.
    key_usage = "digitalSignature, keyEncipherment" if kind == "rsa" else "digitalSignature"
    cnf.write_text(_OPENSSL_CNF.format(san=san, key_usage=key_usage))

    _write_private(certs.ca_key, _openssl("genpkey", *_key_args(kind)))
    _openssl("req", "-new", "-x509", "-config", str(cnf), "-key", str(certs.ca_key), "-sha256",
             "-days", str(days), "-extensions", "ca_ext", "-out", str(certs.ca))
    _write_private(certs.key, _openssl("genpkey", *_key_args(kind)))
    csr = _openssl("req", "-new", "-config", str(cnf), "-key", str(certs.key), "-subj", f"/CN={hosts[0]}")
    _openssl("x509", "-req", "-CA", str(certs.ca), "-CAkey", str(certs.ca_key), "-sha256",
             # A random serial given here, so openssl writes no serial file beside the CA.
             "-set_serial", f"0x{secrets.token_hex(16)}", "-days", str(days),
             "-extfile", str(cnf), "-extensions", "leaf_ext", "-out", str(certs.leaf), stdin=csr)
    _write_private(certs.bundle, certs.key.read_bytes() + certs.leaf.read_bytes())
    for public in (cnf, certs.ca, certs.leaf):  # whatever the umask: readable, never writable by others
        public.chmod(0o644)
    return certs


def pkcs12(certs: Certificates, path: Path, password: str) -> Path:
    """The leaf and its key as one PKCS12 keystore at `path`, 0600 like the key: for a
    Java server (Jetty), which reads no PEM key. Java's keystore needs a password; the
    file's mode is what protects it, as for the PEM key beside it."""
    _write_private(path, _openssl("pkcs12", "-export", "-in", str(certs.leaf), "-inkey", str(certs.key),
                                  "-passout", f"pass:{password}"))
    return path


def _key_args(kind: str) -> list[str]:
    if kind == "rsa":
        return ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
    return ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-pkeyopt", "ec_param_enc:named_curve"]


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def _write_private(path: Path, data: bytes) -> None:
    """A private key's file, mode 0600 from its creation (O_EXCL: never an old file's
    mode, never a file someone else made)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _openssl(*args: str, stdin: bytes | None = None) -> bytes:
    res = subprocess.run(["openssl", *args], input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=60, env={"PATH": "/usr/bin:/bin", "LANG": "C"})
    if res.returncode != 0:
        raise ServerError(f"openssl {args[0]} failed while making the run's certificates",
                          detail=res.stderr.decode(errors="replace").strip() or "(no output)")
    return res.stdout

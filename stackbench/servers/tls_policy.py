"""The one TLS policy every front renders, so a comparison over HTTPS compares servers,
not their packages' TLS defaults. docs/methods/fair-tls.md says where a server cannot follow it.

- Versions: TLS 1.2 and 1.3, nothing older.
- TLS 1.2 suites: ECDHE with AES-128-GCM, AES-256-GCM and CHACHA20-POLY1305, signed by the
  leaf's key type (ECDSA or RSA); no static RSA key exchange, no CBC.
- TLS 1.3 suites: the library's default (OpenSSL 3.0: AES-256-GCM, CHACHA20-POLY1305,
  AES-128-GCM; Go: all three), because h2o 2.2 and Caddy 2.6 (Go) cannot set them; the
  others are not narrowed either, so every front offers the same three.
- The client's order decides (no server preference): the same client then gets the same
  suite from every OpenSSL front. Go picks its own order for TLS 1.3 (docs/methods/fair-tls.md).
- Key exchange groups: X25519 and P-256.
- Session resumption by stateless tickets, lifetime 300 s; no server-side session cache
  where the server lets it be turned off (docs/methods/fair-tls.md: what each keeps). `tickets = false`
  turns tickets off (and so every resumption, where no cache is kept).
- No OCSP stapling (the leaf names no responder; the lab makes no outgoing connection).
- ALPN: h2 and http/1.1 where the server speaks HTTP/2, else http/1.1.
"""

from __future__ import annotations

from dataclasses import dataclass

from stackbench.servers.certificates import Certificates

VERSIONS = ("TLSv1.2", "TLSv1.3")
SESSION_LOG = "logs/tls-sessions.log"  # in the run directory, with log_sessions
TICKET_LIFETIME_S = 300
ALPN = ("h2", "http/1.1")

# TLS 1.2 suites, (OpenSSL's name, the IANA/Go name), in the preference order a server
# with server preference would use (none does here: the client's order decides).
_TLS12 = {
    "ecdsa": (
        ("ECDHE-ECDSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
        ("ECDHE-ECDSA-AES256-GCM-SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
        ("ECDHE-ECDSA-CHACHA20-POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
    ),
    "rsa": (
        ("ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
        ("ECDHE-RSA-AES256-GCM-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
        ("ECDHE-RSA-CHACHA20-POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
    ),
}
# TLS 1.3's suites as OpenSSL (and the IANA registry) names them.
TLS13_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256")
# The order the lab's client offers them (the engine: AES-128-GCM first, as browsers and
# h2load do; loadgen/src/tls.rs provider()) — every front here follows the client's
# order, so the read-back offers the same to record what the engine will negotiate.
CLIENT_TLS13_ORDER = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")


def client_tls12_order() -> list[str]:
    """The TLS 1.2 suites in the lab's client's order (AES-128-GCM first), both key types."""
    return [name for kind in _TLS12 for name in tls12_ciphers(kind) if "AES128" in name] + \
           [name for kind in _TLS12 for name in tls12_ciphers(kind) if "AES128" not in name]

# Groups: OpenSSL's names (nginx, Apache, lighttpd, hitch), Go's (Caddy), and the IANA
# names the read-back records (the engine's rustls names them alike).
GROUPS_OPENSSL = ("X25519", "prime256v1")
GROUPS_CADDY = ("x25519", "secp256r1")
GROUPS_JAVA = ("x25519", "secp256r1")  # JSSE's names (jdk.tls.namedGroups), for Jetty
_GROUP_NAMES = {"X25519": "X25519", "x25519": "X25519", "prime256v1": "secp256r1", "P-256": "secp256r1",
                "secp256r1": "secp256r1"}


def tls12_ciphers(kind: str) -> list[str]:
    """OpenSSL's names of the TLS 1.2 suites for a leaf of this key type."""
    return [openssl for openssl, _ in _TLS12[kind]]


def tls12_ciphers_iana(kind: str) -> list[str]:
    """The same suites by their IANA names (Go's, so Caddy's)."""
    return [iana for _, iana in _TLS12[kind]]


def cipher_name(name: str) -> str:
    """A negotiated suite as the engine's result names it, so the read-back and the
    engine's tuple compare as they are: TLS 1.2 suites by their IANA names (OpenSSL
    prints its own), TLS 1.3 suites with the "TLS13_" prefix rustls gives them (the
    registry's TLS_AES_128_GCM_SHA256 is TLS13_AES_128_GCM_SHA256). Unknown names are
    returned as given."""
    if name in TLS13_SUITES:
        return "TLS13_" + name.removeprefix("TLS_")
    for suites in _TLS12.values():
        for openssl, iana in suites:
            if name == openssl:
                return iana
    return name


def iana_group(name: str) -> str:
    return _GROUP_NAMES.get(name, name)


@dataclass(frozen=True)
class TlsSite:
    """What a front needs to serve the policy: its TLS port, the run's certificates and
    whether session tickets are on."""

    port: int
    certificates: Certificates
    tickets: bool = True
    # For tests only (access logs are off on every stack): nginx and Apache log, per
    # request on the TLS port, whether its session was resumed (SESSION_LOG), so a
    # handshake mode is checked against the server's own word.
    log_sessions: bool = False

    @property
    def kind(self) -> str:
        return self.certificates.kind

    def render_values(self) -> dict:
        """The policy as every template reads it (the same names in each)."""
        return {
            "tls_port": self.port,
            "tls_cert": str(self.certificates.leaf),
            "tls_key": str(self.certificates.key),
            "tls_bundle": str(self.certificates.bundle),
            "tls_tickets": self.tickets,
            "tls_ticket_lifetime": TICKET_LIFETIME_S,
            "tls_ciphers": ":".join(tls12_ciphers(self.kind)),
            "tls_ciphers_list": tls12_ciphers(self.kind),
            "tls_ciphers_iana": tls12_ciphers_iana(self.kind),
            "tls_groups": ":".join(GROUPS_OPENSSL),
            "tls_groups_caddy": " ".join(GROUPS_CADDY),
            "tls_session_log": f"{self.certificates.directory.parent}/{SESSION_LOG}" if self.log_sessions else None,
        }


def openssl_conf(site: TlsSite) -> str:
    """An OpenSSL config (given by OPENSSL_CONF) whose system-default section applies the
    policy to every SSL context a process makes: for servers that have no directive of
    their own for a part of it (h2o 2.2: groups, tickets off; hitch: tickets off)."""
    options = "" if site.tickets else "Options = -SessionTicket\n"
    return ("# Rendered by stackbench: the fair TLS policy for a server without a directive for it.\n"
            "openssl_conf = stackbench_init\n"
            "[stackbench_init]\nssl_conf = stackbench_ssl\n"
            "[stackbench_ssl]\nsystem_default = stackbench_tls\n"
            "[stackbench_tls]\n"
            "MinProtocol = TLSv1.2\n"
            f"CipherString = {':'.join(tls12_ciphers(site.kind))}\n"
            f"Groups = {':'.join(GROUPS_OPENSSL)}\n"
            + options)

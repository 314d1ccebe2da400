//! TLS for `https://` targets: the client configuration (what is trusted, what is
//! offered), the handshake of one connection and what it negotiated, and the
//! classification of a failed handshake into the result's error classes.
//!
//! rustls (through tokio-rustls) with the ring provider; README "TLS" says why.
//! TLS 1.3 and 1.2 are offered, with the provider's default cipher suites (the
//! AES-128-GCM ones moved first, see `provider`) and key-exchange groups, in its
//! order (X25519, then P-256, P-384).
//!
//! Trust is one of two things, never the system's roots:
//! - `--cacert`: the chain is verified by webpki against that CA only, and the
//!   name against the target host (an IP address as an IP SAN);
//! - `--pin-cert`: the server's end-entity certificate must be byte for byte the
//!   pinned one (no chain, no name, no dates: that is what a pin means), and the
//!   handshake signature is still verified with the pinned certificate's key —
//!   a pin that skipped it would accept anyone who copied the public certificate.
//!   This is what a measured full-handshake run uses: chain verification per
//!   connection costs the client CPU the server does not spend.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{Resumption, WebPkiServerVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    AlertDescription, CertificateError, CipherSuite, ClientConfig, ClientConnection, DigitallySignedStruct,
    HandshakeKind, NamedGroup, ProtocolVersion, RootCertStore, SignatureScheme,
};
use crate::net::Stream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::error::Error;
use crate::stats::{Detail, ErrorClass};

/// `--handshake`: how connections and TLS sessions are used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandshakeMode {
    /// One full handshake per connection; the connection is reused.
    KeepAlive,
    /// A new connection per request, resuming the thread's last session (ticket).
    Resumed,
    /// A new connection per request and a full handshake every time: no session
    /// is ever stored, so none can be resumed.
    Full,
}

impl HandshakeMode {
    pub fn name(self) -> &'static str {
        match self {
            HandshakeMode::KeepAlive => "keep-alive",
            HandshakeMode::Resumed => "resumed",
            HandshakeMode::Full => "full",
        }
    }
}

/// The run's TLS setup, checked and loaded once (config/from_cli.rs).
#[derive(Clone, Debug)]
pub struct TlsSetup {
    /// Verifier, versions, provider; ALPN and resumption are set per thread.
    base: Arc<ClientConfig>,
    pub server_name: ServerName<'static>,
    pub handshake: HandshakeMode,
    /// --http2: offer h2 first.
    pub http2: bool,
    /// What trust was asked for, for the result's config ("cacert" / "pin").
    pub trust: &'static str,
}

/// ring's provider with AES-128-GCM suites first (the rest in ring's order):
/// browsers and h2load prefer them, and a TLS 1.3 server (OpenSSL, rustls)
/// follows the client's order — so the lab's engine negotiates what they do.
fn provider() -> Arc<CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites.sort_by_key(|s| !format!("{:?}", s.suite()).contains("AES_128_GCM"));
    Arc::new(provider)
}

fn read_certs(path: &str, option: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    let bad = |why: String| Error::Usage(format!("{option} {path}: {why}"));
    let certs: Result<Vec<_>, _> = CertificateDer::pem_file_iter(Path::new(path))
        .map_err(|e| bad(format!("cannot read it ({e})")))?
        .collect();
    let certs = certs.map_err(|e| bad(format!("not a PEM certificate ({e})")))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in it".into()));
    }
    Ok(certs)
}

impl TlsSetup {
    /// `cacert` xor `pin` (from_cli checks that one is given).
    pub fn new(
        host: &str,
        cacert: Option<&str>,
        pin: Option<&str>,
        handshake: HandshakeMode,
        http2: bool,
    ) -> Result<TlsSetup, Error> {
        let provider = provider();
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| Error::Fatal(format!("TLS setup: {e}")))?;
        let (config, trust) = match (cacert, pin) {
            (Some(path), None) => {
                let mut roots = RootCertStore::empty();
                for cert in read_certs(path, "--cacert")? {
                    roots
                        .add(cert)
                        .map_err(|e| Error::Usage(format!("--cacert {path}: not a usable CA certificate ({e})")))?;
                }
                let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .map_err(|e| Error::Usage(format!("--cacert {path}: {e}")))?;
                (builder.with_webpki_verifier(verifier).with_no_client_auth(), "cacert")
            }
            (None, Some(path)) => {
                let leaf = read_certs(path, "--pin-cert")?.swap_remove(0);
                let pin = PinnedLeaf { leaf, algorithms: provider.signature_verification_algorithms };
                (builder.dangerous().with_custom_certificate_verifier(Arc::new(pin)).with_no_client_auth(), "pin")
            }
            _ => {
                return Err(Error::Usage(
                    "an https:// target needs --cacert CA.pem or --pin-cert LEAF.pem (exactly one)".into(),
                ));
            }
        };
        let server_name = ServerName::try_from(host.to_string())
            .map_err(|_| Error::Usage(format!("'{host}' is not a valid TLS server name")))?;
        Ok(TlsSetup { base: Arc::new(config), server_name, handshake, http2, trust })
    }

    /// An engine thread's connector: its own session store when resuming (so
    /// threads never share tickets), none at all otherwise. `h2` offers ALPN
    /// ["h2", "http/1.1"], else ["http/1.1"].
    pub fn connector(&self, h2: bool) -> TlsConnector {
        let mut config = (*self.base).clone();
        config.alpn_protocols =
            if h2 { vec![b"h2".to_vec(), b"http/1.1".to_vec()] } else { vec![b"http/1.1".to_vec()] };
        // rustls resumes by default whenever connections share a config
        // (Resumption::in_memory_sessions): "full" would silently become "resumed".
        // keep-alive connections stand for distinct visitors: full too.
        config.resumption = match self.handshake {
            HandshakeMode::Resumed => Resumption::in_memory_sessions(64),
            HandshakeMode::KeepAlive | HandshakeMode::Full => Resumption::disabled(),
        };
        config.enable_early_data = false;
        TlsConnector::from(Arc::new(config))
    }
}

/// `--pin-cert`: accept exactly this leaf; see the module comment.
#[derive(Debug)]
struct PinnedLeaf {
    leaf: CertificateDer<'static>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for PinnedLeaf {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.leaf.as_ref() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(CertificateError::ApplicationVerificationFailure))
        }
    }

    // rustls passes the end-entity certificate that verify_server_cert accepted,
    // i.e. the pinned one: the signature proves the server holds its private key.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// ALPN outcome of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alpn {
    None,
    Http11,
    H2,
    /// The server chose something we did not offer (rustls refuses that, so
    /// this only guards the match).
    Other,
}

impl Alpn {
    pub fn name(self) -> Option<&'static str> {
        match self {
            Alpn::None => None,
            Alpn::Http11 => Some("http/1.1"),
            Alpn::H2 => Some("h2"),
            Alpn::Other => Some("other"),
        }
    }
}

/// What one handshake negotiated: the key of the result's `negotiated` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    pub alpn: Alpn,
    pub version: Option<ProtocolVersion>,
    pub cipher: Option<CipherSuite>,
    /// None on a TLS 1.2 resumption (no key exchange took place).
    pub group: Option<NamedGroup>,
}

impl Negotiated {
    pub fn version_name(&self) -> Option<String> {
        self.version.map(|v| match v {
            ProtocolVersion::TLSv1_3 => "TLSv1.3".to_string(),
            ProtocolVersion::TLSv1_2 => "TLSv1.2".to_string(),
            other => format!("{other:?}"),
        })
    }

    pub fn cipher_name(&self) -> Option<String> {
        self.cipher.map(|c| format!("{c:?}"))
    }

    pub fn group_name(&self) -> Option<String> {
        self.group.map(|g| format!("{g:?}"))
    }
}

/// One connection's handshake, as the statistics record it.
#[derive(Clone, Copy, Debug)]
pub struct Handshake {
    /// TCP connect, µs.
    pub connect_us: u64,
    /// TLS handshake (ClientHello sent → handshake complete), µs.
    pub handshake_us: u64,
    pub resumed: bool,
    pub negotiated: Negotiated,
}

/// A TLS connection and what its handshake was.
pub type Connected = (TlsStream<Stream>, Handshake);

/// Runs the TLS handshake on a connected socket; `tcp_started` is when the TCP
/// connect began and `tcp_done` when it completed.
pub async fn handshake(
    connector: &TlsConnector,
    name: &ServerName<'static>,
    tcp: Stream,
    tcp_started: Instant,
    tcp_done: Instant,
) -> Result<Connected, (ErrorClass, Option<Detail>)> {
    let stream = connector.connect(name.clone(), tcp).await.map_err(|e| classify(&e))?;
    let done = Instant::now();
    let handshake = handshake_of(stream.get_ref().1, tcp_done - tcp_started, done - tcp_done);
    Ok((stream, handshake))
}

/// What a completed handshake of `conn` was: `tcp` the TCP connect's time, `tls` the
/// handshake's (ClientHello sent → complete). Both event loops record it.
pub fn handshake_of(conn: &ClientConnection, tcp: Duration, tls: Duration) -> Handshake {
    let alpn = match conn.alpn_protocol() {
        None => Alpn::None,
        Some(b"h2") => Alpn::H2,
        Some(b"http/1.1") => Alpn::Http11,
        Some(_) => Alpn::Other,
    };
    let negotiated = Negotiated {
        alpn,
        version: conn.protocol_version(),
        cipher: conn.negotiated_cipher_suite().map(|s| s.suite()),
        group: conn.negotiated_key_exchange_group().map(|g| g.name()),
    };
    Handshake {
        connect_us: tcp.as_micros() as u64,
        handshake_us: tls.as_micros() as u64,
        resumed: conn.handshake_kind() == Some(HandshakeKind::Resumed),
        negotiated,
    }
}

/// The error class (and detail) of a failed handshake. rustls reports through
/// io::Error with its own error inside; plain I/O errors are the peer's doing.
pub fn classify(e: &std::io::Error) -> (ErrorClass, Option<Detail>) {
    use std::io::ErrorKind;
    if let Some(tls) = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        return classify_tls(tls);
    }
    match e.kind() {
        ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::ConnectionAborted => (ErrorClass::Reset, None),
        // The server closed the connection during the handshake (killed, or
        // refused us without an alert).
        ErrorKind::UnexpectedEof => (ErrorClass::TlsHandshake, Some(Detail::Text("closed"))),
        _ => (ErrorClass::TlsHandshake, Some(Detail::Text("io"))),
    }
}

/// The error class (and detail) of a handshake rustls itself refused.
pub fn classify_tls(tls: &rustls::Error) -> (ErrorClass, Option<Detail>) {
    match tls {
        rustls::Error::InvalidCertificate(c) => (ErrorClass::TlsUntrusted, Some(Detail::Text(certificate(c)))),
        rustls::Error::AlertReceived(a) => (ErrorClass::TlsHandshake, Some(Detail::Alert(u8::from(*a)))),
        rustls::Error::NoApplicationProtocol => {
            (ErrorClass::TlsHandshake, Some(Detail::Text("no_application_protocol")))
        }
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            // What a server answering clear text on the TLS port looks like.
            (ErrorClass::TlsHandshake, Some(Detail::Text("invalid_message")))
        }
        rustls::Error::PeerIncompatible(_) => (ErrorClass::TlsHandshake, Some(Detail::Text("peer_incompatible"))),
        rustls::Error::PeerMisbehaved(_) => (ErrorClass::TlsHandshake, Some(Detail::Text("peer_misbehaved"))),
        _ => (ErrorClass::TlsHandshake, Some(Detail::Text("other"))),
    }
}

fn certificate(e: &CertificateError) -> &'static str {
    match e {
        CertificateError::UnknownIssuer => "unknown_issuer",
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => "wrong_host",
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => "expired",
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => "not_yet_valid",
        CertificateError::BadSignature => "bad_signature",
        CertificateError::ApplicationVerificationFailure => "pin_mismatch",
        CertificateError::BadEncoding => "bad_encoding",
        CertificateError::Revoked => "revoked",
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => "invalid_purpose",
        _ => "other",
    }
}

/// The name of a TLS alert, for a detail: e.g. "HandshakeFailure".
pub fn alert_name(code: u8) -> String {
    format!("{:?}", AlertDescription::from(code))
}

//! A TLS test server (tokio-rustls, HTTP/1.1 and HTTP/2 by ALPN) that counts
//! what the engine's tests check from the server's side: full and resumed
//! handshakes, requests, and the most streams in flight at once. Certificates
//! come from the openssl CLI, made once per test process in a private directory
//! (keys mode 0600, as the lab keeps them).
//!
//! Paths it serves (HTTP/1.1 and HTTP/2 alike, 12-byte body "hello world\n"):
//!   /            the body
//!   /slow/MS     the body after MS ms
//!   /bytes/N     an N-byte body instead
//!   /404         the body with status 404
//!   /rst         HTTP/2: RST_STREAM REFUSED_STREAM (HTTP/1.1: 404)
//!   /goaway      HTTP/2: GOAWAY ENHANCE_YOUR_CALM on the whole connection
//! Every response carries `X-Served-By: h1` or `h2` (for --count-header).
//! An HTTP/1.1 request with `Connection: close` is answered and the connection
//! closed (with a TLS close_notify). `goaway_after` makes the HTTP/2 side send a
//! graceful GOAWAY (NO_ERROR) after that many streams on a connection, as nginx
//! does after `keepalive_requests`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub const BODY: &[u8] = b"hello world\n";

/// The test process's certificates (PEM paths).
pub struct Certs {
    pub dir: PathBuf,
    /// The lab's CA and a leaf it signed for localhost and 127.0.0.1.
    pub ca: String,
    pub leaf: String,
    pub leaf_key: String,
    /// Another CA, that signed nothing the server has.
    pub other_ca: String,
    /// Signed by `ca` for other.example only.
    pub wrong_host: String,
    /// Signed by `ca`, for the right names, expired yesterday.
    pub expired: String,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("run openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn private(dir: &Path, name: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o600)).unwrap();
}

static CERTS: OnceLock<Certs> = OnceLock::new();

/// Removes the certificates' directory (and the keys in it) when the test
/// process exits: the harness ends with exit(), which runs atexit handlers.
extern "C" fn remove_certs() {
    if let Some(certs) = CERTS.get() {
        let _ = std::fs::remove_dir_all(&certs.dir);
    }
}

pub fn certs() -> &'static Certs {
    CERTS.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("stackbench-load-tls-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // SAFETY: registers a plain function with no captured state.
        unsafe { libc::atexit(remove_certs) };
        let key = |name: &str| {
            openssl(&dir, &["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", name]);
            private(&dir, name);
        };
        for (ca, cn) in [("ca", "stackbench test CA"), ("other", "another CA")] {
            key(&format!("{ca}.key"));
            let subject = format!("/CN={cn}");
            let (k, out) = (format!("{ca}.key"), format!("{ca}.pem"));
            openssl(&dir, &["req", "-x509", "-new", "-key", &k, "-subj", &subject, "-days", "2", "-out", &out]);
        }
        key("leaf.key");
        openssl(&dir, &["req", "-new", "-key", "leaf.key", "-subj", "/CN=localhost", "-out", "leaf.csr"]);
        let ext = |names: &str| {
            format!("subjectAltName={names}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
        };
        std::fs::write(dir.join("right.ext"), ext("DNS:localhost,IP:127.0.0.1")).unwrap();
        std::fs::write(dir.join("wrong.ext"), ext("DNS:other.example")).unwrap();
        for (out, ext, days) in [("leaf.pem", "right.ext", "2"), ("wrong.pem", "wrong.ext", "2"), ("expired.pem", "right.ext", "-1")] {
            openssl(
                &dir,
                &[
                    "x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", days,
                    "-extfile", ext, "-out", out,
                ],
            );
        }
        let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
        Certs {
            ca: path("ca.pem"),
            leaf: path("leaf.pem"),
            leaf_key: path("leaf.key"),
            other_ca: path("other.pem"),
            wrong_host: path("wrong.pem"),
            expired: path("expired.pem"),
            dir,
        }
    })
}

/// What the server offers and how it behaves.
#[derive(Clone)]
pub struct Options {
    /// ALPN protocols, in the server's order of preference.
    pub alpn: Vec<&'static [u8]>,
    /// The certificate it presents (PEM path; the key is always leaf.key).
    pub cert: String,
    /// HTTP/2: graceful GOAWAY after this many streams on a connection.
    pub goaway_after: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options { alpn: vec![b"h2", b"http/1.1"], cert: certs().leaf.clone(), goaway_after: None }
    }
}

#[derive(Default)]
pub struct Counters {
    pub full: AtomicU64,
    pub resumed: AtomicU64,
    pub failed_handshakes: AtomicU64,
    pub requests: AtomicU64,
    pub h2_connections: AtomicU64,
    /// Streams in flight on one connection, now and at most.
    in_flight: AtomicU64,
    pub max_in_flight: AtomicU64,
}

pub struct TlsServer {
    pub addr: SocketAddr,
    pub counters: Arc<Counters>,
}

/// Always the same certificate and key. Not rustls' with_single_cert, which
/// refuses a key that does not match the certificate: one test needs exactly that.
#[derive(Debug)]
struct Fixed(Arc<rustls::sign::CertifiedKey>);

impl rustls::server::ResolvesServerCert for Fixed {
    fn resolve(&self, _hello: rustls::server::ClientHello<'_>) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }
}

impl TlsServer {
    pub fn start(options: Options) -> TlsServer {
        Self::start_with_key(options, Path::new(&certs().leaf_key))
    }

    /// Presents `options.cert` but signs the handshake with `key`.
    pub fn start_with_key(options: Options, key: &Path) -> TlsServer {
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(&options.cert).unwrap().collect::<Result<_, _>>().unwrap();
        let key = PrivateKeyDer::from_pem_file(key).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let signing = provider.key_provider.load_private_key(key).unwrap();
        let certified = Arc::new(rustls::sign::CertifiedKey::new(chain, signing));
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .unwrap()
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Fixed(certified)));
        config.alpn_protocols = options.alpn.iter().map(|p| p.to_vec()).collect();
        // Stateless tickets, as nginx and OpenSSL issue them.
        config.ticketer = rustls::crypto::ring::Ticketer::new().unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let Ok((tcp, _)) = listener.accept().await else { continue };
                    let (acceptor, c, options) = (acceptor.clone(), c.clone(), options.clone());
                    tokio::spawn(async move {
                        let _ = tcp.set_nodelay(true);
                        let Ok(tls) = acceptor.accept(tcp).await else {
                            c.failed_handshakes.fetch_add(1, Ordering::SeqCst);
                            return;
                        };
                        let (_, conn) = tls.get_ref();
                        match conn.handshake_kind() {
                            Some(rustls::HandshakeKind::Resumed) => c.resumed.fetch_add(1, Ordering::SeqCst),
                            _ => c.full.fetch_add(1, Ordering::SeqCst),
                        };
                        if conn.alpn_protocol() == Some(b"h2") {
                            c.h2_connections.fetch_add(1, Ordering::SeqCst);
                            serve_h2(tls, &c, &options).await;
                        } else {
                            serve_h1(tls, &c).await;
                        }
                    });
                }
            });
        });
        TlsServer { addr, counters }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.addr.port())
    }

    pub fn get(&self, counter: fn(&Counters) -> &AtomicU64) -> u64 {
        counter(&self.counters).load(Ordering::SeqCst)
    }
}

fn slow_ms(path: &str) -> Option<u64> {
    path.strip_prefix("/slow/").and_then(|ms| ms.parse().ok())
}

async fn serve_h1(mut tls: tokio_rustls::server::TlsStream<tokio::net::TcpStream>, c: &Counters) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match tls.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        buf.drain(..end + 4);
        c.requests.fetch_add(1, Ordering::SeqCst);
        let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
        if let Some(ms) = slow_ms(&path) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let close = head.contains("\r\nconnection: close");
        let status = if ["/rst", "/goaway", "/404"].contains(&path.as_str()) { "404 Not Found" } else { "200 OK" };
        let body = match path.strip_prefix("/bytes/").and_then(|n| n.parse::<usize>().ok()) {
            Some(n) => vec![b'x'; n],
            None => BODY.to_vec(),
        };
        let close_header = if close { "Connection: close\r\n" } else { "" };
        let mut response =
            format!("HTTP/1.1 {status}\r\nX-Served-By: h1\r\nContent-Length: {}\r\n{close_header}\r\n", body.len())
                .into_bytes();
        response.extend_from_slice(&body);
        if tls.write_all(&response).await.is_err() || tls.flush().await.is_err() {
            return;
        }
        if close {
            let _ = tls.shutdown().await;
            return;
        }
    }
}

async fn serve_h2(tls: tokio_rustls::server::TlsStream<tokio::net::TcpStream>, c: &Arc<Counters>, options: &Options) {
    let Ok(mut conn) = h2::server::handshake(tls).await else { return };
    let mut streams = 0u64;
    while let Some(next) = conn.accept().await {
        let Ok((request, mut respond)) = next else { return };
        streams += 1;
        c.requests.fetch_add(1, Ordering::SeqCst);
        let path = request.uri().path().to_string();
        if path == "/goaway" {
            conn.abrupt_shutdown(h2::Reason::ENHANCE_YOUR_CALM);
            continue;
        }
        if options.goaway_after == Some(streams) {
            conn.graceful_shutdown();
        }
        let now = c.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        c.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let c = c.clone();
        tokio::spawn(async move {
            if path == "/rst" {
                respond.send_reset(h2::Reason::REFUSED_STREAM);
            } else {
                if let Some(ms) = slow_ms(&path) {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                let status = if path == "/404" { 404 } else { 200 };
                let response = http::Response::builder().status(status).header("x-served-by", "h2").body(()).unwrap();
                let body = match path.strip_prefix("/bytes/").and_then(|n| n.parse::<usize>().ok()) {
                    Some(n) => bytes::Bytes::from(vec![b'x'; n]),
                    None => bytes::Bytes::from_static(BODY),
                };
                if let Ok(mut send) = respond.send_response(response, false) {
                    // h2 buffers what the peer's window does not take yet.
                    let _ = send.send_data(body, true);
                }
            }
            c.in_flight.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// A TCP server that reads the ClientHello and closes: a server killed
/// mid-handshake, as the engine sees it.
pub fn closes_mid_handshake() -> SocketAddr {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut hello = [0u8; 4096];
            let _ = stream.read(&mut hello);
            drop(stream);
        }
    });
    addr
}

/// A clear-text HTTP server that answers whatever comes with a 400 and closes.
pub fn answers_clear_text() -> SocketAddr {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut hello = [0u8; 4096];
            let _ = stream.read(&mut hello);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    addr
}

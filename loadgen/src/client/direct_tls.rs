//! TLS records on the direct loop: rustls's own client connection, with the loop
//! doing its I/O — no tokio-rustls, no task. The loop reads the socket into the
//! thread's 64 KB buffer and hands the bytes here (rustls would read them 4 KB at
//! a time, one system call each: a 150 KB body took ~37 reads on the task loop);
//! records are decrypted, and their plaintext goes to the response reader as
//! rustls's own chunks, not copied again. What rustls has to send (the handshake's
//! flights, the request's records) goes out in one vectored write.
//!
//! What a read comes to is classed here for both direct loops (`Session::read`): a
//! failed handshake by tls.rs, as on the task loop; a failure after it as rules.rs
//! says.

use std::io::{self, BufRead, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Instant;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};

use super::arrival;
use super::rules::{Cause, Failure};
use crate::tls;

/// One connection's TLS session.
pub struct Session {
    conn: ClientConnection,
}

/// What the peer's records said, besides their plaintext.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Taken {
    /// Plaintext bytes handed out.
    pub plaintext: usize,
    /// The peer sent close_notify: it will send nothing more.
    pub closed: bool,
}

/// What a read of the socket brought (`Session::read`).
pub struct Took {
    /// Bytes read, and when they landed (arrival.rs).
    pub n: usize,
    pub landed: Instant,
    pub taken: Taken,
    /// This read ended the handshake (the client is done with the server's last flight).
    pub handshaken: bool,
}

/// Why a read of the socket ended the connection's use (`Session::read`).
pub enum Ending {
    /// The handshake failed, classed by tls.rs: the request that opened the connection
    /// fails with it.
    Refused(Failure),
    /// The server ended the connection after the handshake (its TCP end, without
    /// close_notify): the response reader says what the end means.
    Eof,
    /// Reading failed after the handshake (rules.rs classes it).
    Failed(Cause),
}

impl Session {
    /// A new session; its ClientHello is queued (`send` writes it). Err: the handshake
    /// failed at once, classed by tls.rs.
    pub fn new(config: &Arc<ClientConfig>, name: &ServerName<'static>) -> Result<Session, Failure> {
        let mut conn = ClientConnection::new(config.clone(), name.clone()).map_err(|e| tls::classify_tls(&e))?;
        // rustls holds at most 64 KB of records to send by default and takes only part
        // of a write past it: what a turn of the loop queues (a first flight of many
        // HTTP/2 streams, large headers) must all go, at the socket's pace.
        conn.set_buffer_limit(None);
        Ok(Session { conn })
    }

    pub fn handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    pub fn connection(&self) -> &ClientConnection {
        &self.conn
    }

    /// Queues application bytes (the request) as records; `send` writes them.
    pub fn queue(&mut self, bytes: &[u8]) {
        // Into rustls's own buffer, unbounded here (`new`): never short, never fails
        // before the connection is closed (and a closed one is never written to).
        let _ = self.conn.writer().write_all(bytes);
    }

    /// Writes what rustls has to send. Ok(true): all of it is out; Ok(false): the
    /// socket is full, the rest waits for it to drain (EPOLLOUT).
    pub fn send(&mut self, sock: &mut TcpStream) -> io::Result<bool> {
        while self.conn.wants_write() {
            match self.conn.write_tls(sock) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Reads what `sock` holds into `buf` and takes its records, the plaintext to `out`
    /// (none before the handshake's end: no early data is offered). Ok(None): nothing
    /// there, an edge will say when. While handshaking the caller answers the server's
    /// flight (`send`).
    pub fn read(&mut self, sock: &mut TcpStream, buf: &mut [u8], out: impl FnMut(&[u8])) -> Result<Option<Took>, Ending> {
        let handshaking = self.handshaking();
        let (n, landed) = match read_all(sock, buf) {
            Ok(Some(read)) => read,
            Ok(None) => return Ok(None),
            // The server closed or reset during the handshake.
            Err(e) if handshaking => return Err(Ending::Refused(tls::classify(&e))),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(Ending::Eof),
            Err(e) => return Err(Ending::Failed(Cause::Read(e.kind()))),
        };
        let taken = match self.take(&buf[..n], out) {
            Ok(taken) => taken,
            Err(e) if handshaking => {
                // The alert rustls queued for the server, if the socket takes it.
                let _ = self.send(sock);
                return Err(Ending::Refused(tls::classify_tls(&e)));
            }
            // The stream is unreadable, as a failed read on the task loop.
            Err(_) => return Err(Ending::Failed(Cause::BadRecord)),
        };
        if self.handshaking() && taken.closed {
            return Err(Ending::Refused(tls::classify(&io::ErrorKind::UnexpectedEof.into())));
        }
        Ok(Some(Took { n, landed, taken, handshaken: handshaking && !self.handshaking() }))
    }

    /// Takes `bytes` read from the socket: every complete record is processed, and
    /// the plaintext goes to `out` piece by piece, in order. A record cut at the
    /// end of `bytes` waits in rustls for the rest.
    pub fn take(&mut self, mut bytes: &[u8], mut out: impl FnMut(&[u8])) -> Result<Taken, rustls::Error> {
        let mut taken = Taken::default();
        loop {
            // rustls takes at most one record's worth (≤ 16 KB) a call. From a slice it
            // fails only when its plaintext buffer is full (emptied below after every
            // call), and takes nothing once the peer's close_notify is in: what
            // follows a close is not the peer's to say, and is dropped.
            if !bytes.is_empty() && !matches!(self.conn.read_tls(&mut bytes), Ok(1..)) {
                bytes = &[];
            }
            let state = self.conn.process_new_packets()?;
            taken.closed |= state.peer_has_closed();
            let mut reader = self.conn.reader();
            loop {
                let chunk = match reader.fill_buf() {
                    Ok(chunk) if !chunk.is_empty() => chunk,
                    _ => break,
                };
                let n = chunk.len();
                out(chunk);
                taken.plaintext += n;
                reader.consume(n);
            }
            if bytes.is_empty() {
                return Ok(taken);
            }
        }
    }
}

/// One read of what the socket holds, up to `buf`'s size: Some(bytes read, when they
/// landed), None (nothing there: an edge will say when), or the end of stream as
/// UnexpectedEof.
fn read_all(sock: &mut TcpStream, buf: &mut [u8]) -> io::Result<Option<(usize, Instant)>> {
    loop {
        return match arrival::read(sock.as_raw_fd(), buf) {
            Ok((0, _)) => Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(read) => Ok(Some(read)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => Err(e),
        };
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::path::Path;
    use std::process::Command;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use rustls::{ClientConfig, RootCertStore, ServerConfig, ServerConnection};

    use super::{Session, Taken};

    /// A server session, and a client session trusting its certificate: a fresh
    /// self-signed one from openssl (as tests/common/tls.rs makes them), so no key
    /// is kept in the tree.
    fn pair() -> (ServerConnection, Session) {
        // One directory a call: the tests run side by side.
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        let call = CALLS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("stackbench-direct-tls-{}-{call}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (key, cert) = (dir.join("key.pem"), dir.join("cert.pem"));
        let made = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
            .args(["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"])
            .args(["-addext", "basicConstraints=critical,CA:FALSE", "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .output()
            .expect("openssl");
        assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
        let certs = vec![CertificateDer::from_pem_file(Path::new(&cert)).unwrap()];
        let key = PrivateKeyDer::from_pem_file(Path::new(&key)).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        roots.add(certs[0].clone()).unwrap();
        let client = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let server = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let server = ServerConnection::new(Arc::new(server)).unwrap();
        let client = Session::new(&Arc::new(client), &ServerName::try_from("localhost").unwrap()).unwrap();
        (server, client)
    }

    /// What the client has to send, as the server would read it.
    fn to_server(client: &mut Session, server: &mut ServerConnection) {
        let mut wire = Vec::new();
        while client.conn.wants_write() {
            client.conn.write_tls(&mut wire).unwrap();
        }
        let mut bytes = &wire[..];
        while !bytes.is_empty() {
            server.read_tls(&mut bytes).unwrap();
            server.process_new_packets().unwrap();
        }
    }

    fn from_server(server: &mut ServerConnection) -> Vec<u8> {
        let mut wire = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut wire).unwrap();
        }
        wire
    }

    fn handshake(server: &mut ServerConnection, client: &mut Session) {
        while client.handshaking() {
            to_server(client, server);
            let wire = from_server(server);
            let taken = client.take(&wire, |_| panic!("no plaintext in a handshake")).unwrap();
            assert_eq!(taken, Taken::default());
        }
        // The client's Finished.
        to_server(client, server);
        assert!(!server.is_handshaking());
    }

    #[test]
    fn records_cut_anywhere_give_the_plaintext_in_order_and_the_close() {
        let (mut server, mut client) = pair();
        handshake(&mut server, &mut client);
        // A request, and a response body of many records, the close behind it.
        client.queue(b"GET / HTTP/1.1\r\n\r\n");
        to_server(&mut client, &mut server);
        let mut request = vec![0; 64];
        let n = std::io::Read::read(&mut server.reader(), &mut request).unwrap();
        assert_eq!(&request[..n], b"GET / HTTP/1.1\r\n\r\n");
        let body: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut wire = Vec::new();
        for piece in body.chunks(10_000) {
            server.writer().write_all(piece).unwrap();
            wire.extend(from_server(&mut server));
        }
        server.send_close_notify();
        wire.extend(from_server(&mut server));
        // Cut at every size from 1 byte to more than a record: reads of a socket.
        let mut got = Vec::new();
        let mut closed = false;
        let mut at = 0;
        for size in (1..).step_by(997) {
            if at == wire.len() {
                break;
            }
            let end = (at + size).min(wire.len());
            let taken = client.take(&wire[at..end], |plain| got.extend_from_slice(plain)).unwrap();
            assert!(!closed, "nothing after the close");
            closed = taken.closed;
            at = end;
        }
        assert_eq!(got, body);
        assert!(closed, "the close_notify is seen");
    }

    #[test]
    fn a_record_cut_gives_nothing_until_its_rest_comes() {
        let (mut server, mut client) = pair();
        handshake(&mut server, &mut client);
        server.writer().write_all(b"HTTP/1.1 200 OK\r\n").unwrap();
        let wire = from_server(&mut server);
        let taken = client.take(&wire[..wire.len() - 1], |_| panic!("a cut record gives nothing")).unwrap();
        assert_eq!(taken.plaintext, 0);
        let mut got = Vec::new();
        client.take(&wire[wire.len() - 1..], |plain| got.extend_from_slice(plain)).unwrap();
        assert_eq!(got, b"HTTP/1.1 200 OK\r\n");
    }
}

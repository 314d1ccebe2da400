//! Hostile or broken HTTP servers, one behaviour per server, for the engine's
//! robustness tests (tests/hostile.rs). Like `TestServer`, one thread per
//! connection: obviously correct beats fast in a test oracle. Every endless
//! writer stops when the engine closes the connection or the server is dropped.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use super::{read_head, reset};

#[derive(Clone, Copy, Debug)]
pub enum Hostile {
    /// A header value that never ends.
    EndlessHeader,
    /// 1,000 short header lines.
    ManyHeaders,
    /// `Content-Length: 10` and 20 bytes, in one write.
    LongerBody,
    /// `Content-Length: 10` and 10 bytes, then 10 more bytes 20 ms later.
    LongerBodyLate,
    /// `Content-Length: 100`, 50 bytes, then the connection is closed.
    ShorterBodyThenClose,
    /// `Content-Length: 100`, 50 bytes, then nothing (the connection stays open).
    ShorterBodyThenSilence,
    /// A chunked body whose chunks never end.
    EndlessChunked,
    /// A chunk size of 17 hex digits (2^68 bytes).
    HugeChunkSize,
    /// A chunk extension that never ends.
    EndlessChunkExtension,
    /// A last chunk followed by trailer lines that never end.
    EndlessTrailers,
    /// `100 Continue` interim responses, forever.
    EndlessInterim,
    /// A valid response, one byte a second.
    Trickle,
    /// Accepts and reads, never answers.
    Silent,
    /// Resets every connection as soon as it is accepted.
    ResetEveryConnection,
    /// Reads each request, then closes the connection without a word.
    CloseUnanswered,
}

pub struct HostileServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl HostileServer {
    pub fn start(behaviour: Hostile) -> HostileServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        stream.set_nonblocking(false).ok();
                        let s = s.clone();
                        thread::spawn(move || serve(stream, behaviour, &s));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        HostileServer { addr, stop }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

const OK_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\n";
const CHUNKED_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

fn serve(mut stream: TcpStream, behaviour: Hostile, stop: &AtomicBool) {
    if let Hostile::ResetEveryConnection = behaviour {
        return reset(&stream);
    }
    stream.set_read_timeout(Some(Duration::from_millis(50))).ok();
    // Endless writers must notice a closed connection or a stopped server.
    stream.set_write_timeout(Some(Duration::from_millis(100))).ok();
    stream.set_nodelay(true).ok();
    let mut buf = Vec::new();
    while read_head(&mut stream, &mut buf, stop).is_some() {
        let keep_going = match behaviour {
            Hostile::EndlessHeader => endless(&mut stream, stop, &[OK_HEAD, b"X-Endless: "].concat(), &[b'a'; 16 * 1024]),
            Hostile::ManyHeaders => {
                let mut r = OK_HEAD.to_vec();
                for i in 0..1000 {
                    r.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
                }
                r.extend_from_slice(b"Content-Length: 0\r\n\r\n");
                stream.write_all(&r).is_ok()
            }
            Hostile::LongerBody => stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234567890123456789").is_ok(),
            Hostile::LongerBodyLate => {
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789");
                thread::sleep(Duration::from_millis(20));
                stream.write_all(b"0123456789").is_ok()
            }
            Hostile::ShorterBodyThenClose => {
                let _ = stream.write_all(&[b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".as_slice(), &[b'x'; 50]].concat());
                false
            }
            Hostile::ShorterBodyThenSilence => {
                let _ = stream.write_all(&[b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".as_slice(), &[b'x'; 50]].concat());
                silent(&mut stream, stop)
            }
            Hostile::EndlessChunked => {
                let chunk = [b"1000\r\n".as_slice(), &[b'c'; 0x1000], b"\r\n"].concat();
                endless(&mut stream, stop, CHUNKED_HEAD, &chunk)
            }
            Hostile::HugeChunkSize => {
                let _ = stream.write_all(&[CHUNKED_HEAD, b"fffffffffffffffff\r\nabc"].concat());
                silent(&mut stream, stop)
            }
            Hostile::EndlessChunkExtension => endless(&mut stream, stop, &[CHUNKED_HEAD, b"5;ext="].concat(), &[b'e'; 1024]),
            Hostile::EndlessTrailers => endless(&mut stream, stop, &[CHUNKED_HEAD, b"0\r\n"].concat(), b"X-Trailer: more\r\n"),
            Hostile::EndlessInterim => endless(&mut stream, stop, b"", b"HTTP/1.1 100 Continue\r\n\r\n"),
            Hostile::Trickle => {
                for &b in b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" {
                    if stop.load(Ordering::Relaxed) || stream.write_all(&[b]).is_err() {
                        return;
                    }
                    thread::sleep(Duration::from_secs(1));
                }
                true
            }
            Hostile::Silent => silent(&mut stream, stop),
            // The request was read, so closing sends a FIN, not a reset.
            Hostile::CloseUnanswered => false,
            Hostile::ResetEveryConnection => unreachable!("handled above"),
        };
        if !keep_going {
            break;
        }
    }
}

/// Writes `first`, then `piece` again and again until the connection or the
/// server goes away. Returns false: the connection is done.
fn endless(stream: &mut TcpStream, stop: &AtomicBool, first: &[u8], piece: &[u8]) -> bool {
    let mut next = first;
    while write_whole(stream, stop, next) {
        next = piece;
    }
    false
}

/// Writes all of `bytes` (a write timeout only means the reader is slow: retry,
/// so a piece is never cut in two); false when the peer or the server went away.
fn write_whole(stream: &mut TcpStream, stop: &AtomicBool, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        match stream.write(bytes) {
            Ok(0) => return false,
            Ok(n) => bytes = &bytes[n..],
            Err(e) if is_timeout(&e) => {}
            Err(_) => return false,
        }
    }
    true
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
}

/// Holds the connection without a word until the peer closes it or the server
/// stops (the stream needs a read timeout). Returns false: the connection is done.
pub fn silent(stream: &mut TcpStream, stop: &AtomicBool) -> bool {
    let mut b = [0u8; 1024];
    while !stop.load(Ordering::Relaxed) {
        match stream.read(&mut b) {
            Ok(0) => return false,
            Ok(_) => {}
            Err(e) if is_timeout(&e) => {}
            Err(_) => return false,
        }
    }
    false
}

//! A tiny FastCGI responder for the engine's tests (unix socket or TCP), one
//! thread per connection, written from the spec independently of the engine's
//! own record code so the two check each other.
//!
//! The response is chosen by the basename of SCRIPT_FILENAME:
//!   hello.php       "Hello" (CGI head split across two STDOUT records, padded)
//!   notfound.php    `Status: 404 Not Found` + a STDERR record, like PHP-FPM
//!   big.php         100,000-byte body in 4,000-byte records
//!   xcache.php      `X-Cache: HIT`
//!   overloaded.php  END_REQUEST with protocolStatus FCGI_OVERLOADED, no STDOUT
//!   badversion.php  a record with version 9
//! It closes the connection after END_REQUEST unless FCGI_KEEP_CONN was set.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

pub struct FcgiServer {
    /// `unix:/path` or `127.0.0.1:PORT`, as --fastcgi takes it.
    pub address: String,
    pub accepts: Arc<AtomicU64>,
    pub requests: Arc<AtomicU64>,
    /// Parameters of the last request, and whether it asked to keep the connection.
    pub last: Arc<Mutex<(HashMap<String, String>, bool)>>,
    stop: Arc<AtomicBool>,
    socket_path: Option<PathBuf>,
}

trait Conn: Read + Write + Send + 'static {}
impl<T: Read + Write + Send + 'static> Conn for T {}

impl FcgiServer {
    pub fn tcp() -> FcgiServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let address = listener.local_addr().unwrap().to_string();
        Self::run(address, None, move || listener.accept().ok().map(|(s, _)| {
            s.set_nonblocking(false).unwrap();
            s.set_nodelay(true).unwrap();
            Box::new(s) as Box<dyn Conn>
        }))
    }

    pub fn unix(dir: &Path) -> FcgiServer {
        let path = dir.join(format!("fcgi-{}-{}.sock", std::process::id(), next_id()));
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        let address = format!("unix:{}", path.display());
        Self::run(address, Some(path), move || listener.accept().ok().map(|(s, _)| {
            s.set_nonblocking(false).unwrap();
            Box::new(s) as Box<dyn Conn>
        }))
    }

    fn run(
        address: String,
        socket_path: Option<PathBuf>,
        mut accept: impl FnMut() -> Option<Box<dyn Conn>> + Send + 'static,
    ) -> FcgiServer {
        let accepts = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(AtomicU64::new(0));
        let last = Arc::new(Mutex::new((HashMap::new(), false)));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, r, l, s) = (accepts.clone(), requests.clone(), last.clone(), stop.clone());
        thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match accept() {
                    Some(conn) => {
                        a.fetch_add(1, Ordering::SeqCst);
                        let (r, l) = (r.clone(), l.clone());
                        thread::spawn(move || serve(conn, &r, &l));
                    }
                    None => thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        FcgiServer { address, accepts, requests, last, stop, socket_path }
    }

    pub fn accepts(&self) -> u64 {
        self.accepts.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    pub fn param(&self, name: &str) -> Option<String> {
        self.last.lock().unwrap().0.get(name).cloned()
    }

    pub fn last_keep_conn(&self) -> bool {
        self.last.lock().unwrap().1
    }
}

impl Drop for FcgiServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(p) = &self.socket_path {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn next_id() -> u64 {
    static ID: AtomicU64 = AtomicU64::new(0);
    ID.fetch_add(1, Ordering::Relaxed)
}

/// Reads one record: (type, content). None at EOF or on a read error.
fn read_record(conn: &mut dyn Conn) -> Option<(u8, Vec<u8>)> {
    let mut h = [0u8; 8];
    conn.read_exact(&mut h).ok()?;
    assert_eq!(h[0], 1, "FastCGI version");
    assert_eq!(u16::from_be_bytes([h[2], h[3]]), 1, "request id");
    let len = usize::from(u16::from_be_bytes([h[4], h[5]]));
    let mut content = vec![0u8; len + usize::from(h[6])];
    conn.read_exact(&mut content).ok()?;
    content.truncate(len);
    Some((h[1], content))
}

fn record(kind: u8, content: &[u8], padding: usize) -> Vec<u8> {
    let len = (content.len() as u16).to_be_bytes();
    let mut out = vec![1, kind, 0, 1, len[0], len[1], padding as u8, 0];
    out.extend_from_slice(content);
    out.extend(std::iter::repeat_n(0u8, padding));
    out
}

fn params(data: &[u8]) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut i = 0;
    let len = |i: &mut usize| -> usize {
        if data[*i] < 128 {
            *i += 1;
            usize::from(data[*i - 1])
        } else {
            let v = u32::from_be_bytes([data[*i] & 0x7f, data[*i + 1], data[*i + 2], data[*i + 3]]);
            *i += 4;
            v as usize
        }
    };
    while i < data.len() {
        let (n, v) = (len(&mut i), len(&mut i));
        let name = String::from_utf8_lossy(&data[i..i + n]).into_owned();
        let value = String::from_utf8_lossy(&data[i + n..i + n + v]).into_owned();
        i += n + v;
        out.insert(name, value);
    }
    out
}

const STDOUT: u8 = 6;
const STDERR: u8 = 7;
const END_REQUEST: u8 = 3;

fn end_request(protocol_status: u8) -> Vec<u8> {
    record(END_REQUEST, &[0, 0, 0, 0, protocol_status, 0, 0, 0], 0)
}

fn serve(mut conn: Box<dyn Conn>, requests: &AtomicU64, last: &Mutex<(HashMap<String, String>, bool)>) {
    loop {
        // BEGIN_REQUEST
        let Some((kind, begin)) = read_record(&mut *conn) else { return };
        assert_eq!(kind, 1, "BEGIN_REQUEST first");
        assert_eq!(u16::from_be_bytes([begin[0], begin[1]]), 1, "responder role");
        let keep_conn = begin[2] & 1 == 1;
        let mut raw = Vec::new();
        loop {
            let Some((kind, content)) = read_record(&mut *conn) else { return };
            assert_eq!(kind, 4, "PARAMS");
            if content.is_empty() {
                break;
            }
            raw.extend(content);
        }
        let Some((kind, stdin)) = read_record(&mut *conn) else { return };
        assert_eq!((kind, stdin.len()), (5, 0), "one empty STDIN record");
        let p = params(&raw);
        requests.fetch_add(1, Ordering::SeqCst);
        let script = p.get("SCRIPT_FILENAME").cloned().unwrap_or_default();
        *last.lock().unwrap() = (p, keep_conn);

        let mut out = Vec::new();
        match script.rsplit('/').next().unwrap_or("") {
            "hello.php" => {
                out.extend(record(STDOUT, b"X-Powered-By: test\r\nContent-ty", 2));
                out.extend(record(STDOUT, b"pe: text/html\r\n\r\nHello", 0));
                out.extend(record(STDOUT, b"", 0));
                out.extend(end_request(0));
            }
            "notfound.php" => {
                out.extend(record(STDERR, b"Primary script unknown", 2));
                out.extend(record(STDOUT, b"Status: 404 Not Found\r\nContent-type: text/html\r\n\r\nFile not found.\n", 0));
                out.extend(record(STDOUT, b"", 0));
                out.extend(end_request(0));
            }
            "big.php" => {
                out.extend(record(STDOUT, b"Content-type: text/plain\r\n\r\n", 6));
                for _ in 0..25 {
                    out.extend(record(STDOUT, &[b'x'; 4000], 0));
                }
                out.extend(record(STDOUT, b"", 0));
                out.extend(end_request(0));
            }
            "xcache.php" => {
                out.extend(record(STDOUT, b"X-Cache: HIT\r\n\r\nok", 0));
                out.extend(record(STDOUT, b"", 0));
                out.extend(end_request(0));
            }
            "overloaded.php" => out.extend(end_request(2)),
            "badversion.php" => {
                let mut r = record(STDOUT, b"\r\n", 0);
                r[0] = 9;
                out.extend(r);
            }
            _ => {
                out.extend(record(STDOUT, b"Status: 500\r\n\r\n", 0));
                out.extend(end_request(0));
            }
        }
        // Written in small pieces so records arrive split anywhere.
        if !out.chunks(7).all(|piece| conn.write_all(piece).is_ok()) || !keep_conn {
            return;
        }
    }
}

//! A small HTTP/1.1 server with sessions, for the engine's visits (`--journey`): it
//! answers as a PHP site with `session_start()` would, and keeps a log of every request
//! (method, path, the Cookie header, the body) and of what each session was told, for
//! the tests to check what the visitors sent. One thread per connection (std::net).
//!
//!   GET  /count         the session's count of visits to this page: 1 for a new visitor
//!                       (with `Set-Cookie: SID=<n>; path=/; HttpOnly`), then 2, 3, …
//!   GET  /login         the login form; sets `testcookie=1` (as WordPress's wp-login.php)
//!   POST /login         `log=alice&pwd=p%40ss` (or bob) with the test cookie: 302 to /home
//!                       and `Set-Cookie: auth=alice; Path=/; HttpOnly`; else 200, the form
//!   GET  /home          "hello alice" with the auth cookie, "hello guest" without
//!   GET  /secure        sets `s=1; Secure` (never to be sent back over http)
//!   GET  /forget        deletes SID (`Max-Age=0`)
//!   GET  /dir/set       sets `d=1` with the default path (/dir)
//!   GET  /fail          a malformed status line, then close
//!   GET  anything else  200, a 2-byte body

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Logged {
    pub method: String,
    pub path: String,
    /// The Cookie header as sent ("" without).
    pub cookie: String,
    pub body: String,
    /// /count: the session it counted for and the count it answered.
    pub counted: Option<(u64, u64)>,
}

#[derive(Default)]
struct Shared {
    log: Mutex<Vec<Logged>>,
    counts: Mutex<HashMap<u64, u64>>,
    sessions: AtomicU64,
    stop: AtomicBool,
}

pub struct SessionServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl SessionServer {
    pub fn start() -> SessionServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        thread::spawn(move || {
            while !s.stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let s = s.clone();
                        thread::spawn(move || serve(stream, &s));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        SessionServer { addr, shared }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn log(&self) -> Vec<Logged> {
        self.shared.log.lock().unwrap().clone()
    }

    /// Each session's answers from /count, in the order it got them, by session.
    pub fn counts_by_session(&self) -> Vec<Vec<u64>> {
        let mut by: HashMap<u64, Vec<u64>> = HashMap::new();
        for (sid, n) in self.log().iter().filter_map(|l| l.counted) {
            by.entry(sid).or_default().push(n);
        }
        let mut sessions: Vec<(u64, Vec<u64>)> = by.into_iter().collect();
        sessions.sort();
        sessions.into_iter().map(|(_, counts)| counts).collect()
    }
}

impl Drop for SessionServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

/// The account a login form names: `log=alice` or `log=bob`, with `pwd=p%40ss`.
fn account(body: &str) -> Option<&str> {
    let user = body.strip_suffix("&pwd=p%40ss")?.strip_prefix("log=")?;
    ["alice", "bob"].contains(&user).then_some(user)
}

/// `name=value` of a Cookie header, if sent.
fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').map(str::trim).find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

fn serve(mut stream: TcpStream, shared: &Shared) {
    stream.set_read_timeout(Some(Duration::from_millis(50))).ok();
    stream.set_nodelay(true).ok();
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            if shared.stop.load(Ordering::Relaxed) {
                return;
            }
            match stream.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => return,
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        let header = |name: &str| {
            head.lines().skip(1).find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
        };
        let length: usize = header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        while buf.len() < end + 4 + length {
            match stream.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => return,
            }
        }
        let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + length]).into_owned();
        buf.drain(..end + 4 + length);
        let mut words = head.split_whitespace();
        let (method, path) = (words.next().unwrap_or("").to_string(), words.next().unwrap_or("/").to_string());
        let sent = header("cookie").unwrap_or_default();
        let mut entry = Logged { method: method.clone(), path: path.clone(), cookie: sent.clone(), body: body.clone(), counted: None };
        let (status, set, extra, text) = match (method.as_str(), path.as_str()) {
            ("GET", "/count") => {
                let known = cookie(&sent, "SID").and_then(|v| v.parse::<u64>().ok());
                let mut counts = shared.counts.lock().unwrap();
                let (sid, set) = match known.filter(|sid| counts.contains_key(sid)) {
                    Some(sid) => (sid, String::new()),
                    None => {
                        let sid = shared.sessions.fetch_add(1, Ordering::SeqCst) + 1;
                        (sid, format!("SID={sid}; path=/; HttpOnly"))
                    }
                };
                let n = counts.entry(sid).or_insert(0);
                *n += 1;
                entry.counted = Some((sid, *n));
                ("200 OK", set, String::new(), n.to_string())
            }
            ("GET", "/login") => ("200 OK", "testcookie=1; path=/".into(), String::new(), "<form>".into()),
            ("POST", "/login") if account(&body).is_some() && cookie(&sent, "testcookie").is_some() => {
                let who = account(&body).unwrap_or_default();
                ("302 Found", format!("auth={who}; Path=/; HttpOnly"), "Location: /home\r\n".into(), String::new())
            }
            ("POST", "/login") => ("200 OK", String::new(), String::new(), "<form>".into()),
            ("GET", "/home") => {
                let who = cookie(&sent, "auth").unwrap_or("guest");
                ("200 OK", String::new(), String::new(), format!("hello {who}"))
            }
            ("GET", "/secure") => ("200 OK", "s=1; Secure".into(), String::new(), "ok".into()),
            ("GET", "/forget") => ("200 OK", "SID=; Max-Age=0; path=/".into(), String::new(), "ok".into()),
            ("GET", "/dir/set") => ("200 OK", "d=1".into(), String::new(), "ok".into()),
            ("GET", "/fail") => {
                shared.log.lock().unwrap().push(entry);
                let _ = stream.write_all(b"HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n");
                return;
            }
            _ => ("200 OK", String::new(), String::new(), "ok".into()),
        };
        shared.log.lock().unwrap().push(entry);
        let set = if set.is_empty() { set } else { format!("Set-Cookie: {set}\r\n") };
        let response = format!("HTTP/1.1 {status}\r\n{set}{extra}Content-Length: {}\r\n\r\n{text}", text.len());
        if stream.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

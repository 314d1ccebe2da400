//! A tiny, deliberately misbehaving HTTP/1.1 server for the engine's tests, plus a
//! bounded way to run the engine binary. One thread per connection (std::net):
//! simple and obviously correct, which is what a test oracle must be.
//!
//! The response is chosen by the request path:
//!   /cl/N            N-byte body with Content-Length (keep-alive; no body for HEAD)
//!   /chunked/N/C     N-byte body in C-byte chunks, with an extension and a trailer
//!   /close/N         Content-Length body, `Connection: close`, then close
//!   /untilclose/N    no length: body, then close
//!   /idleclose/N     Content-Length body, keep-alive announced, but the server closes
//!   /slow/MS/N       waits MS ms, then a Content-Length body
//!   /freeze/P/F      answers at once, except during the first F ms of every P ms
//!                    (since the server started), when it holds responses until then
//!   /stall           reads the request, never answers
//!   /badstatus       "HTTP/1.1 abc OK"
//!   /shortbody       Content-Length 100, 50 bytes, close
//!   /badchunk        chunk size "zz"
//!   /hugeheaders     1,100 header lines (over the 100-line bound)
//!   /rstmid          half a body, then a TCP reset
//!   /eofmid          chunked body cut inside a chunk, then close
//!   /status/CODE     empty body with that status
//!   /xcache/N        N-byte body with `X-Cache: MISS` on every 4th request the
//!                    server sees (counted from 0), `X-Cache: HIT` otherwise
//!   /distinct        `X-Value: v<request number>`: a new value every time
//!
//! `TestServer::serving_only(k)` accepts only its first k connections; the others
//! wait in the accept queue, never served (Apache prefork with k busy children).
//! `hostile.rs` holds one server per hostile behaviour (endless heads and bodies,
//! wrong lengths, trickling, resets), `mass.rs` one that holds 10,000 connections.

#![allow(dead_code)]

pub mod fcgi;
pub mod hostile;
pub mod loops;
pub mod mass;
pub mod schema;
pub mod session;
pub mod tls;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

pub struct TestServer {
    pub addr: SocketAddr,
    pub accepts: Arc<AtomicU64>,
    pub requests: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl TestServer {
    pub fn start() -> TestServer {
        Self::start_with(None)
    }

    /// Accepts (and serves) only the first `k` connections.
    pub fn serving_only(k: u64) -> TestServer {
        Self::start_with(Some(k))
    }

    fn start_with(limit: Option<u64>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let accepts = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, r, s) = (accepts.clone(), requests.clone(), stop.clone());
        let started = Instant::now();
        thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if limit.is_some_and(|k| a.load(Ordering::SeqCst) >= k) {
                    thread::sleep(Duration::from_millis(1));
                    continue;
                }
                match listener.accept() {
                    Ok((stream, _)) => {
                        a.fetch_add(1, Ordering::SeqCst);
                        let (r, s) = (r.clone(), s.clone());
                        thread::spawn(move || serve(stream, &r, &s, started));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        TestServer { addr, accepts, requests, stop }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn accepts(&self) -> u64 {
        self.accepts.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads one request head; None when the client closed or the server stops.
fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>, stop: &AtomicBool) -> Option<String> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 4);
            return Some(head);
        }
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return None,
        }
    }
}

fn reset(stream: &TcpStream) {
    // SO_LINGER with a zero timeout: close() sends RST instead of FIN.
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

fn num(parts: &[&str], i: usize, default: usize) -> usize {
    parts.get(i).and_then(|p| p.parse().ok()).unwrap_or(default)
}

fn serve(mut stream: TcpStream, requests: &AtomicU64, stop: &AtomicBool, started: Instant) {
    stream.set_read_timeout(Some(Duration::from_millis(50))).ok();
    stream.set_nodelay(true).ok();
    let mut buf = Vec::new();
    while let Some(head) = read_head(&mut stream, &mut buf, stop) {
        let n = requests.fetch_add(1, Ordering::SeqCst);
        let is_head = head.starts_with("HEAD ");
        let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let body = |n: usize| vec![b'x'; n];
        let keep_going = match parts[0] {
            "cl" => {
                let n = num(&parts, 1, 12);
                let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n").into_bytes();
                if !is_head {
                    r.extend(body(n));
                }
                stream.write_all(&r).is_ok()
            }
            "slow" => {
                thread::sleep(Duration::from_millis(num(&parts, 1, 10) as u64));
                let n = num(&parts, 2, 12);
                let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n").into_bytes();
                r.extend(body(n));
                stream.write_all(&r).is_ok()
            }
            "freeze" => {
                let (period, freeze) = (num(&parts, 1, 1000) as u128, num(&parts, 2, 500) as u128);
                let phase = started.elapsed().as_millis() % period;
                if phase < freeze {
                    thread::sleep(Duration::from_millis((freeze - phase) as u64));
                }
                stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_ok()
            }
            "chunked" => {
                let (n, c) = (num(&parts, 1, 100), num(&parts, 2, 7).max(1));
                let mut r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
                let mut left = n;
                while left > 0 {
                    let k = left.min(c);
                    r.extend(format!("{k:x};ext=1\r\n").as_bytes());
                    r.extend(body(k));
                    r.extend(b"\r\n");
                    left -= k;
                }
                r.extend(b"0\r\nX-Trailer: yes\r\n\r\n");
                // Written in small pieces so the engine sees the framing split anywhere.
                r.chunks(5).all(|piece| stream.write_all(piece).is_ok())
            }
            "close" => {
                let n = num(&parts, 1, 12);
                let mut r = format!("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {n}\r\n\r\n").into_bytes();
                r.extend(body(n));
                let _ = stream.write_all(&r);
                false
            }
            "untilclose" => {
                let n = num(&parts, 1, 12);
                let mut r = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
                r.extend(body(n));
                let _ = stream.write_all(&r);
                false
            }
            "idleclose" => {
                let n = num(&parts, 1, 12);
                let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n").into_bytes();
                r.extend(body(n));
                let _ = stream.write_all(&r);
                false
            }
            "halfclose" => {
                // A keep-alive response, then the server's end (FIN) right behind it while
                // it goes on reading (a lingering close): the client must see the end
                // before its next request waits for an answer that never comes.
                let n = num(&parts, 1, 12);
                let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n").into_bytes();
                r.extend(body(n));
                let _ = stream.write_all(&r);
                let _ = stream.shutdown(std::net::Shutdown::Write);
                let mut sink = [0u8; 4096];
                while !stop.load(Ordering::Relaxed) {
                    match stream.read(&mut sink) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                        Err(_) => break,
                    }
                }
                false
            }
            "stall" => hostile::silent(&mut stream, stop),
            "badstatus" => {
                let _ = stream.write_all(b"HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n");
                false
            }
            "shortbody" => {
                let mut r = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".to_vec();
                r.extend(body(50));
                let _ = stream.write_all(&r);
                false
            }
            "badchunk" => {
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n");
                false
            }
            "hugeheaders" => {
                let mut r = b"HTTP/1.1 200 OK\r\n".to_vec();
                for i in 0..1100 {
                    r.extend(format!("X-Filler-{i}: {}\r\n", "y".repeat(50)).as_bytes());
                }
                r.extend(b"Content-Length: 0\r\n\r\n");
                let _ = stream.write_all(&r);
                false
            }
            "rstmid" => {
                let mut r = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".to_vec();
                r.extend(body(50));
                let _ = stream.write_all(&r);
                thread::sleep(Duration::from_millis(20));
                reset(&stream);
                false
            }
            "eofmid" => {
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n64\r\nonly a few bytes");
                let _ = stream.shutdown(Shutdown::Write);
                thread::sleep(Duration::from_millis(20));
                false
            }
            "xcache" => {
                let len = num(&parts, 1, 12);
                let value = if n % 4 == 0 { "MISS" } else { "HIT" };
                let mut r = format!("HTTP/1.1 200 OK\r\nX-Cache:  {value} \r\nContent-Length: {len}\r\n\r\n").into_bytes();
                r.extend(body(len));
                stream.write_all(&r).is_ok()
            }
            "distinct" => {
                let r = format!("HTTP/1.1 200 OK\r\nX-Value: v{n}\r\nContent-Length: 0\r\n\r\n");
                stream.write_all(r.as_bytes()).is_ok()
            }
            "pieces" => {
                // The body in `k` writes `ms` apart: the engine's wait for the rest of
                // a discarded body (SO_RCVLOWAT) must end when the last piece comes.
                let (n, k, ms) = (num(&parts, 1, 300_000), num(&parts, 2, 4).max(1), num(&parts, 3, 5) as u64);
                let mut ok = stream.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n").as_bytes()).is_ok();
                for i in 0..k {
                    thread::sleep(Duration::from_millis(ms));
                    ok = ok && stream.write_all(&body(n / k + if i == k - 1 { n % k } else { 0 })).is_ok();
                }
                ok
            }
            "status" => {
                let code = num(&parts, 1, 200);
                let r = format!("HTTP/1.1 {code} Whatever\r\nContent-Length: 0\r\n\r\n");
                stream.write_all(r.as_bytes()).is_ok()
            }
            _ => stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n").is_ok(),
        };
        if !keep_going {
            break;
        }
    }
}

/// What the engine binary printed and how it exited.
pub struct EngineRun {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// The engine process's peak resident memory (VmHWM of /proc/PID/status,
    /// sampled every 5 ms while it runs: the high-water mark only grows, so only
    /// the last few ms before exit escape it): what the hostile-server tests bound.
    /// Not wait4(2)'s ru_maxrss: Linux carries into it the RSS of the process image
    /// the child was spawned from (here the test binary), recorded at exec.
    pub peak_rss_bytes: u64,
}

impl EngineRun {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}\nstderr: {}", self.stdout, self.stderr))
    }
}

/// `STACKBENCH_TEST_IO=uring cargo test` runs every engine test on the io_uring
/// path (`--io` first, unless the test gives its own): both I/O paths pass the
/// same suite (loadgen/README.md "I/O path").
fn io_from_env(args: &[&str]) -> Vec<String> {
    match std::env::var("STACKBENCH_TEST_IO") {
        Ok(io) if !args.contains(&"--io") && !args.contains(&"--clock") => vec!["--io".into(), io],
        _ => Vec::new(),
    }
}

/// The engine binary as a command, on this test's event loop (`loops`).
pub fn engine_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_stackbench-load"));
    loops::apply(&mut command);
    command
}

/// Runs the engine with a hard wall-clock limit so a bug can never hang the suite.
pub fn engine(args: &[&str]) -> EngineRun {
    let mut command = engine_command();
    command.args(io_from_env(args)).args(args);
    run_bounded(command, args)
}

/// Runs the engine with extra environment variables (the io_uring set-up's
/// failure hook, uring/setup.rs; the event loop, STACKBENCH_LOAD_LOOP).
pub fn engine_with_env(env: &[(&str, &str)], args: &[&str]) -> EngineRun {
    let mut command = engine_command();
    command.envs(env.iter().copied()).args(args);
    run_bounded(command, args)
}

/// Runs the engine under `sh -c 'ulimit ULIMIT; exec engine ARGS'`, e.g. with
/// `ulimit` = `-n 256` (soft and hard limits) or `-S -n 256` (soft only).
pub fn engine_under_ulimit(ulimit: &str, args: &[&str]) -> EngineRun {
    let mut command = Command::new("sh");
    loops::apply(&mut command);
    command
        .arg("-c")
        .arg(format!("ulimit {ulimit} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_stackbench-load"))
        .args(io_from_env(args))
        .args(args);
    run_bounded(command, args)
}

fn run_bounded(mut command: Command, args: &[&str]) -> EngineRun {
    let limit = Duration::from_secs(30);
    let start = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start stackbench-load");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_thread = thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).ok();
        s
    });
    let err_thread = thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).ok();
        s
    });
    let mut peak_rss_bytes = 0;
    let status = loop {
        peak_rss_bytes = peak_rss_bytes.max(vm_hwm_bytes(child.id()).unwrap_or(0));
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!("stackbench-load {args:?} did not finish within {limit:?}");
        }
        thread::sleep(Duration::from_millis(5));
    };
    let stdout = out_thread.join().unwrap();
    loops::saw(&stdout);
    let stderr = err_thread.join().unwrap();
    EngineRun { code: status.code().unwrap_or(-1), stdout, stderr, elapsed: start.elapsed(), peak_rss_bytes }
}

/// The `VmHWM` line of /proc/PID/status (the peak RSS of the process's current
/// image), in bytes; None once the process has exited.
fn vm_hwm_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// Runs the engine with --json and returns the document (asserting exit 0).
pub fn engine_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let run = engine(&all);
    assert_eq!(run.code, 0, "exit code; stderr: {}", run.stderr);
    run.json()
}

/// Schema violations of a document against schema/result-v1.schema.json, made
/// strict for the test: the top level, `config` and stage objects (open in the
/// schema, so that readers tolerate additions) must not carry undeclared fields,
/// so every field the engine writes is declared.
pub fn schema_errors(doc: &serde_json::Value) -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/result-v1.schema.json");
    let mut schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for pointer in ["", "/properties/config", "/properties/stages/items", "/properties/engine"] {
        schema.pointer_mut(pointer).unwrap()["additionalProperties"] = serde_json::json!(false);
    }
    schema::errors(&schema, doc)
}

/// Asserts a document validates against the schema, and that its warnings and
/// warning codes pair up.
pub fn assert_valid(doc: &serde_json::Value) {
    let errors = schema_errors(doc);
    assert!(errors.is_empty(), "schema violations:\n{}\ndocument: {doc:#}", errors.join("\n"));
    assert_warnings_paired(doc);
}

/// Each warning code, with words its sentence in `warnings` must contain.
pub const WARNING_SENTENCES: [(&str, &str); 14] = [
    ("no_response_all", "none of the"),
    ("clients_unserved", "connections got no response during the measured phase"),
    ("in_flight_old", "still unanswered at the end"),
    ("target_down", "no connection to the target succeeded"),
    ("engine_saturated", "the result may measure the load generator"),
    ("no_requests", "no request completed or failed"),
    ("requests_failed", "of requests failed"),
    ("server_closed_keepalive", "keep-alive was asked for"),
    ("non_2xx", "were not 2xx"),
    ("latency_over_range", "above the histogram's"),
    ("rate_timer_resolution", "timer resolution"),
    ("rate_not_reached", "/s asked for were"),
    ("short_run", "less than 1 s"),
    ("io_fallback", "--io uring was asked for, but "),
];

/// `warning_codes[i]` is the code of the sentence `warnings[i]`.
pub fn assert_warnings_paired(doc: &serde_json::Value) {
    let sentences = doc["warnings"].as_array().expect("warnings");
    let codes = doc["warning_codes"].as_array().expect("warning_codes");
    assert_eq!(sentences.len(), codes.len(), "{doc:#}");
    for (sentence, code) in sentences.iter().zip(codes) {
        let code = code["code"].as_str().expect("a code");
        let (_, words) = WARNING_SENTENCES.iter().find(|(c, _)| *c == code).unwrap_or_else(|| panic!("unknown {code}"));
        assert!(sentence.as_str().unwrap().contains(words), "{code} paired with {sentence}");
    }
}

/// The codes of a document's warnings, in order.
pub fn warning_codes(doc: &serde_json::Value) -> Vec<&str> {
    doc["warning_codes"].as_array().expect("warning_codes").iter().map(|w| w["code"].as_str().unwrap()).collect()
}

/// The params of the first warning with this code (panics if there is none).
pub fn warning_params<'a>(doc: &'a serde_json::Value, code: &str) -> &'a serde_json::Value {
    let codes = doc["warning_codes"].as_array().expect("warning_codes");
    let w = codes.iter().find(|w| w["code"] == code);
    &w.unwrap_or_else(|| panic!("no {code} warning in {doc:#}"))["params"]
}

pub fn u(doc: &serde_json::Value, pointer: &str) -> u64 {
    doc.pointer(pointer).and_then(|v| v.as_u64()).unwrap_or_else(|| panic!("{pointer} missing in {doc:#}"))
}

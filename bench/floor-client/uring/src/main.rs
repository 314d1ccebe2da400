//! The floor client on io_uring: floor.c's twin, to answer whether io_uring lets a
//! client go below what epoll leaves it per request on this machine.
//!
//! One thread, one ring set up as measured best for a client that waits for its
//! completions itself (SINGLE_ISSUER + DEFER_TASKRUN: completion work runs only in
//! our own io_uring_enter). Per connection one multishot receive into the engine's
//! provided-buffer ring (loadgen/src/uring/bufs.rs, the same code); per response one
//! send, its success not posted; one io_uring_enter per wake submits the sends and
//! waits for the next completion. Bodies are copied (buffers are the kernel's), heads
//! framed by Content-Length only.
//!
//! Usage: floor-uring -c CONNECTIONS -d SECONDS http://127.x.y.z:PORT/PATH
//! Prints {"requests_per_s", "requests": {"ok", "failed"}}. Loopback only, bounded by -d.

#[allow(dead_code)]
#[path = "../../../../loadgen/src/uring/bufs.rs"]
mod bufs;

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::process::exit;
use std::time::{Duration, Instant};

use io_uring::{IoUring, cqueue, opcode, squeue, types};

/// user_data of a send (a receive's is its connection's index).
const SEND: u64 = 1 << 32;

fn die(what: &str) -> ! {
    eprintln!("floor-uring: {what}");
    exit(2)
}

struct Args {
    conns: usize,
    secs: f64,
    addr: SocketAddr,
    request: Vec<u8>,
}

fn args() -> Args {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (mut conns, mut secs, mut url) = (0usize, 0f64, None);
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-c" => conns = it.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            "-d" => secs = it.next().and_then(|v| v.parse().ok()).unwrap_or(0.0),
            u if !u.starts_with('-') && url.is_none() => url = Some(u.to_string()),
            _ => die("usage: floor-uring -c CONNECTIONS -d SECONDS http://127.x.y.z:PORT/PATH"),
        }
    }
    let url = url.unwrap_or_else(|| die("a URL is required"));
    if conns == 0 || !(secs > 0.0 && secs <= 3600.0) {
        die("-c and -d (at most 3600 s) are required");
    }
    let rest = url.strip_prefix("http://").unwrap_or_else(|| die("the URL is http://IPV4:PORT/PATH"));
    let (hostport, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let addr: SocketAddr = hostport.parse().unwrap_or_else(|_| die("the URL is http://IPV4:PORT/PATH"));
    match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.octets()[0] == Ipv4Addr::LOCALHOST.octets()[0] => {}
        _ => die("loopback (127.0.0.0/8) only"),
    }
    let path = if path.is_empty() { "/" } else { path };
    let request = format!("GET {path} HTTP/1.1\r\nHost: {hostport}\r\n\r\n").into_bytes();
    Args { conns, secs, addr, request }
}

/// The length of the first whole response in `bytes` and whether it was a 200.
fn response(bytes: &[u8]) -> Option<(usize, bool)> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = &bytes[..end];
    let length = head
        .windows(16)
        .position(|w| w.eq_ignore_ascii_case(b"content-length: "))
        .map(|p| head[p + 16..].iter().take_while(|b| b.is_ascii_digit()).fold(0, |n, b| n * 10 + (b - b'0') as usize))
        .unwrap_or(0);
    (bytes.len() >= end + length).then(|| (end + length, head.get(9..12) == Some(b"200")))
}

fn main() {
    let a = args();
    let mut builder = IoUring::builder();
    builder.setup_single_issuer().setup_defer_taskrun().setup_cqsize(8192);
    let mut ring = builder.build(2048).unwrap_or_else(|e| die(&format!("io_uring: {e}")));
    let mut buffers = bufs::BufRing::register(&ring, 512, 16384).unwrap_or_else(|e| die(&format!("buffer ring: {e}")));
    let socks: Vec<TcpStream> = (0..a.conns)
        .map(|_| {
            let s = TcpStream::connect(a.addr).unwrap_or_else(|e| die(&format!("cannot connect: {e}")));
            s.set_nodelay(true).ok();
            s
        })
        .collect();
    let fds: Vec<types::Fd> = socks.iter().map(|s| types::Fd(s.as_raw_fd())).collect();
    let request = a.request.as_slice();
    let receive = |c: usize| opcode::RecvMulti::new(fds[c], bufs::GROUP).build().user_data(c as u64);
    let send = |c: usize| {
        opcode::Send::new(fds[c], request.as_ptr(), request.len() as u32)
            .build()
            .user_data(SEND | c as u64)
            .flags(squeue::Flags::SKIP_SUCCESS)
    };
    let mut queue: Vec<squeue::Entry> = (0..a.conns).flat_map(|c| [receive(c), send(c)]).collect();
    let mut have: Vec<Vec<u8>> = vec![Vec::new(); a.conns];
    let mut done: Vec<(u64, i32, u32)> = Vec::with_capacity(1024);
    let (mut ok, mut failed) = (0u64, 0u64);
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(a.secs);
    while Instant::now() < end {
        for entry in queue.drain(..) {
            // SAFETY: every buffer an entry points at (the request, the ring's
            // buffers) lives until the ring is dropped at the end of main.
            while unsafe { ring.submission().push(&entry) }.is_err() {
                ring.submit().unwrap_or_else(|e| die(&format!("submit: {e}")));
            }
        }
        ring.submit_and_wait(1).unwrap_or_else(|e| die(&format!("wait: {e}")));
        done.extend(ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
        for (data, result, flags) in done.drain(..) {
            if data & SEND != 0 {
                failed += 1; // only a failed send is posted
                continue;
            }
            let c = data as usize;
            if result == -libc::ENOBUFS {
                queue.push(receive(c)); // out of buffers for now: ask again
                continue;
            }
            if result <= 0 {
                failed += 1; // closed or failed: that connection is done
                continue;
            }
            let bid = cqueue::buffer_select(flags).unwrap_or_else(|| die("a receive without its buffer"));
            have[c].extend_from_slice(buffers.bytes(bid, result as usize));
            buffers.recycle(bid);
            if !cqueue::more(flags) {
                queue.push(receive(c));
            }
            while let Some((len, is_200)) = response(&have[c]) {
                if is_200 { ok += 1 } else { failed += 1 }
                have[c].drain(..len);
                queue.push(send(c));
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!("{{\"requests_per_s\": {:.1}, \"requests\": {{\"ok\": {ok}, \"failed\": {failed}}}}}", ok as f64 / elapsed);
    drop(ring); // before the buffers: the kernel lets go of them
    drop(buffers);
}

//! A server that holds thousands of connections and closes them all at once, as
//! a server restart or a crashed front would: an event loop (tokio, one thread),
//! since 10,000 connections are too many for one thread each.
//!
//! Every request is answered after `delay` (so 10,000 connections make a bounded
//! load). When the `close_after`-th response has been sent, every connection open
//! at that moment is shut down at once (FIN); the server then goes on accepting
//! and answering new connections.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

pub struct MassServer {
    pub addr: SocketAddr,
    /// Connections open when they were all shut down (0 until then).
    closed_at_once: Arc<AtomicU64>,
    accepted: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

/// What the connection tasks share (one thread: no locks).
struct Shared {
    delay: Duration,
    close_after: u64,
    served: Cell<u64>,
    /// Open connections by id: their sockets, to shut them all down at once.
    open: RefCell<HashMap<u64, RawFd>>,
    closed_at_once: Arc<AtomicU64>,
}

impl Shared {
    fn close_all(&self) {
        let open = self.open.borrow();
        for &fd in open.values() {
            // SAFETY: each fd belongs to a live connection task of this thread (it
            // removes itself before its stream is dropped), so it is still open.
            unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
        }
        self.closed_at_once.store(open.len() as u64, Ordering::SeqCst);
    }
}

impl MassServer {
    pub fn start(delay: Duration, close_after: u64) -> MassServer {
        let (tx, rx) = std::sync::mpsc::channel();
        let closed_at_once = Arc::new(AtomicU64::new(0));
        let accepted = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let shared = (closed_at_once.clone(), accepted.clone(), stop.clone());
        thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let local = tokio::task::LocalSet::new();
            local.block_on(&runtime, serve(delay, close_after, shared, tx));
        });
        let addr = rx.recv().expect("the mass server started");
        MassServer { addr, closed_at_once, accepted, stop }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub fn closed_at_once(&self) -> u64 {
        self.closed_at_once.load(Ordering::SeqCst)
    }

    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for MassServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

async fn serve(
    delay: Duration,
    close_after: u64,
    (closed_at_once, accepted, stop): (Arc<AtomicU64>, Arc<AtomicU64>, Arc<AtomicBool>),
    started: std::sync::mpsc::Sender<SocketAddr>,
) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    // A deep accept queue (the kernel caps it at net.core.somaxconn): 10,000
    // connects arrive in one burst.
    let listener = socket.listen(16_384).unwrap();
    started.send(listener.local_addr().unwrap()).unwrap();
    let shared = Rc::new(Shared {
        delay,
        close_after,
        served: Cell::new(0),
        open: RefCell::new(HashMap::new()),
        closed_at_once,
    });
    let mut next_id = 0;
    while !stop.load(Ordering::Relaxed) {
        tokio::select! {
            conn = listener.accept() => {
                if let Ok((stream, _)) = conn {
                    accepted.fetch_add(1, Ordering::SeqCst);
                    next_id += 1;
                    tokio::task::spawn_local(connection(stream, next_id, shared.clone()));
                }
            }
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
    }
}

async fn connection(mut stream: TcpStream, id: u64, shared: Rc<Shared>) {
    shared.open.borrow_mut().insert(id, stream.as_raw_fd());
    let mut head = Vec::new();
    let mut chunk = [0u8; 2048];
    'requests: loop {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break 'requests,
                Ok(n) => head.extend_from_slice(&chunk[..n]),
            }
        }
        head.clear();
        // Hold the request, unless the connection goes away meanwhile (a read
        // returns at once when it is shut down): its socket is freed at once.
        tokio::select! {
            _ = tokio::time::sleep(shared.delay) => {}
            _ = stream.read(&mut chunk) => break 'requests,
        }
        if stream.write_all(RESPONSE).await.is_err() {
            break;
        }
        shared.served.set(shared.served.get() + 1);
        if shared.served.get() == shared.close_after {
            shared.close_all();
        }
    }
    shared.open.borrow_mut().remove(&id);
}

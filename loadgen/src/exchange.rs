//! One request/response on one connection: connect if needed, write the
//! pre-formatted request, read and frame the response, classify any failure.
//!
//! Hot path (keep-alive): one write, one read, three clock reads, no allocation.
//! Reads go into the thread's shared scratch buffer, borrowed only inside a
//! synchronous poll (never across an await), so a connection owns no buffer.

use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Poll, ready};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use crate::deadline::Watchdog;
use crate::http::response::{EofError, Progress, ResponseReader};
use crate::schedule::Slot;
use crate::stats::{ErrorClass, Outcome, Sample, Transfer};

/// What every connection of a thread shares (read-only but the scratch buffer).
pub struct Shared {
    pub addr: SocketAddr,
    pub request: Box<[u8]>,
    pub keepalive: bool,
    pub head_request: bool,
    pub timeout: Duration,
    pub run_end: Option<Instant>,
    /// Read buffer for all connections of the thread (64 KB: big bodies in few reads).
    pub scratch: RefCell<Box<[u8]>>,
}

pub const SCRATCH_BYTES: usize = 64 * 1024;

/// A connection's state between requests.
#[derive(Default)]
pub struct Conn {
    stream: Option<TcpStream>,
    reader: ResponseReader,
}

impl Conn {
    pub fn close(&mut self) {
        self.stream = None;
        self.reader.reset();
    }
}

/// How a request attempt ended.
pub enum Ended {
    Done { outcome: Outcome, transfer: Transfer, end: Instant },
    /// Cut off by the end of the run: neither a result nor an error.
    Abandoned,
}

pub async fn exchange(sh: &Shared, conn: &mut Conn, watchdog: &mut Watchdog, slot: &Slot) -> Ended {
    let request_deadline = slot.start + sh.timeout;
    let (deadline, cut_by_run_end) = match sh.run_end {
        Some(end) if end <= request_deadline => (end, true),
        _ => (request_deadline, false),
    };
    let mut transfer = Transfer::default();
    let result = watchdog.run(deadline.into(), attempt(sh, conn, slot, &mut transfer)).await;
    match result {
        Some((outcome, end)) => Ended::Done { outcome, transfer, end },
        None => {
            conn.close();
            if cut_by_run_end {
                Ended::Abandoned
            } else {
                Ended::Done { outcome: Outcome::Failed(ErrorClass::Timeout), transfer, end: Instant::now() }
            }
        }
    }
}

/// Errors meaning "the peer closed or reset the connection".
fn closed_by_peer(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionAborted
    )
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

async fn connect(addr: SocketAddr, keepalive: bool) -> io::Result<TcpStream> {
    let stream = TcpStream::connect(addr).await?;
    // Never let Nagle hold a request back on a reused connection. (A fresh
    // connection has nothing unacknowledged, so Nagle cannot delay its single
    // write: without keep-alive the syscall per request would buy nothing.)
    if keepalive {
        stream.set_nodelay(true)?;
    }
    Ok(stream)
}

async fn attempt(sh: &Shared, conn: &mut Conn, slot: &Slot, t: &mut Transfer) -> (Outcome, Instant) {
    // A kept-alive connection the server closed while idle fails on first use with
    // EOF or a reset before any response byte. That is not a failed request: retry
    // once on a fresh connection (as browsers and hyper do) and count no error.
    let mut may_retry = true;
    let mut connect_from = slot.start;
    'attempt: loop {
        let reused = conn.stream.is_some();
        let connected_at = if reused {
            slot.start
        } else {
            match connect(sh.addr, sh.keepalive).await {
                Ok(s) => {
                    conn.stream = Some(s);
                    conn.reader.reset();
                    t.connections_opened += 1;
                    Instant::now()
                }
                Err(_) => return (Outcome::Failed(ErrorClass::Connect), Instant::now()),
            }
        };
        let connect_us = if reused { 0 } else { us(connected_at - connect_from) };
        let retry_ok = reused && may_retry;
        let Some(stream) = conn.stream.as_mut() else { unreachable!("connected above") };
        conn.reader.start(sh.head_request);

        if let Err(e) = stream.write_all(&sh.request).await {
            conn.close();
            if retry_ok && closed_by_peer(&e) {
                may_retry = false;
                connect_from = Instant::now();
                continue 'attempt;
            }
            let class = if closed_by_peer(&e) { ErrorClass::Reset } else { ErrorClass::Write };
            return (Outcome::Failed(class), Instant::now());
        }
        t.sent += sh.request.len() as u64;
        let written = Instant::now();
        let mut first_byte: Option<Instant> = None;

        let (done, end) = loop {
            match read_some(&sh.scratch, stream, &mut conn.reader).await {
                Ok(Read::Data(n, progress)) => {
                    let now = Instant::now();
                    t.received += n as u64;
                    first_byte.get_or_insert(now);
                    if let Progress::Done(c) = progress {
                        break (c, now);
                    }
                }
                Ok(Read::Eof) => match conn.reader.eof() {
                    Ok(c) => break (c, Instant::now()),
                    Err(e) => {
                        let class = match e {
                            EofError::BeforeResponse if retry_ok => None,
                            EofError::BeforeResponse | EofError::InHead => Some(ErrorClass::Read),
                            EofError::InBody => Some(ErrorClass::LengthMismatch),
                        };
                        conn.close();
                        match class {
                            Some(c) => return (Outcome::Failed(c), Instant::now()),
                            None => {
                                may_retry = false;
                                connect_from = Instant::now();
                                continue 'attempt;
                            }
                        }
                    }
                },
                Ok(Read::Parse) => {
                    conn.close();
                    return (Outcome::Failed(ErrorClass::Parse), Instant::now());
                }
                Err(e) => {
                    let nothing_yet = !conn.reader.started();
                    conn.close();
                    if closed_by_peer(&e) {
                        if retry_ok && nothing_yet {
                            may_retry = false;
                            connect_from = Instant::now();
                            continue 'attempt;
                        }
                        return (Outcome::Failed(ErrorClass::Reset), Instant::now());
                    }
                    return (Outcome::Failed(ErrorClass::Read), Instant::now());
                }
            }
        };
        t.body += conn.reader.body_bytes();
        if done.close || !sh.keepalive {
            conn.close();
        }
        let first_byte = first_byte.unwrap_or(end);
        let sample = Sample {
            status: done.status,
            latency_us: us(end - slot.intended.unwrap_or(slot.start)),
            uncorrected_us: us(end - slot.start),
            connect_us,
            waiting_us: us(first_byte.saturating_duration_since(written)),
            processing_us: us(end - connected_at),
        };
        return (Outcome::Completed(sample), end);
    }
}

enum Read {
    Data(usize, Progress),
    Eof,
    Parse,
}

/// Reads once into the shared scratch buffer and feeds the bytes to the reader,
/// all inside one poll, so the buffer borrow never spans a suspension point.
fn read_some<'a>(
    scratch: &'a RefCell<Box<[u8]>>,
    stream: &'a mut TcpStream,
    reader: &'a mut ResponseReader,
) -> impl Future<Output = io::Result<Read>> + 'a {
    poll_fn(move |cx| {
        let mut buf = scratch.borrow_mut();
        let mut read_buf = ReadBuf::new(&mut buf[..]);
        ready!(Pin::new(&mut *stream).poll_read(cx, &mut read_buf))?;
        let n = read_buf.filled().len();
        if n == 0 {
            return Poll::Ready(Ok(Read::Eof));
        }
        Poll::Ready(Ok(match reader.feed(&buf[..n]) {
            Ok(progress) => Read::Data(n, progress),
            Err(_) => Read::Parse,
        }))
    })
}

//! One request/response on one connection: connect if needed, write the
//! pre-formatted request, read and frame the response; a failure retried or counted
//! in its class as rules.rs says.
//!
//! Hot path (keep-alive): one write, one read, three clock reads, no allocation.
//! Reads go into the thread's shared scratch buffer, borrowed only inside a
//! synchronous poll (never across an await), so a connection owns no buffer.
//! The features that are off by default (slow reads, keep-alive budget, header
//! counting) cost one predictable branch each when off.

use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::task::{Poll, ready};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};

use super::connect;
use super::context::{SCRATCH_BYTES, ThreadContext};
use super::deadline::Watchdog;
use super::rules::{self, Attempt, Cause, Deadline, Verdict};
use super::slow_read::{ReadRate, SlowReader};
use crate::net::Stream;
use crate::protocol::Reader;
use crate::protocol::capture::Captures;
use crate::protocol::reading::{ParseError, Progress};
use crate::schedule::Slot;
use crate::stats::{Outcome, Sample, Transfer};

/// A connection's state between requests.
pub struct Conn {
    stream: Option<Stream>,
    reader: Reader,
    /// Requests completed on the current TCP connection (for --keepalive-requests).
    uses: u32,
    slow: Option<SlowReader>,
    /// https: offer ALPN http/1.1 alone (the fallback of an --http2 run).
    http11_only: bool,
}

impl Conn {
    pub fn new(ctx: &ThreadContext) -> Conn {
        Conn {
            stream: None,
            reader: Reader::new(ctx.cfg.protocol, ctx.cfg.keepalive, ctx.watch.clone(), &ctx.head_memo),
            uses: 0,
            slow: ctx.cfg.read_bytes_per_s.map(|bytes_per_s| SlowReader::new(ReadRate { bytes_per_s })),
            http11_only: false,
        }
    }

    /// An HTTP/1.1 connection of an --http2 run whose server chose HTTP/1.1,
    /// starting on the stream that negotiated it.
    pub fn fallback(ctx: &ThreadContext, stream: Stream) -> Conn {
        let mut conn = Conn::new(ctx);
        conn.stream = Some(stream);
        conn.http11_only = true;
        conn
    }

    pub fn close(&mut self) {
        self.stream = None;
        self.reader.reset();
    }

    /// Watched header values of the last response (kept until the next one starts).
    pub fn captures(&self) -> &Captures {
        self.reader.captures()
    }
}

/// How a request attempt ended.
pub enum Ended {
    Done { outcome: Outcome, transfer: Transfer, end: Instant },
    /// Cut off by the end of the run: neither a result nor an error.
    Abandoned,
}

impl Ended {
    /// A request still unanswered at its `deadline`: cut off if that is the run's end,
    /// else failed now, a timeout (rules.rs).
    pub(super) fn past(deadline: Deadline, mut transfer: Transfer) -> Ended {
        if deadline.run_end {
            return Ended::Abandoned;
        }
        let outcome = rules::failed(&mut transfer, rules::final_class(Cause::Timeout, false));
        Ended::Done { outcome, transfer, end: Instant::now() }
    }
}

/// Sends `request` (a run's request bytes: `Config::request_bytes`, or a visit's) and
/// reads its response.
pub async fn exchange(ctx: &ThreadContext, conn: &mut Conn, watchdog: &mut Watchdog, slot: &Slot, request: &[u8]) -> Ended {
    let deadline = Deadline::of(slot.start, ctx.cfg.timeout, ctx.run_end);
    let mut transfer = Transfer::default();
    let result = watchdog.run(deadline.at.into(), attempt(ctx, conn, slot, request, &mut transfer)).await;
    match result {
        Some((outcome, end)) => Ended::Done { outcome, transfer, end },
        None => {
            conn.close();
            Ended::past(deadline, transfer)
        }
    }
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

/// One request on `conn` (HTTP/1.1 or FastCGI), without the deadline: exchange()
/// and the HTTP/1.1 fallback of an h2 connection (h2.rs) bound it. A failed attempt
/// is retried or counted as rules.rs says.
pub(super) async fn attempt(
    ctx: &ThreadContext,
    conn: &mut Conn,
    slot: &Slot,
    request: &[u8],
    t: &mut Transfer,
) -> (Outcome, Instant) {
    let cfg = &*ctx.cfg;
    let mut retry_unused = true;
    let mut connect_from = slot.start;
    loop {
        let reused = conn.stream.is_some();
        // One attempt: connect if needed, write, read the response; what ended it, if it
        // failed. (A block, not a function of its own: its future would sit beside this
        // one's in every connection's task, lane.rs's size test.)
        let cause = 'attempt: {
            let connected_at = if reused {
                slot.start
            } else {
                // Boxed: a connect in progress (and its address resolution) would otherwise sit
                // in every connection's task for its whole life: 464 bytes each (lane.rs's size test).
                match Box::pin(connect::open(ctx, conn.http11_only)).await {
                    Ok(opened) => {
                        conn.stream = Some(opened.stream);
                        conn.reader.reset();
                        conn.uses = 0;
                        t.connections_opened += 1;
                        t.handshake = opened.handshake;
                        Instant::now()
                    }
                    Err(refused) => break 'attempt Cause::Refused(refused),
                }
            };
            let connect_us = if reused { 0 } else { us(connected_at - connect_from) };
            let Some(stream) = conn.stream.as_mut() else { unreachable!("connected above") };
            conn.reader.start(ctx.head_request);

            let mut written = stream.write_all(request).await;
            // TLS: rustls may keep the record it could not write yet; push it out.
            if written.is_ok() && matches!(stream, Stream::Tls(_)) {
                written = stream.flush().await;
            }
            if let Err(e) = written {
                break 'attempt Cause::Write(e.kind());
            }
            t.sent += request.len() as u64;
            let written = Instant::now();
            let mut first_byte: Option<Instant> = None;
            let max_read = match &mut conn.slow {
                Some(slow) => {
                    slow.begin(written);
                    slow.slice_bytes(SCRATCH_BYTES)
                }
                None => SCRATCH_BYTES,
            };
            // Bodies nobody looks at go by unseen where the stream can discard (clear-text
            // TCP): the first read takes the head and a small body (at most HEAD_READ
            // bytes, so little of a large body is copied), the kernel drops the rest of a
            // Content-Length body or a large chunk; small chunks are read as before.
            let discard = cfg.discard_bodies && stream.can_discard();
            let head_read = if discard { max_read.min(HEAD_READ) } else { max_read };

            let (done, end) = loop {
                if let Some(slow) = &mut conn.slow {
                    slow.wait().await;
                }
                let skippable = conn.reader.skippable();
                let step = if discard && skippable >= DISCARD_AT_LEAST {
                    discard_some(stream, &mut conn.reader, skippable, conn.slow.is_some(), max_read).await
                } else {
                    let max = if first_byte.is_none() { head_read } else { max_read };
                    read_some(&ctx.scratch, stream, &mut conn.reader, max).await
                };
                match step {
                    Ok(Read::Data(n, progress)) => {
                        let now = Instant::now();
                        t.received += n as u64;
                        if let Some(slow) = &mut conn.slow {
                            slow.consumed(n, now);
                        }
                        first_byte.get_or_insert(now);
                        if let Progress::Done(c) = progress {
                            break (c, now);
                        }
                    }
                    Ok(Read::Eof) => match conn.reader.eof() {
                        Ok(c) => break (c, Instant::now()),
                        Err(e) => break 'attempt Cause::Eof(e),
                    },
                    Ok(Read::Bad(e)) => break 'attempt Cause::Malformed(e),
                    Err(e) => break 'attempt Cause::Read(e.kind()),
                }
            };
            t.body += conn.reader.body_bytes();
            conn.uses += 1;
            if !rules::keep_open(cfg, done.close, conn.uses) {
                conn.close();
            }
            let first_byte = first_byte.unwrap_or(end);
            let sample =
                Sample::timed(done.status, slot.intended, slot.start, end, connect_us, written, first_byte, connected_at);
            return (Outcome::Completed(sample), end);
        };
        let attempt = Attempt { may_retry: reused && retry_unused, nothing_yet: !conn.reader.started() };
        conn.close();
        match rules::judge(cause, attempt) {
            Verdict::Retry => {
                retry_unused = false;
                connect_from = Instant::now();
            }
            Verdict::Failed(failure) => return (rules::failed(t, failure), Instant::now()),
        }
    }
}

enum Read {
    Data(usize, Progress),
    Eof,
    Bad(ParseError),
}

/// The first read of a response while bodies are discarded: a head and a small body
/// in one read; of a larger body, at most this much is copied before the kernel
/// drops the rest (bench/RESULTS.md, "Bodies discarded in the kernel").
pub(super) const HEAD_READ: usize = 16 * 1024;

/// Body bytes left that are worth a discard call of their own. Below it they are
/// read with what follows: a chunked body from PHP comes in chunks of a few KB, and
/// discarding each one's data between reads of its size line tripled the system
/// calls per response (9.1 against 2.9 for nginx + FPM's 100 KB page) to save
/// copies of a few KB.
pub(super) const DISCARD_AT_LEAST: u64 = 16 * 1024;

/// Throws away up to `skippable` body bytes in the kernel (at most `max` for a slow
/// reader, whose pace is in bytes either way) and tells the reader they went by.
async fn discard_some(stream: &mut Stream, reader: &mut Reader, skippable: u64, slow: bool, max: usize) -> io::Result<Read> {
    let cap = if slow { max } else { i32::MAX as usize };
    let want = skippable.min(cap as u64) as usize;
    // A slow reader wakes at its own pace: no low-water mark for it.
    let mut raised = slow;
    let n = poll_fn(|cx| stream.poll_discard(cx, want, &mut raised)).await;
    if raised && !slow {
        // Before the next read of this connection (the rest of this body, or the head
        // of the next response, which the raised mark would hold back).
        stream.lower_rcvlowat()?;
    }
    let n = n?;
    if n == 0 {
        return Ok(Read::Eof);
    }
    Ok(Read::Data(n, reader.skipped(n as u64)))
}

/// Reads once (at most `max` bytes) into the shared scratch buffer and feeds the
/// bytes to the reader, all inside one poll, so the buffer borrow never spans a
/// suspension point.
fn read_some<'a>(
    scratch: &'a RefCell<Box<[u8]>>,
    stream: &'a mut Stream,
    reader: &'a mut Reader,
    max: usize,
) -> impl Future<Output = io::Result<Read>> + 'a {
    poll_fn(move |cx| {
        let mut buf = scratch.borrow_mut();
        let mut read_buf = ReadBuf::new(&mut buf[..max]);
        match ready!(Pin::new(&mut *stream).poll_read(cx, &mut read_buf)) {
            Ok(()) => {}
            // rustls: the TCP connection ended without a TLS close_notify. Read as
            // the end of the connection it is (a body until close ends there; a
            // kept-alive connection closed while idle is retried).
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Poll::Ready(Ok(Read::Eof)),
            Err(e) => return Poll::Ready(Err(e)),
        }
        let n = read_buf.filled().len();
        if n == 0 {
            return Poll::Ready(Ok(Read::Eof));
        }
        Poll::Ready(Ok(match reader.feed(&buf[..n]) {
            Ok(progress) => Read::Data(n, progress),
            Err(e) => Read::Bad(e),
        }))
    })
}

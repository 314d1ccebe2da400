//! A connection on the io_uring path: AsyncRead + AsyncWrite over the thread's
//! ring, so the HTTP/1.1, FastCGI, TLS (tokio-rustls) and HTTP/2 (h2) code runs
//! on it unchanged.
//!
//! - Receive: one single-shot receive in flight at most, submitted when a read
//!   finds nothing buffered, into a buffer the kernel picks from the thread's
//!   provided-buffer ring (no buffer per connection), its length capped by what
//!   the caller can take, so the bytes are copied out and the buffer given back in
//!   the same poll. POLL_FIRST: the receive waits for data instead of trying first
//!   (it is submitted right after the request, when the answer cannot be there).
//! - Discard (`poll_discard`): a receive with MSG_TRUNC and no buffer on TCP — the
//!   kernel drops the bytes without copying them; unix sockets read and drop.
//! - Send: the bytes are copied into a buffer the ring owns until the CQE, and the
//!   write reports them written at once; sends on one connection are one at a time
//!   (two in flight could be reordered), and an error surfaces at the next write,
//!   flush or shutdown (the receive sees the reset or the close too).
//! - Drop: whatever is in flight is cancelled, so the kernel lets go of the socket
//!   and the server sees the close.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, ready};

use io_uring::{cqueue, opcode, types};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::bufs::GROUP;
use super::ring::{Completion, Ring};
use super::setup::BUFFER_BYTES;

/// include/uapi/linux/io_uring.h: arm the poll before trying the receive (the
/// crate does not export it).
const IORING_RECVSEND_POLL_FIRST: u16 = 1;

/// The most one send takes from a write (larger writes come back for the rest).
const MAX_SEND: usize = 256 * 1024;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Data,
    Discard,
    /// A multishot receive: armed once, a completion per arrival of data.
    Multi,
}

/// Received bytes not handed out yet: in provided buffer `bid`, bytes `from..to`.
struct Held {
    bid: u16,
    from: usize,
    to: usize,
}

enum Got {
    Held,
    Eof,
    Discarded(usize),
    /// Transient: submit again.
    Again,
}

pub struct UringStream {
    fd: OwnedFd,
    ring: Rc<Ring>,
    /// TCP: discard with MSG_TRUNC (unix stream sockets have no such thing).
    tcp: bool,
    read: Option<(usize, Kind)>,
    write: Option<(usize, usize)>,
    held: Option<Held>,
    /// A send's buffer back from the kernel, reused by the next send.
    spare: Vec<u8>,
}

impl UringStream {
    /// Takes over a connected socket (connected by tokio, which let go of it).
    pub fn new(fd: OwnedFd, tcp: bool, ring: Rc<Ring>) -> UringStream {
        UringStream { fd, ring, tcp, read: None, write: None, held: None, spare: Vec::new() }
    }

    /// A TCP socket (it can discard bytes in the kernel), not a unix one.
    pub fn is_tcp(&self) -> bool {
        self.tcp
    }

    fn raw(&self) -> types::Fd {
        types::Fd(self.fd.as_raw_fd())
    }

    /// Hands out up to `max` held bytes (copied into `into` unless discarding).
    fn take_held(&mut self, max: usize, into: Option<&mut ReadBuf<'_>>) -> usize {
        let Some(Held { bid, from, to }) = &mut self.held else { return 0 };
        let n = max.min(*to - *from);
        if let Some(into) = into {
            into.put_slice(&self.ring.bufs().bytes(*bid, *to)[*from..*from + n]);
        }
        *from += n;
        if *from == *to {
            self.release_held();
        }
        n
    }

    fn release_held(&mut self) {
        if let Some(Held { bid, .. }) = self.held.take() {
            self.ring.bufs().recycle(bid);
        }
    }

    /// A receive of up to `len` bytes into a provided buffer: a multishot one
    /// (armed once, a completion per arrival) when the ring says so.
    fn submit_recv(&mut self, len: usize, cx: &Context<'_>) {
        let fd = self.raw();
        if self.ring.multishot() {
            let key = self.ring.submit_multi(|ud| opcode::RecvMulti::new(fd, GROUP).build().user_data(ud), cx.waker());
            self.read = Some((key, Kind::Multi));
            return;
        }
        let len = len.min(BUFFER_BYTES as usize) as u32;
        let key = self.ring.submit(
            |ud| {
                opcode::Recv::new(fd, std::ptr::null_mut(), len)
                    .buf_group(GROUP)
                    .ioprio(IORING_RECVSEND_POLL_FIRST)
                    .build()
                    .flags(io_uring::squeue::Flags::BUFFER_SELECT)
                    .user_data(ud)
            },
            None,
            cx.waker(),
        );
        self.read = Some((key, Kind::Data));
    }

    /// TCP: a receive that drops up to `max` bytes in the kernel.
    fn submit_discard(&mut self, max: usize, cx: &Context<'_>) {
        let fd = self.raw();
        let len = max.min(i32::MAX as usize) as u32;
        let key = self.ring.submit(
            |ud| opcode::Recv::new(fd, std::ptr::null_mut(), len).flags(libc::MSG_TRUNC).build().user_data(ud),
            None,
            cx.waker(),
        );
        self.read = Some((key, Kind::Discard));
    }

    /// Polls the receive in flight: what it brought, once it brought something.
    fn poll_in_flight(&mut self, cx: &Context<'_>, key: usize, kind: Kind) -> Poll<io::Result<Got>> {
        if kind == Kind::Multi {
            return Poll::Ready(match ready!(self.ring.poll_multi(key, cx.waker())) {
                // The multishot receive ended (EOF, error, buffers ran out): next
                // time a new one is armed.
                None => {
                    self.read = None;
                    Ok(Got::Again)
                }
                Some((res, flags)) => self.received(Completion { res, flags, buf: None }, Kind::Data),
            });
        }
        let c = ready!(self.ring.poll_op(key, cx.waker()));
        self.read = None;
        Poll::Ready(self.received(c, kind))
    }

    /// What a completed receive brought.
    fn received(&mut self, c: Completion, kind: Kind) -> io::Result<Got> {
        if c.res < 0 {
            return match -c.res {
                // More arrivals at once than provided buffers (10,000 connections
                // answered together): the bytes wait in the socket; asked again,
                // the receive goes out with the next pass, after this one's
                // receivers have given their buffers back. Never a buffer per
                // connection (README "I/O path": 10,000 connections, bounded RSS).
                libc::ENOBUFS | libc::EAGAIN | libc::EINTR => Ok(Got::Again),
                errno => Err(io::Error::from_raw_os_error(errno)),
            };
        }
        let n = c.res as usize;
        if kind == Kind::Discard {
            return Ok(if n == 0 { Got::Eof } else { Got::Discarded(n) });
        }
        match cqueue::buffer_select(c.flags) {
            Some(bid) if n == 0 => {
                self.ring.bufs().recycle(bid);
                Ok(Got::Eof)
            }
            Some(bid) => {
                self.held = Some(Held { bid, from: 0, to: n });
                Ok(Got::Held)
            }
            None if n == 0 => Ok(Got::Eof),
            None => Err(io::Error::other("io_uring: a receive completed without a buffer")),
        }
    }

    /// Reads and throws away up to `max` bytes without copying them where the
    /// socket allows (TCP: MSG_TRUNC): Ready(Ok(0)) is the end of the stream.
    pub fn poll_discard(&mut self, cx: &mut Context<'_>, max: usize) -> Poll<io::Result<usize>> {
        if max == 0 {
            return Poll::Ready(Ok(0));
        }
        loop {
            if self.held.is_some() {
                return Poll::Ready(Ok(self.take_held(max, None)));
            }
            match self.read {
                Some((key, kind)) => {
                    match ready!(self.poll_in_flight(cx, key, kind))? {
                        Got::Held | Got::Again => continue,
                        Got::Eof => return Poll::Ready(self.eof(cx).map(|()| 0)),
                        Got::Discarded(n) => return Poll::Ready(Ok(n)),
                    }
                }
                None if self.tcp && !self.ring.multishot() => self.submit_discard(max, cx),
                None => self.submit_recv(max, cx),
            }
            return Poll::Pending;
        }
    }

    /// The end of the stream as the caller should see it: a reset takes the
    /// socket's error once, and the send ahead of the receive may have been the
    /// one to take it — then the "end" is that reset, not a clean EOF.
    fn eof(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        match self.poll_sent(cx) {
            Poll::Ready(Err(e)) => Err(e),
            _ => Ok(()),
        }
    }

    /// Waits for the send in flight; its error, if it failed.
    fn poll_sent(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some((key, len)) = self.write else { return Poll::Ready(Ok(())) };
        let c = ready!(self.ring.poll_op(key, cx.waker()));
        self.write = None;
        if let Some(buf) = c.buf {
            self.spare = buf;
        }
        Poll::Ready(if c.res < 0 {
            Err(io::Error::from_raw_os_error(-c.res))
        } else if (c.res as usize) < len {
            // MSG_WAITALL makes the kernel finish a stream send unless it failed.
            Err(io::Error::new(io::ErrorKind::WriteZero, "io_uring: short send"))
        } else {
            Ok(())
        })
    }
}

impl AsyncRead for UringStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if this.held.is_some() {
                this.take_held(buf.remaining(), Some(buf));
                return Poll::Ready(Ok(()));
            }
            match this.read {
                Some((key, kind)) => {
                    match ready!(this.poll_in_flight(cx, key, kind))? {
                        Got::Held | Got::Again => continue,
                        Got::Eof => return Poll::Ready(this.eof(cx)),
                        Got::Discarded(_) => {
                            return Poll::Ready(Err(io::Error::other("bytes were discarded under a read")));
                        }
                    }
                }
                None => this.submit_recv(buf.remaining(), cx),
            }
            return Poll::Pending;
        }
    }
}

impl AsyncWrite for UringStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_sent(cx))?;
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let n = data.len().min(MAX_SEND);
        let mut buf = std::mem::take(&mut this.spare);
        buf.clear();
        buf.extend_from_slice(&data[..n]);
        let (fd, ptr) = (this.raw(), buf.as_ptr());
        let flags = libc::MSG_NOSIGNAL | libc::MSG_WAITALL;
        let key =
            this.ring.submit(|ud| opcode::Send::new(fd, ptr, n as u32).flags(flags).build().user_data(ud), Some(buf), cx.waker());
        this.write = Some((key, n));
        Poll::Ready(Ok(n))
    }

    /// The bytes are the kernel's already; a send that failed is reported here if
    /// its completion has come, else at the next write or read.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_sent(cx))?;
        // SAFETY: a valid socket we own.
        if unsafe { libc::shutdown(this.fd.as_raw_fd(), libc::SHUT_WR) } < 0 {
            return Poll::Ready(Err(io::Error::last_os_error()));
        }
        Poll::Ready(Ok(()))
    }
}

impl Drop for UringStream {
    fn drop(&mut self) {
        self.release_held();
        let busy = self.read.is_some() || self.write.is_some();
        if let Some((key, _)) = self.read.take() {
            self.ring.orphan(key);
        }
        if let Some((key, _)) = self.write.take() {
            self.ring.orphan(key);
        }
        if busy {
            // Before the fd number is free again (ring.rs, submit_queued): the
            // kernel then holds its own reference to this socket, which goes with
            // the cancelled operations, and the server sees the close.
            self.ring.submit_queued();
        }
    }
}

//! Where requests go and how a connection is opened: a TCP address, or a unix
//! socket (FastCGI to PHP-FPM), and TLS over TCP. One stream type over all three,
//! so the exchange code is the same; the `match` per read/write costs a
//! predictable branch (an enum, not a `Box<dyn>`: clear text pays no indirection).
//! On the io_uring path (`--io uring`) a connected socket is handed from tokio to
//! the thread's ring (`Stream::Uring`), TLS included (its inner stream is a `Stream`).

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::{TcpSocket, TcpStream, UnixStream};
use tokio_rustls::client::TlsStream;

use crate::uring::{Ring, UringStream};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Tcp(SocketAddr),
    /// Local by definition: the loopback guard does not apply.
    Unix(PathBuf),
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(addr) => write!(f, "{addr}"),
            Endpoint::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct ConnectOptions {
    /// TCP_NODELAY, set with keep-alive only: never let Nagle hold a request back
    /// on a reused connection. (A fresh connection has nothing unacknowledged, so
    /// Nagle cannot delay its single write: without keep-alive the syscall per
    /// request would buy nothing.)
    pub nodelay: bool,
    /// SO_RCVBUF in bytes, set before connect (TCP only).
    pub rcvbuf: Option<u32>,
}

pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// TCP or a unix socket on the thread's io_uring (uring/stream.rs).
    /// Boxed: its in-flight bookkeeping (~100 bytes) would otherwise widen every
    /// connection's stream on the epoll path too (10,000 connections: 25 MB bar).
    Uring(Box<UringStream>),
    /// Boxed: a rustls connection is ~1 KB of state the other variants need not carry.
    /// Over `Tcp` or `Uring`.
    Tls(Box<TlsStream<Stream>>),
}

impl Stream {
    /// On the io_uring path (this thread has a ring): the connected socket leaves
    /// tokio's epoll for the ring. Unchanged on the epoll path.
    pub fn onto_ring(self) -> io::Result<Stream> {
        let Some(ring) = Ring::current() else { return Ok(self) };
        Ok(match self {
            Stream::Tcp(s) => Stream::Uring(Box::new(UringStream::new(OwnedFd::from(s.into_std()?), true, ring))),
            Stream::Unix(s) => Stream::Uring(Box::new(UringStream::new(OwnedFd::from(s.into_std()?), false, ring))),
            other => other,
        })
    }
}

pub async fn connect(endpoint: &Endpoint, opts: ConnectOptions) -> io::Result<Stream> {
    match endpoint {
        Endpoint::Tcp(addr) => Ok(Stream::Tcp(connect_tcp(*addr, opts).await?)),
        Endpoint::Unix(path) => Ok(Stream::Unix(UnixStream::connect(path).await?)),
    }
}

/// A TCP connection with the options applied (TLS runs its handshake on it).
pub async fn connect_tcp(addr: SocketAddr, opts: ConnectOptions) -> io::Result<TcpStream> {
    let stream = match opts.rcvbuf {
        None => TcpStream::connect(addr).await?,
        Some(bytes) => {
            let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
            // Before connect(): the window scale is fixed in the SYN from the
            // buffer size at that moment; tcp(7) says "the socket buffer size must
            // be set prior to the listen(2) or connect(2) calls in order to have it
            // take effect". Linux doubles the value (bookkeeping overhead).
            socket.set_recv_buffer_size(bytes)?;
            socket.connect(addr).await?
        }
    };
    if opts.nodelay {
        stream.set_nodelay(true)?;
    }
    Ok(stream)
}

impl Stream {
    /// Whether bytes can be thrown away in the kernel on this stream: clear-text TCP,
    /// on either I/O path. TLS must decrypt every record; a unix stream socket does
    /// not discard.
    #[inline]
    pub fn can_discard(&self) -> bool {
        match self {
            Stream::Tcp(_) => true,
            Stream::Uring(s) => s.is_tcp(),
            _ => false,
        }
    }

    /// Reads and throws away up to `max` bytes without copying them to user space
    /// (TCP `recv(MSG_TRUNC)`, tcp(7)): a body nobody looks at costs the kernel's
    /// bookkeeping, not a copy. Ok(0) is the end of the stream, as for a read.
    /// Only for a stream that `can_discard()`.
    ///
    /// When nothing is queued yet, the socket's receive low-water mark is raised to
    /// `max` first (SO_RCVLOWAT, at most a third of the receive buffer as it is),
    /// so the engine wakes once when the rest of the body is in rather than for every
    /// piece the server writes — each wake of an idle engine was a context switch
    /// here and an interrupt sent from the server's core, charged to the server
    /// (bench/RESULTS.md, "Bodies discarded in the kernel"). The end of the stream
    /// and errors still wake it. `raised` says the mark is up: the caller lowers it
    /// (`lower_rcvlowat`) before the connection reads anything else.
    /// On the io_uring path the ring's receive with MSG_TRUNC does the same (no mark:
    /// it completes with what has arrived, as a read).
    pub fn poll_discard(&mut self, cx: &mut Context<'_>, max: usize, raised: &mut bool) -> Poll<io::Result<usize>> {
        let s = match self {
            Stream::Tcp(s) => s,
            Stream::Uring(s) if s.is_tcp() => return s.poll_discard(cx, max),
            _ => return Poll::Ready(Err(io::Error::new(io::ErrorKind::Unsupported, "only TCP discards"))),
        };
        loop {
            std::task::ready!(s.poll_read_ready(cx))?;
            let fd = s.as_raw_fd();
            // try_io clears the readiness tokio cached when the call would block, so
            // the next poll_read_ready waits for the socket again.
            match s.try_io(Interest::READABLE, || discard(fd, max)) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !*raised && max > 1 {
                        raise_rcvlowat(fd, max)?;
                        *raised = true;
                    }
                }
                result => return Poll::Ready(result),
            }
        }
    }

    /// Puts the receive low-water mark that `poll_discard` raised back to one byte.
    pub fn lower_rcvlowat(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => set_rcvlowat(s.as_raw_fd(), 1),
            _ => Ok(()),
        }
    }
}

/// Raises the receive low-water mark towards `bytes` still to come, so the socket
/// wakes its reader once they are in (the end of the stream and errors still wake it).
/// At most a third of the receive buffer as it is now: a mark the buffer cannot hold
/// makes the kernel grow the buffer and clamp the window to the mark
/// (tcp_set_rcvlowat), which the server would see as a smaller window on a long link.
pub(crate) fn raise_rcvlowat(fd: RawFd, bytes: usize) -> io::Result<()> {
    set_rcvlowat(fd, bytes.min(rcvbuf(fd)? / 3).max(1))
}

/// The socket's receive buffer as the kernel has it now (SO_RCVBUF: autotuning grows it).
fn rcvbuf(fd: RawFd) -> io::Result<usize> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: an integer option read into a local of the right size.
    let rc = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, (&mut value as *mut libc::c_int).cast(), &mut len) };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(value.max(0) as usize) }
}

pub(crate) fn set_rcvlowat(fd: RawFd, bytes: usize) -> io::Result<()> {
    set_socket_int(fd, libc::SO_RCVLOWAT, bytes.min(i32::MAX as usize) as libc::c_int)
}

/// Sets an integer SOL_SOCKET option on `fd`.
pub(crate) fn set_socket_int(fd: RawFd, option: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: a plain integer option on a socket we own.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// One `recv(fd, NULL, max, MSG_TRUNC)`: on TCP the kernel drops up to `max` queued
/// bytes and says how many (no buffer: nothing is copied).
pub(crate) fn discard(fd: RawFd, max: usize) -> io::Result<usize> {
    // SAFETY: with MSG_TRUNC a TCP socket copies nothing to the (null) buffer.
    let n = unsafe { libc::recv(fd, std::ptr::null_mut(), max, libc::MSG_TRUNC | libc::MSG_DONTWAIT) };
    if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
}

impl AsyncRead for Stream {
    #[inline]
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Uring(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    #[inline]
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Uring(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
            Stream::Uring(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Uring(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

//! When the bytes a read returns arrived, from the kernel: the direct loop's sockets ask
//! for SO_TIMESTAMPNS, and each read is a `recvmsg` that brings back the time the last
//! segment it read was queued on the socket.
//!
//! Why: the direct loop may sleep a little before it looks at its sockets
//! (`direct::Pacer`, coalesced waits), and a response that landed during the sleep must
//! still be timed when it landed, not when the loop woke. A read that holds one
//! response — every HTTP/1.1 read, nearly every HTTP/2 one — gets its exact time; of
//! two responses read together, the first gets the second's. Without a stamp (a
//! kernel that gives none) the read's own time stands.

use std::io;
use std::mem::{MaybeUninit, size_of};
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// An arrival older than this is a stepped wall clock, not a late read: the read's time
/// stands.
const OLDEST: Duration = Duration::from_secs(10);

/// Asks the kernel to stamp what arrives on `fd`.
pub(super) fn stamp(fd: RawFd) -> io::Result<()> {
    crate::net::set_socket_int(fd, libc::SO_TIMESTAMPNS, 1)
}

/// One non-blocking read of up to `len` bytes into `buf` — or, with `buf` None, up to
/// `len` bytes dropped in the kernel (MSG_TRUNC: nothing copied) — and when the last
/// of them arrived. Ok((0, _)) is the end of stream; errors as `recv`'s.
pub(super) fn recv(fd: RawFd, buf: Option<&mut [u8]>, len: usize) -> io::Result<(usize, Instant)> {
    let (base, flags) = match buf {
        Some(b) => (b.as_mut_ptr(), libc::MSG_DONTWAIT),
        None => (std::ptr::null_mut(), libc::MSG_DONTWAIT | libc::MSG_TRUNC),
    };
    let mut iov = libc::iovec { iov_base: base.cast(), iov_len: len };
    // Room for one SCM_TIMESTAMPNS (a timespec) and then some, aligned for cmsghdr.
    let mut control = [0u64; 8];
    // SAFETY: zeroed msghdr is a valid empty one; its pointers are set below.
    let mut msg: libc::msghdr = unsafe { MaybeUninit::zeroed().assume_init() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of::<[u64; 8]>() as _;
    // SAFETY: iov points at `len` writable bytes of `buf` (or is null with MSG_TRUNC,
    // where a TCP socket copies nothing); control is ours and as long as said.
    let n = unsafe { libc::recvmsg(fd, &mut msg, flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let now = Instant::now();
    Ok((n as usize, stamped(&msg).map_or(now, |ts| arrived(ts, now))))
}

/// The SCM_TIMESTAMPNS of a received message, if the kernel gave one.
fn stamped(msg: &libc::msghdr) -> Option<libc::timespec> {
    // SAFETY: the CMSG_* walk stays inside msg_control/msg_controllen, as the kernel
    // filled them; the stamp's data is a timespec, read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                return Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>()));
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

/// The monotonic instant of wall-clock stamp `ts`: `now` less its age on the wall clock
/// (read right after `now`'s read returned, so the age is the read's lateness).
fn arrived(ts: libc::timespec, now: Instant) -> Instant {
    let wall = wall_now();
    let age_ns = (wall.tv_sec - ts.tv_sec) as i128 * 1_000_000_000 + (wall.tv_nsec - ts.tv_nsec) as i128;
    if age_ns <= 0 {
        return now;
    }
    let age = Duration::from_nanos(age_ns as u64);
    if age > OLDEST {
        return now;
    }
    now.checked_sub(age).unwrap_or(now)
}

fn wall_now() -> libc::timespec {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a timespec of ours; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        stamp(client.as_raw_fd()).unwrap();
        (client, server)
    }

    #[test]
    fn a_late_read_is_timed_when_its_bytes_landed() {
        let (client, mut server) = pair();
        let sent = Instant::now();
        server.write_all(b"hello").unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let mut buf = [0u8; 64];
        let (n, at) = recv(client.as_raw_fd(), Some(&mut buf), 64).unwrap();
        assert_eq!(&buf[..n], b"hello");
        let read = Instant::now();
        // Landed within a few ms of the write, though read 30 ms later.
        assert!(at >= sent, "stamped before it was sent");
        assert!(at - sent < Duration::from_millis(10), "stamped {:?} after the send", at - sent);
        assert!(read - at >= Duration::from_millis(25));
    }

    #[test]
    fn two_writes_read_together_carry_the_last_ones_time_and_truncation_drops_them() {
        let (client, mut server) = pair();
        let sent = Instant::now();
        server.write_all(b"first").unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let second = Instant::now();
        server.write_all(b"second").unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let (n, at) = recv(client.as_raw_fd(), None, 64).unwrap();
        assert_eq!(n, 11, "MSG_TRUNC says how many bytes it dropped");
        assert!(at >= second && at - sent >= Duration::from_millis(25));
        // Dropped, not left: nothing more to read, and the end of stream reads as 0.
        drop(server);
        std::thread::sleep(Duration::from_millis(5));
        let mut buf = [0u8; 8];
        assert_eq!(recv(client.as_raw_fd(), Some(&mut buf), 8).unwrap().0, 0);
    }

    #[test]
    fn nothing_there_is_would_block() {
        let (client, _server) = pair();
        client.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 8];
        let e = recv(client.as_raw_fd(), Some(&mut buf), 8).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }
}

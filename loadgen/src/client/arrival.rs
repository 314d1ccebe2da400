//! When the bytes a read returns arrived, from the kernel: a pacing direct loop's sockets
//! ask for SO_TIMESTAMPNS, and a read in a turn after a coalesced wait is a `recvmsg`
//! that brings back the time the last segment it read was queued on the socket.
//!
//! Why: the direct loop may sleep a little before it looks at its sockets
//! (pacer.rs, coalesced waits), and a response that landed during the sleep must
//! still be timed when it landed, not when the loop woke. Only the reads of a turn
//! after such a sleep are `recvmsg`s (`after_sleep`); the others are plain `recv`s
//! at their own time. A read that holds one response — every HTTP/1.1 read — gets its
//! exact time; of responses read together (HTTP/2 streams of one connection after a
//! sleep), all get the last one's, up to a sleep late for the others. Without a stamp (a
//! kernel that gives none) the read's own time stands.

use std::cell::Cell;
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

/// One non-blocking read into `buf`, and when its last byte landed (the read's own
/// time without a stamp). Ok((0, _)) is the end of stream; errors as `recv`'s.
pub(super) fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Instant)> {
    let (n, stamp, now) = pick(fd, buf.as_mut_ptr(), buf.len(), 0)?;
    Ok((n, stamp.unwrap_or(now)))
}

/// Up to `len` queued bytes dropped in the kernel (MSG_TRUNC: nothing copied), and when
/// the last of them landed.
pub(super) fn discard(fd: RawFd, len: usize) -> io::Result<(usize, Instant)> {
    let (n, stamp, now) = pick(fd, std::ptr::null_mut(), len, libc::MSG_TRUNC)?;
    Ok((n, stamp.unwrap_or(now)))
}

thread_local! {
    /// This thread's loop is handing out what a timed sleep found (pacer.rs).
    static AFTER_SLEEP: Cell<bool> = const { Cell::new(false) };
}

/// Says whether the events of the loop's current turn are what a timed sleep found:
/// only those reads can hold bytes that waited for the loop, so only they pay for a
/// stamp. A turn woken by its sockets reads what just landed, at the read's own time,
/// as a loop that never sleeps does.
pub(super) fn after_sleep(yes: bool) {
    AFTER_SLEEP.with(|a| a.set(yes));
}

/// `receive` in a turn after a sleep (the sockets are stamped when the loop may
/// sleep), else a plain `recv`: a `recvmsg` and the wall clock cost ~2.5 % more CPU a
/// 12-byte request.
fn pick(fd: RawFd, base: *mut u8, len: usize, flags: libc::c_int) -> io::Result<(usize, Option<Instant>, Instant)> {
    if AFTER_SLEEP.with(Cell::get) {
        return receive(fd, base, len, flags);
    }
    // SAFETY: as in `receive`: `len` writable bytes at `base`, or null with MSG_TRUNC.
    let n = unsafe { libc::recv(fd, base.cast(), len, flags | libc::MSG_DONTWAIT) };
    if n < 0 { Err(io::Error::last_os_error()) } else { Ok((n as usize, None, Instant::now())) }
}

/// A response's first byte and end for its sample, never before its request was
/// written (bytes that landed earlier — a server's close on an idle connection — or a
/// stamp a clock step moved) and the first byte never after the end.
pub(super) fn bounded(written: Instant, first_byte: Option<Instant>, end: Instant) -> (Instant, Instant) {
    let end = end.max(written);
    (first_byte.unwrap_or(end).clamp(written, end), end)
}

/// One `recvmsg`: bytes read, the arrival stamp if the kernel gave one (it gives none
/// for a while after the first socket of the machine asks: the kernel turns stamping
/// on from a work queue), and the read's own time.
fn receive(fd: RawFd, base: *mut u8, len: usize, flags: libc::c_int) -> io::Result<(usize, Option<Instant>, Instant)> {
    let mut iov = libc::iovec { iov_base: base.cast(), iov_len: len };
    // Room for one SCM_TIMESTAMPNS (a timespec) and then some, aligned for cmsghdr.
    let mut control = [0u64; 8];
    // SAFETY: zeroed msghdr is a valid empty one; its pointers are set below.
    let mut msg: libc::msghdr = unsafe { MaybeUninit::zeroed().assume_init() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of::<[u64; 8]>() as _;
    // SAFETY: iov points at `len` writable bytes (the callers pass a slice's own
    // length), or is null with MSG_TRUNC, where a TCP socket copies nothing; control
    // is ours and as long as said.
    let n = unsafe { libc::recvmsg(fd, &mut msg, flags | libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // The wall clock first, then the monotonic one: a gap between the two reads makes
    // the arrival late (never earlier than it was, never later than the read).
    let wall = wall_now();
    let now = Instant::now();
    let stamp = if msg.msg_flags & libc::MSG_CTRUNC != 0 { None } else { stamped(&msg) };
    Ok((n as usize, stamp.map(|ts| arrived(ts, wall, now)), now))
}

/// The SCM_TIMESTAMPNS of a received message, if the kernel gave one.
fn stamped(msg: &libc::msghdr) -> Option<libc::timespec> {
    // SAFETY: the CMSG_* walk stays inside msg_control/msg_controllen, as the kernel
    // filled them; the stamp's data is a timespec, read unaligned, once its length
    // says it is all there.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET
                && (*c).cmsg_type == libc::SCM_TIMESTAMPNS
                && (*c).cmsg_len as usize >= libc::CMSG_LEN(size_of::<libc::timespec>() as u32) as usize
            {
                return Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>()));
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

/// The monotonic instant of wall-clock stamp `ts`: `now` less its age on the wall clock
/// (`wall`, read just before `now`).
fn arrived(ts: libc::timespec, wall: libc::timespec, now: Instant) -> Instant {
    let age_ns = (wall.tv_sec - ts.tv_sec) as i128 * 1_000_000_000 + (wall.tv_nsec - ts.tv_nsec) as i128;
    if age_ns <= 0 || age_ns > OLDEST.as_nanos() as i128 {
        return now;
    }
    now.checked_sub(Duration::from_nanos(age_ns as u64)).unwrap_or(now)
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

    /// A stamped loopback pair, once the kernel stamps (it turns stamping on from a
    /// work queue when the first socket asks: the first bytes may come unstamped).
    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut server, _) = l.accept().unwrap();
        stamp(client.as_raw_fd()).unwrap();
        let mut buf = [0u8; 8];
        for _ in 0..200 {
            server.write_all(b"x").unwrap();
            std::thread::sleep(Duration::from_millis(5));
            let (_, stamp, _) = receive(client.as_raw_fd(), buf.as_mut_ptr(), buf.len(), 0).unwrap();
            if stamp.is_some() {
                return (client, server);
            }
        }
        panic!("the kernel never stamped loopback TCP in 1 s");
    }

    #[test]
    fn a_late_read_is_timed_when_its_bytes_landed() {
        let (client, mut server) = pair();
        let sent = Instant::now();
        server.write_all(b"hello").unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let mut buf = [0u8; 64];
        let (n, at, _) = receive(client.as_raw_fd(), buf.as_mut_ptr(), buf.len(), 0).unwrap();
        let at = at.expect("stamped");
        assert_eq!(&buf[..n], b"hello");
        let read_at = Instant::now();
        // Landed within a few ms of the write, though read 30 ms later.
        assert!(at >= sent, "stamped before it was sent");
        assert!(at - sent < Duration::from_millis(10), "stamped {:?} after the send", at - sent);
        assert!(read_at - at >= Duration::from_millis(25));
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
        let (n, at, _) = receive(client.as_raw_fd(), std::ptr::null_mut(), 64, libc::MSG_TRUNC).unwrap();
        let at = at.expect("stamped");
        assert_eq!(n, 11, "MSG_TRUNC says how many bytes it dropped");
        assert!(at >= second && at - sent >= Duration::from_millis(25));
        // Dropped, not left: nothing more to read, and the end of stream reads as 0.
        drop(server);
        std::thread::sleep(Duration::from_millis(5));
        let mut buf = [0u8; 8];
        assert_eq!(read(client.as_raw_fd(), &mut buf).unwrap().0, 0);
    }

    #[test]
    fn nothing_there_is_would_block() {
        let (client, _server) = pair();
        let mut buf = [0u8; 8];
        let e = read(client.as_raw_fd(), &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn a_sample_never_starts_before_its_request_nor_ends_before_its_first_byte() {
        let t = Instant::now();
        let ms = |n| t + Duration::from_millis(n);
        assert_eq!(bounded(ms(10), Some(ms(12)), ms(15)), (ms(12), ms(15)));
        assert_eq!(bounded(ms(10), Some(ms(5)), ms(8)), (ms(10), ms(10)), "landed before the write");
        assert_eq!(bounded(ms(10), Some(ms(20)), ms(15)), (ms(15), ms(15)));
        assert_eq!(bounded(ms(10), None, ms(15)), (ms(15), ms(15)));
    }

    #[test]
    fn a_stamp_from_the_future_or_too_old_is_the_reads_own_time() {
        let now = Instant::now();
        let wall = wall_now();
        let ahead = libc::timespec { tv_sec: wall.tv_sec + 1, tv_nsec: wall.tv_nsec };
        let old = libc::timespec { tv_sec: wall.tv_sec - 60, tv_nsec: wall.tv_nsec };
        assert_eq!(arrived(ahead, wall, now), now);
        assert_eq!(arrived(old, wall, now), now);
        let recent = libc::timespec { tv_sec: wall.tv_sec - 1, tv_nsec: wall.tv_nsec };
        assert_eq!(now - arrived(recent, wall, now), Duration::from_secs(1));
    }
}

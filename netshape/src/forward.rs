//! One direction's thread: read packets from the source TUN device as they come, ask the
//! link model what becomes of each, hold the survivors in the delay line and write each
//! to the destination TUN device at its due time.
//!
//! Timing: the thread sleeps in ppoll (nanosecond timeout, timer slack cut to 1 ns, so
//! the kernel does not round wake-ups up by its default 50 µs) until the earlier of "a
//! packet arrived" and "the next packet is due, minus the spin window", then spins on the
//! clock for the rest when `spin_ns` > 0. Every packet's lateness (written − due) is
//! counted, so the timing error is measured, not assumed.

use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::line::{DelayLine, MAX_LINE_BYTES};
use crate::link::{Link, Verdict};
use crate::stats::DirStats;

/// Longest sleep with nothing due: bounds how long a missed wake-up could go unnoticed.
const IDLE_WAIT_NS: u64 = 500_000_000;
/// Packets read in one go before looking at the delay line again, so a burst of input
/// cannot hold back a packet that is due.
const READ_BATCH: usize = 64;
/// Larger than any TUN MTU (the IP packet is at most 64 KiB).
const BUF_BYTES: usize = 65_536;

pub struct Direction {
    pub src: RawFd,
    pub dst: RawFd,
    /// An eventfd that becomes readable when the forwarder stops.
    pub wake: RawFd,
    pub link: Link,
    pub stats: Arc<DirStats>,
    pub spin_ns: u64,
    pub stop: Arc<AtomicBool>,
}

pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Direction {
    pub fn run(mut self) -> Result<(), String> {
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
        let mut line = DelayLine::new(MAX_LINE_BYTES);
        let mut buf = vec![0u8; BUF_BYTES];
        while !self.stop.load(Relaxed) {
            let now = self.deliver_due(&mut line)?;
            let timeout = match line.next_due() {
                Some(due) => due.saturating_sub(now + self.spin_ns),
                None => IDLE_WAIT_NS,
            };
            if self.wait_readable(timeout)? {
                self.read_batch(&mut line, &mut buf)?;
            }
        }
        Ok(())
    }

    /// Write every packet due by now (spinning up to `spin_ns` for one about to be due).
    fn deliver_due(&mut self, line: &mut DelayLine) -> Result<u64, String> {
        let mut now = now_ns();
        while let Some(due) = line.next_due() {
            if due > now + self.spin_ns {
                break;
            }
            while now < due {
                std::hint::spin_loop();
                now = now_ns();
            }
            let p = line.pop_due(now).expect("due by now");
            self.stats.record_late(now - p.due);
            self.write(&p.data)?;
            now = now_ns();
        }
        self.stats.in_line.store(line.len() as u64, Relaxed);
        Ok(now)
    }

    fn write(&self, data: &[u8]) -> Result<(), String> {
        let n = unsafe { libc::write(self.dst, data.as_ptr().cast(), data.len()) };
        if n == data.len() as isize {
            DirStats::add(&self.stats.packets, 1);
            DirStats::add(&self.stats.bytes, data.len() as u64);
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            // The device went away (its namespace was deleted): nothing left to forward to.
            Some(libc::EBADF) | Some(libc::EBADFD) => Err(format!("writing to the TUN device failed: {err}")),
            // EIO while the far link is down, ENOBUFS/EAGAIN under memory pressure: the
            // packet is lost, as on a real wire; counted.
            _ => {
                DirStats::add(&self.stats.write_errors, 1);
                Ok(())
            }
        }
    }

    /// Sleep until the source has a packet, the stop eventfd fires, or `timeout_ns` passes.
    fn wait_readable(&self, timeout_ns: u64) -> Result<bool, String> {
        let mut fds = [
            libc::pollfd { fd: self.src, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: self.wake, events: libc::POLLIN, revents: 0 },
        ];
        let ts = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as _, tv_nsec: (timeout_ns % 1_000_000_000) as _ };
        let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        if rc < 0 {
            let err = std::io::Error::last_os_error();
            return if err.raw_os_error() == Some(libc::EINTR) { Ok(false) } else { Err(format!("ppoll failed: {err}")) };
        }
        if fds[0].revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
            return Err("the source TUN device reported an error (was it deleted?)".into());
        }
        Ok(fds[0].revents & libc::POLLIN != 0)
    }

    fn read_batch(&mut self, line: &mut DelayLine, buf: &mut [u8]) -> Result<(), String> {
        for _ in 0..READ_BATCH {
            let n = unsafe { libc::read(self.src, buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                let err = std::io::Error::last_os_error();
                return match err.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(()),
                    _ => Err(format!("reading from the TUN device failed: {err}")),
                };
            }
            if n == 0 {
                return Ok(());
            }
            let now = now_ns();
            let n = n as usize;
            let s = &self.stats;
            DirStats::add(&s.received, 1);
            DirStats::add(&s.received_bytes, n as u64);
            match self.link.admit(now, n) {
                Verdict::Deliver(due) => {
                    if line.push(due, buf[..n].to_vec()) {
                        s.max_line_packets.fetch_max(line.len() as u64, Relaxed);
                    } else {
                        DirStats::add(&s.dropped_line, 1);
                    }
                }
                Verdict::DropQueue => DirStats::add(&s.dropped_queue, 1),
                Verdict::DropLoss => DirStats::add(&s.dropped_loss, 1),
            }
            s.max_queue_bytes.fetch_max(self.link.backlog_bytes(now), Relaxed);
            if line.next_due().is_some_and(|due| due <= now + self.spin_ns) {
                return Ok(()); // something is due: deliver it before reading on
            }
        }
        Ok(())
    }
}

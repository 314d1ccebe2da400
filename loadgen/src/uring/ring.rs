//! One io_uring per engine thread, and the driver task that submits and reaps it.
//!
//! Batching: an operation queues its SQE and wakes the driver task if no flush is
//! pending. tokio's local run queue is FIFO, so the driver runs after every
//! connection that was ready has queued its SQE: one `io_uring_enter` submits them
//! all and reaps what completed. When nothing is ready the driver waits on the
//! ring's notification fd through tokio (`AsyncFd`), so timers and the rest of
//! the runtime work as on the epoll path.
//!
//! Ownership: an operation's slot (and any buffer it owns: a send's copy of the
//! request) lives in the ring, not in the connection,
//! until the kernel posts its CQE — a connection dropped with operations in flight
//! orphans them (cancelled, their slots freed when the CQE comes), so no memory the
//! kernel may still write is ever freed early.

use std::cell::{RefCell, RefMut};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use io_uring::{IoUring, cqueue, opcode, squeue, types};
use slab::Slab;
use tokio::io::unix::AsyncFd;

use super::bufs::BufRing;
use super::setup::{self, Notify};

/// user_data of cancellation requests: their CQEs are ignored.
const CANCEL: u64 = u64::MAX;

thread_local! {
    /// This engine thread's ring (None on the epoll path).
    static CURRENT: RefCell<Option<Rc<Ring>>> = const { RefCell::new(None) };
}

/// What a completed operation hands back to its owner.
pub struct Completion {
    pub res: i32,
    pub flags: u32,
    /// The buffer the operation owned (a send's bytes).
    pub buf: Option<Vec<u8>>,
}

enum State {
    InFlight(Option<Waker>),
    Done(Completion),
    /// A multishot receive: the completions not yet taken, and whether the last
    /// one (no IORING_CQE_F_MORE) has come.
    Multi { waker: Option<Waker>, queue: VecDeque<(i32, u32)>, ended: bool },
    /// Its owner is gone: free the slot (and recycle a provided buffer) on the CQE.
    Orphaned,
}

struct Op {
    state: State,
    /// Kept here until the CQE: the kernel may read or write it until then.
    buf: Option<Vec<u8>>,
}

struct Inner {
    uring: IoUring,
    ops: Slab<Op>,
    /// A flush is already scheduled: the driver task was woken and has not run yet.
    kicked: bool,
    driver: Option<Waker>,
}

pub struct Ring {
    // Field order is drop order: the notification fd's registration first, then
    // the ring (closing it ends the kernel's use of the buffers), then the buffers.
    notify: AsyncFd<NotifyFd>,
    inner: RefCell<Inner>,
    bufs: RefCell<BufRing>,
    /// Kept open while the ring may signal it (DEFER_TASKRUN set-up).
    _eventfd: Option<std::os::fd::OwnedFd>,
    /// Receives are multishot (stream.rs).
    multishot: bool,
}

struct NotifyFd(RawFd);

impl AsRawFd for NotifyFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

impl Ring {
    /// Builds this thread's ring (inside the thread's runtime: the notification fd
    /// registers with it) and makes it current. `connections`: this thread's
    /// share, which sizes the queues and the receive buffers.
    pub fn start(connections: u32, slow_readers: bool) -> io::Result<Rc<Ring>> {
        let built = setup::build(connections)?;
        let multishot = setup::multishot(slow_readers);
        let notify_fd = match built.notify {
            Notify::RingFd => built.uring.as_raw_fd(),
            Notify::EventFd(ref fd) => fd.as_raw_fd(),
        };
        let bufs = BufRing::register(&built.uring, built.buffers, built.buffer_bytes)?;
        let ring = Rc::new(Ring {
            // SAFETY: the fd stays open while the AsyncFd lives (field order above).
            notify: unsafe { AsyncFd::register_with_interest(NotifyFd(notify_fd), tokio::io::Interest::READABLE)? },
            inner: RefCell::new(Inner { uring: built.uring, ops: Slab::new(), kicked: false, driver: None }),
            bufs: RefCell::new(bufs),
            _eventfd: match built.notify {
                Notify::EventFd(fd) => Some(fd),
                Notify::RingFd => None,
            },
            multishot,
        });
        CURRENT.with(|c| *c.borrow_mut() = Some(ring.clone()));
        Ok(ring)
    }

    /// This thread's ring, if it runs the io_uring path.
    pub fn current() -> Option<Rc<Ring>> {
        CURRENT.with(|c| c.borrow().clone())
    }

    /// Forgets the thread's ring (the thread is done; the last `Rc` drops it).
    pub fn stop() {
        CURRENT.with(|c| c.borrow_mut().take());
    }

    /// Queues `entry` (built for user_data `key`, see `next_key`), owning `buf`
    /// until its CQE; the waker is the owner's.
    pub fn submit(&self, build: impl FnOnce(u64) -> squeue::Entry, buf: Option<Vec<u8>>, waker: &Waker) -> usize {
        let mut inner = self.inner.borrow_mut();
        let key = inner.ops.insert(Op { state: State::InFlight(Some(waker.clone())), buf });
        push(&mut inner, &build(key as u64));
        kick(&mut inner);
        key
    }

    /// Queues a multishot operation: its completions are taken with `poll_multi`.
    pub fn submit_multi(&self, build: impl FnOnce(u64) -> squeue::Entry, waker: &Waker) -> usize {
        let mut inner = self.inner.borrow_mut();
        let state = State::Multi { waker: Some(waker.clone()), queue: VecDeque::new(), ended: false };
        let key = inner.ops.insert(Op { state, buf: None });
        push(&mut inner, &build(key as u64));
        kick(&mut inner);
        key
    }

    /// The next completion of multishot operation `key`: Ready(Some((res, flags))),
    /// Ready(None) once its last completion was taken (the slot is then freed).
    pub fn poll_multi(&self, key: usize, waker: &Waker) -> Poll<Option<(i32, u32)>> {
        let mut inner = self.inner.borrow_mut();
        let State::Multi { waker: slot, queue, ended } = &mut inner.ops[key].state else {
            unreachable!("not a multishot operation")
        };
        if let Some(c) = queue.pop_front() {
            return Poll::Ready(Some(c));
        }
        if *ended {
            inner.ops.remove(key);
            return Poll::Ready(None);
        }
        match slot {
            Some(w) if w.will_wake(waker) => {}
            _ => *slot = Some(waker.clone()),
        }
        Poll::Pending
    }

    /// The operation's result if it completed (its slot is then freed), else the
    /// waker is kept for its CQE.
    pub fn poll_op(&self, key: usize, waker: &Waker) -> Poll<Completion> {
        let mut inner = self.inner.borrow_mut();
        if let State::InFlight(slot) = &mut inner.ops[key].state {
            match slot {
                Some(w) if w.will_wake(waker) => {}
                _ => *slot = Some(waker.clone()),
            }
            return Poll::Pending;
        }
        let op = inner.ops.remove(key);
        let State::Done(mut c) = op.state else { unreachable!("an orphaned operation has no owner to poll it") };
        c.buf = op.buf;
        Poll::Ready(c)
    }

    /// The owner is gone: cancel the operation if it is still in flight (a receive
    /// would otherwise hold the socket open: the server must see the close), and
    /// drop what it returned if it already completed.
    pub fn orphan(&self, key: usize) {
        let mut inner = self.inner.borrow_mut();
        if let State::Multi { queue, ended, .. } = &mut inner.ops[key].state {
            let held: Vec<u16> = queue.drain(..).filter_map(|(_, flags)| cqueue::buffer_select(flags)).collect();
            let ended = *ended;
            if ended {
                inner.ops.remove(key);
            } else {
                inner.ops[key].state = State::Orphaned;
                let cancel = opcode::AsyncCancel::new(key as u64).build().user_data(CANCEL);
                push(&mut inner, &cancel);
                kick(&mut inner);
            }
            drop(inner);
            let mut bufs = self.bufs.borrow_mut();
            for bid in held {
                bufs.recycle(bid);
            }
            return;
        }
        match inner.ops[key].state {
            State::InFlight(_) => {
                inner.ops[key].state = State::Orphaned;
                let cancel = opcode::AsyncCancel::new(key as u64).build().user_data(CANCEL);
                push(&mut inner, &cancel);
                kick(&mut inner);
            }
            State::Done(_) => {
                let op = inner.ops.remove(key);
                drop(inner);
                if let State::Done(c) = op.state
                    && let Some(bid) = cqueue::buffer_select(c.flags)
                {
                    self.bufs.borrow_mut().recycle(bid);
                }
            }
            State::Orphaned | State::Multi { .. } => {}
        }
    }

    /// Submits what is queued now. A connection calls it before its fd closes:
    /// a queued SQE names the fd by number, and a socket opened next may get the
    /// same number — submitted later, the operation would go to that socket.
    pub fn submit_queued(&self) {
        enter(&self.inner.borrow().uring);
    }

    pub fn multishot(&self) -> bool {
        self.multishot
    }

    pub fn bufs(&self) -> RefMut<'_, BufRing> {
        self.bufs.borrow_mut()
    }

    /// The driver task: runs for the thread's whole life (dropped with its LocalSet).
    pub async fn drive(self: Rc<Ring>) {
        std::future::poll_fn(|cx| self.poll_drive(cx)).await
    }

    fn poll_drive(&self, cx: &mut Context<'_>) -> Poll<()> {
        {
            let mut inner = self.inner.borrow_mut();
            inner.kicked = false;
            match &inner.driver {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => inner.driver = Some(cx.waker().clone()),
            }
        }
        loop {
            self.flush_and_reap();
            match self.notify.poll_read_ready(cx) {
                // Edge-triggered: clear, then reap again, so nothing that completed
                // between the reap and the clear waits for another edge.
                Poll::Ready(Ok(mut guard)) => guard.clear_ready(),
                Poll::Ready(Err(e)) => panic!("io_uring notification fd failed: {e}"),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// One `io_uring_enter` if anything is queued or the kernel has deferred
    /// completions to run, then every CQE: owners woken, orphans freed.
    fn flush_and_reap(&self) {
        let mut inner = self.inner.borrow_mut();
        let inner = &mut *inner;
        enter(&inner.uring);
        let mut recycle: Vec<u16> = Vec::new();
        loop {
            let mut cq = inner.uring.completion();
            cq.sync();
            if cq.is_empty() {
                break;
            }
            for cqe in &mut cq {
                let key = cqe.user_data();
                if key == CANCEL {
                    continue;
                }
                let op = &mut inner.ops[key as usize];
                if let State::Multi { waker, queue, ended } = &mut op.state {
                    queue.push_back((cqe.result(), cqe.flags()));
                    *ended = !cqueue::more(cqe.flags());
                    if let Some(w) = waker.take() {
                        w.wake();
                    }
                    continue;
                }
                match std::mem::replace(&mut op.state, State::Orphaned) {
                    State::InFlight(waker) => {
                        op.state = State::Done(Completion { res: cqe.result(), flags: cqe.flags(), buf: None });
                        if let Some(w) = waker {
                            w.wake();
                        }
                    }
                    State::Orphaned => {
                        if let Some(bid) = cqueue::buffer_select(cqe.flags()) {
                            recycle.push(bid);
                        }
                        // A multishot receive sends more until its last CQE.
                        if !cqueue::more(cqe.flags()) {
                            inner.ops.remove(key as usize);
                        }
                    }
                    State::Done(_) | State::Multi { .. } => unreachable!("one CQE per single-shot operation"),
                }
            }
        }
        if !recycle.is_empty() {
            let mut bufs = self.bufs.borrow_mut();
            for bid in recycle {
                bufs.recycle(bid);
            }
        }
    }
}

/// Submits what is queued (and runs deferred task work) when there is a reason to
/// enter the kernel; transient refusals are retried by the next pass.
fn enter(uring: &IoUring) {
    // SAFETY: only this thread touches the ring.
    let (queued, taskrun) = unsafe {
        let sq = uring.submission_shared();
        (sq.len(), sq.taskrun())
    };
    if queued == 0 && !taskrun {
        return;
    }
    match uring.submit() {
        Ok(_) => {}
        // EBUSY: the CQ is full (reaped below, then retried); EINTR: a signal.
        Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY) | Some(libc::EINTR) | Some(libc::EAGAIN)) => {}
        Err(e) => panic!("io_uring_enter failed: {e}"),
    }
}

fn push(inner: &mut Inner, entry: &squeue::Entry) {
    loop {
        // SAFETY: the entry's buffers are owned by its slot until its CQE.
        if unsafe { inner.uring.submission().push(entry) }.is_ok() {
            return;
        }
        // The SQ is full (a burst of connections): submit now, then retry.
        enter(&inner.uring);
    }
}

fn kick(inner: &mut Inner) {
    if !inner.kicked {
        inner.kicked = true;
        if let Some(w) = &inner.driver {
            w.wake_by_ref();
        }
    }
}

impl Drop for Ring {
    /// Cancels whatever is still in flight and waits (bounded) for the kernel to
    /// let go of it before the buffers are freed.
    fn drop(&mut self) {
        let inner = self.inner.get_mut();
        let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::any()).build().user_data(CANCEL);
        push(inner, &cancel);
        let timeout = types::Timespec::new().nsec(50_000_000);
        for _ in 0..40 {
            let in_flight = inner.ops.iter().any(|(_, op)| match &op.state {
                State::InFlight(_) | State::Orphaned => true,
                State::Multi { ended, .. } => !ended,
                State::Done(_) => false,
            });
            if !in_flight {
                return;
            }
            let args = types::SubmitArgs::new().timespec(&timeout);
            let _ = inner.uring.submitter().submit_with_args(1, &args);
            for cqe in inner.uring.completion() {
                if cqe.user_data() != CANCEL && !cqueue::more(cqe.flags()) {
                    inner.ops.remove(cqe.user_data() as usize);
                }
            }
        }
        // Still in flight after 2 s: leak the buffers rather than free memory the
        // kernel may write.
        self.bufs.get_mut().leak();
    }
}

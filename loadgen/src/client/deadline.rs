//! Per-request timeouts without a timer operation per request.
//!
//! `tokio::time::timeout` registers and removes a timer-wheel entry for every
//! request. Here each connection owns one long-lived `Sleep` that is only ever
//! moved *later*, lazily: it stays armed at an older (earlier) deadline, and when
//! it fires we compare with the current request's real deadline and re-arm. As
//! deadlines only grow (request start + timeout), the timer fires at most once per
//! timeout period per connection instead of once per request — the same trick as
//! the kernel's lazy TCP retransmit timers.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use tokio::time::{Instant, Sleep, sleep_until};

pub struct Watchdog {
    sleep: Pin<Box<Sleep>>,
}

impl Default for Watchdog {
    fn default() -> Self {
        Self::new()
    }
}

impl Watchdog {
    pub fn new() -> Self {
        // Armed far away; the first `run` pulls it in.
        let far = Instant::now() + std::time::Duration::from_secs(86_400 * 365);
        Watchdog { sleep: Box::pin(sleep_until(far)) }
    }

    /// Runs `fut` to completion, or returns None once `deadline` has passed.
    ///
    /// A plain function returning a future of its own (`Guarded`), not an `async fn`:
    /// an async fn keeps its argument `fut` and the pinned local it is moved into as
    /// two fields, so every request's whole future was held twice in each
    /// connection's task (10,000 connections: bench/engine-memory's 25 MB bar).
    pub fn run<F: Future>(&mut self, deadline: Instant, fut: F) -> Guarded<'_, F> {
        // The armed deadline must never be later than the real one.
        if self.sleep.deadline() > deadline {
            self.sleep.as_mut().reset(deadline);
        }
        Guarded { fut, sleep: &mut self.sleep, deadline }
    }
}

pin_project! {
    /// `fut` under the watchdog's timer (`Watchdog::run`).
    pub struct Guarded<'a, F> {
        #[pin]
        fut: F,
        sleep: &'a mut Pin<Box<Sleep>>,
        deadline: Instant,
    }
}

impl<F: Future> Future for Guarded<'_, F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(out) = this.fut.poll(cx) {
            return Poll::Ready(Some(out));
        }
        loop {
            match this.sleep.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(()) if Instant::now() >= *this.deadline => return Poll::Ready(None),
                // Fired for an earlier request: re-arm for this one and poll again
                // so the timer registers our waker.
                Poll::Ready(()) => this.sleep.as_mut().reset(*this.deadline),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap()
    }

    #[test]
    fn completes_before_deadline() {
        rt().block_on(async {
            let mut w = Watchdog::new();
            let d = Instant::now() + Duration::from_millis(200);
            assert_eq!(w.run(d, async { 7 }).await, Some(7));
        });
    }

    #[test]
    fn times_out_and_rearms_for_later_deadlines() {
        rt().block_on(async {
            let mut w = Watchdog::new();
            let start = Instant::now();
            let d1 = start + Duration::from_millis(30);
            assert_eq!(w.run(d1, std::future::pending::<()>()).await, None);
            assert!(Instant::now() >= d1);
            // Sleep armed at d1 (already fired); a later deadline must not fire early.
            let d2 = Instant::now() + Duration::from_millis(50);
            assert_eq!(w.run(d2, std::future::pending::<()>()).await, None);
            assert!(Instant::now() >= d2);
            // Work that finishes before the (lazy) timer is still returned.
            let d3 = Instant::now() + Duration::from_millis(200);
            let r = w.run(d3, async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                1
            });
            assert_eq!(r.await, Some(1));
        });
    }
}

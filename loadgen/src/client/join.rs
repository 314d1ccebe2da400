//! Running a few futures of one task concurrently (a page's fetchers, the
//! stream slots of an HTTP/2 connection).

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;

/// Runs futures concurrently on this task and returns their outputs in order.
/// (Page views are not the hot path: one small allocation per page is fine.)
pub async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut pending = false;
        for (fut, out) in futures.iter_mut().zip(outputs.iter_mut()) {
            if out.is_none() {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending { Poll::Pending } else { Poll::Ready(()) }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("every future completed")).collect()
}

//! The HTTP/2 client connection of the direct loop (loadgen/src/protocol/h2/client.rs,
//! with frame.rs and hpack.rs): a server's bytes fed read by read to a connection
//! with streams 1, 3 and 5 open, as the engine feeds it the plaintext of its records.
//! Checked after every read, and at the end against the same bytes in one read.

use super::{Finding, ensure};
use crate::case::Case;
use crate::protocol::h2::client::{Connection, Event};
use crate::protocol::h2::frame;
use crate::protocol::h2::hpack;
use crate::protocol::reading::MAX_HEAD_BYTES;

/// A frame's start waiting for its rest, and a header block in pieces (its bound).
const HELD_BOUND: usize = frame::HEAD + frame::MAX_FRAME + MAX_HEAD_BYTES;

fn connection(case: &Case) -> Connection {
    let mut c = Connection::new();
    // flag 0: the requests name the table the first one filled.
    let blocks = hpack::encode_request("GET", "https", "127.0.0.1:8443", "/", &[], case.flag(0));
    for _ in 0..3 {
        c.request(&blocks);
    }
    c
}

/// Feeds `reads` of `bytes`; the events as text, and the error that stopped it.
fn feed(case: &Case, reads: &[(usize, usize)]) -> Result<(Vec<String>, Result<(), String>, usize), Finding> {
    let mut c = connection(case);
    let mut seen = Vec::new();
    for &(start, end) in reads {
        let result = c.receive(&case.bytes[start..end], |e| seen.push(describe(&e)));
        ensure(c.held() <= HELD_BOUND, "unbounded", || format!("{} bytes held (bound {HELD_BOUND})", c.held()))?;
        if let Err(e) = result {
            return Ok((seen, Err(format!("{e:?}")), end));
        }
    }
    Ok((seen, Ok(()), reads.last().map_or(0, |r| r.1)))
}

fn describe(e: &Event) -> String {
    match e {
        Event::Field { stream, name, value } => format!("field {stream} {name:?}={value:?}"),
        other => format!("{other:?}"),
    }
}

pub fn check(case: &Case) -> Result<(), Finding> {
    let reads = case.reads();
    let (cut, cut_result, end) = feed(case, &reads)?;
    // Split invariance: the bytes up to where it stopped, in one read, say the same.
    let (whole, whole_result, _) = feed(case, &[(0, end)])?;
    ensure(cut == whole && cut_result == whole_result, "split", || {
        format!("bytes 0..{end}: in pieces {cut:?} {cut_result:?}, in one read {whole:?} {whole_result:?}")
    })?;
    // What a stream may say, in order: its status, fields and body, then one end or reset.
    let mut done = std::collections::HashSet::new();
    let mut responded = std::collections::HashSet::new();
    for e in &cut {
        let stream: u32 = e.split(|c: char| !c.is_ascii_digit()).find(|w| !w.is_empty()).and_then(|w| w.parse().ok()).unwrap_or(0);
        if e.starts_with("GoAway") {
            continue;
        }
        ensure(!done.contains(&stream), "order", || format!("{e} after stream {stream} ended: {cut:?}"))?;
        ensure([1, 3, 5].contains(&stream), "order", || format!("{e} on a stream never opened"))?;
        if e.starts_with("Status") {
            ensure(responded.insert(stream), "order", || format!("two heads on stream {stream}: {cut:?}"))?;
        } else if e.starts_with("field") || e.starts_with("Data") {
            ensure(responded.contains(&stream), "order", || format!("{e} before its head: {cut:?}"))?;
        } else if e.starts_with("End") || e.starts_with("Reset") {
            done.insert(stream);
        }
    }
    Ok(())
}

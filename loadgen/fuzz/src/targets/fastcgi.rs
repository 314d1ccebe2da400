//! The FastCGI response reader (loadgen/src/protocol/fastcgi/response.rs), fed a
//! connection's records read by read, with an independent walk of the records
//! for what a completed response must be.

use std::rc::Rc;

use super::{Finding, Said, ensure, same_at_once};
use crate::case::Case;
use crate::protocol::fastcgi::response::FcgiReader;
use crate::protocol::reading::{MAX_HEAD_BYTES, RETAINED_BYTES};

const HEAD_BOUND: usize = 4 * (MAX_HEAD_BYTES + 1);
const IDLE_BOUND: usize = 2 * RETAINED_BYTES;

fn reader(case: &Case) -> FcgiReader {
    let watch: Vec<String> = if case.flag(1) { vec!["Status".into(), "X-Cache".into()] } else { Vec::new() };
    let mut r = FcgiReader::new(case.flag(2), Rc::from(watch));
    r.start();
    r
}

pub fn check(case: &Case) -> Result<(), Finding> {
    let keep_conn = case.flag(2);
    let bytes = &case.bytes[..];
    let mut r = reader(case);
    let mut response_start = 0;
    for (start, end) in case.reads() {
        let result = r.feed(&bytes[start..end]);
        ensure(r.buffered_capacity() <= HEAD_BOUND, "unbounded", || {
            format!("the reader holds {} bytes for a CGI head (bound {HEAD_BOUND})", r.buffered_capacity())
        })?;
        let Some(cut) = Said::of(result, r.body_bytes()) else { continue };
        let mut whole = reader(case);
        let one_read = whole.feed(&bytes[response_start..end]);
        same_at_once(&cut, Said::of(one_read, whole.body_bytes()), response_start, end)?;
        let Said::Done { close, body, .. } = cut else { return Ok(()) };
        let (used, ref_body) = reference(&bytes[response_start..end])
            .map_err(|why| Finding::new("framing", format!("bytes {response_start}..{end} completed, but {why}")))?;
        let trailing = response_start + used < end;
        ensure(body == ref_body && close == (trailing || !keep_conn), "framing", || {
            format!("bytes {response_start}..{end}: body {body} close {close}, reference {ref_body}, trailing {trailing}")
        })?;
        if close {
            return Ok(());
        }
        response_start = end;
        r.start();
        ensure(r.buffered_capacity() <= IDLE_BOUND, "retained", || {
            format!("{} bytes kept between responses (bound {IDLE_BOUND})", r.buffered_capacity())
        })?;
    }
    Ok(())
}

/// The records of one complete response at the start of `b`, walked by their
/// lengths: (bytes up to the end of END_REQUEST, body length = STDOUT after the
/// CGI head), or why it is not a complete response (spec §3.3, §5.5).
fn reference(b: &[u8]) -> Result<(usize, u64), String> {
    let mut stdout = Vec::new();
    let mut at = 0;
    loop {
        let h = b.get(at..at + 8).ok_or("the records end before END_REQUEST")?;
        let (kind, id) = (h[1], u16::from_be_bytes([h[2], h[3]]));
        let content = usize::from(u16::from_be_bytes([h[4], h[5]]));
        let end = at + 8 + content + usize::from(h[6]);
        if h[0] != 1 || id != 1 {
            return Err(format!("a record of version {} for request {id}", h[0]));
        }
        let data = b.get(at + 8..at + 8 + content).ok_or("a record longer than the input")?;
        match kind {
            6 => stdout.extend_from_slice(data),
            7 => {}
            3 if content == 8 => {
                if data[4] != 0 {
                    return Err(format!("END_REQUEST with protocol status {}", data[4]));
                }
                if end > b.len() {
                    return Err("END_REQUEST's padding is missing".into());
                }
                let head = cgi_head_len(&stdout).ok_or("STDOUT has no CGI head")?;
                return Ok((end, (stdout.len() - head) as u64));
            }
            _ => return Err(format!("a record of type {kind} with {content} bytes")),
        }
        at = end;
    }
}

/// Length of the CGI head at the start of STDOUT: up to and including its empty
/// line (CRLF or LF endings; an empty first line is an empty head).
fn cgi_head_len(stdout: &[u8]) -> Option<usize> {
    let mut line_start = 0;
    for (i, &c) in stdout.iter().enumerate() {
        if c == b'\n' {
            let line = &stdout[line_start..i];
            if line.is_empty() || line == b"\r" {
                return Some(i + 1);
            }
            line_start = i + 1;
        }
    }
    None
}

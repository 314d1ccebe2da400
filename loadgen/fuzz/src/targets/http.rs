//! The HTTP/1.1 response reader (loadgen/src/protocol/http/response.rs), fed a
//! connection's bytes read by read, with an independent reference for what a
//! completed response must be.

use std::rc::Rc;

use super::{Finding, Said, ensure, same_at_once};
use crate::case::Case;
use crate::protocol::http::response::ResponseReader;
use crate::protocol::reading::{MAX_HEAD_BYTES, MAX_HEADERS, ParseError, Progress, RETAINED_BYTES};

/// A head being received: at most MAX_HEAD_BYTES + 1 bytes, in a Vec that may have
/// doubled; the captured header values of one head at most as much again.
const HEAD_BOUND: usize = 4 * (MAX_HEAD_BYTES + 1);
/// Between responses: the retained buffers only.
const IDLE_BOUND: usize = 2 * RETAINED_BYTES;

fn reader(case: &Case) -> ResponseReader {
    // Capturing headers (--count-header) exercises the capture buffers too.
    let watch: Vec<String> = if case.flag(1) { vec!["X-Cache".into(), "content-length".into()] } else { Vec::new() };
    let mut r = ResponseReader::with_captures(Rc::from(watch), Rc::default());
    r.start(case.flag(0));
    r
}

pub fn check(case: &Case) -> Result<(), Finding> {
    let head_request = case.flag(0);
    let bytes = &case.bytes[..];
    let mut r = reader(case);
    let mut response_start = 0;
    let mut fed = 0u64;
    for (start, end) in case.reads() {
        let read = &bytes[start..end];
        let result = if case.flag(2) { feed_discarding(&mut r, read) } else { r.feed(read) };
        fed += (end - start) as u64;
        ensure(r.buffered_capacity() <= HEAD_BOUND, "unbounded", || {
            format!("the reader holds {} bytes for a head (bound {HEAD_BOUND})", r.buffered_capacity())
        })?;
        ensure(r.scanned <= 2 * fed + 64, "quadratic", || format!("{} bytes scanned for {fed} fed", r.scanned))?;
        let Some(cut) = Said::of(result, r.body_bytes()) else { continue };
        let mut whole = reader(case);
        let one_read = whole.feed(&bytes[response_start..end]);
        same_at_once(&cut, Said::of(one_read, whole.body_bytes()), response_start, end)?;
        match cut {
            Said::Done { status, body, .. } => {
                let (ref_status, ref_body) = reference(&bytes[response_start..end], head_request)
                    .map_err(|why| Finding::new("framing", format!("bytes {response_start}..{end} completed, but {why}")))?;
                ensure((status, body) == (ref_status, ref_body), "framing", || {
                    format!("bytes {response_start}..{end}: status {status} body {body}, reference {ref_status} {ref_body}")
                })?;
                response_start = end;
                r.start(head_request);
                ensure(r.buffered_capacity() <= IDLE_BOUND, "retained", || {
                    format!("{} bytes kept between responses (bound {IDLE_BOUND})", r.buffered_capacity())
                })?;
            }
            // The engine closes the connection after an error.
            Said::Failed(_) => return Ok(()),
        }
    }
    // The server closed the connection.
    if let Ok(c) = r.eof() {
        let mut whole = reader(case);
        let _ = whole.feed(&bytes[response_start..]);
        let at_once = whole.eof().map(|w| (w, whole.body_bytes()));
        ensure(at_once == Ok((c, r.body_bytes())), "split", || {
            format!("at EOF: read in pieces {c:?} body {}, in one read {at_once:?}", r.body_bytes())
        })?;
        let body = until_close_body(&bytes[response_start..], head_request)
            .map_err(|why| Finding::new("framing", format!("completed at EOF, but {why}")))?;
        ensure(body == r.body_bytes(), "framing", || {
            format!("at EOF: body {}, reference {body}", r.body_bytes())
        })?;
    }
    Ok(())
}

/// A read as the engine takes it while it discards bodies (client/exchange.rs): the
/// body bytes the reader allows go by unseen (`skipped`), the rest is fed. The
/// verdicts and counts must be those of feeding every byte (checked against the
/// same bytes in one read, and against the reference).
fn feed_discarding(r: &mut ResponseReader, mut data: &[u8]) -> Result<Progress, ParseError> {
    loop {
        let k = r.skippable().min(data.len() as u64) as usize;
        if k == 0 {
            return r.feed(data);
        }
        let progress = r.skipped(k as u64);
        data = &data[k..];
        match progress {
            // Bytes after a framed end: what feeding them would say.
            Progress::Done(_) if !data.is_empty() => return Err(ParseError::TrailingBytes),
            _ if data.is_empty() => return Ok(progress),
            _ => {}
        }
    }
}

/// One parsed head of the reference: its length, status and framing headers.
struct RefHead {
    len: usize,
    status: u16,
    content_length: Option<u64>,
    chunked: Option<bool>,
}

/// Parses the next final head at the start of `bytes`, skipping 1xx heads;
/// returns where the body starts and the head.
fn final_head(bytes: &[u8]) -> Result<(usize, RefHead), String> {
    let mut at = 0;
    loop {
        let head = one_head(&bytes[at..])?;
        at += head.len;
        if !(100..200).contains(&head.status) {
            return Ok((at, head));
        }
    }
}

fn one_head(bytes: &[u8]) -> Result<RefHead, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        other => return Err(format!("the reference finds no complete head: {other:?}")),
    };
    let status = response.code.unwrap_or(0);
    let mut content_length = None;
    let mut chunked = None;
    for h in response.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let text = std::str::from_utf8(h.value).map_err(|_| "a Content-Length that is not text")?.trim();
            let n: u64 = text.parse().map_err(|_| format!("Content-Length {text:?}"))?;
            if text.starts_with('+') || content_length.is_some_and(|c| c != n) {
                return Err(format!("Content-Length {text:?}"));
            }
            content_length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let last = h.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
            chunked = Some(last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        }
    }
    Ok(RefHead { len, status, content_length, chunked })
}

/// The reference reading of one complete response that spans `bytes` exactly:
/// (status, body length), or why it is not one (RFC 9112 §6.3).
fn reference(bytes: &[u8], head_request: bool) -> Result<(u16, u64), String> {
    let (body_start, head) = final_head(bytes)?;
    let body = &bytes[body_start..];
    let expect_len = |len: usize| -> Result<(u16, u64), String> {
        if body.len() == len { Ok((head.status, len as u64)) } else { Err(format!("{} bytes follow the head, not {len}", body.len())) }
    };
    if head_request || head.status == 204 || head.status == 304 {
        return expect_len(0);
    }
    match (head.chunked, head.content_length) {
        (Some(true), _) => {
            let (used, n) = chunked_body(body)?;
            if used == body.len() { Ok((head.status, n)) } else { Err(format!("the chunks end {} bytes early", body.len() - used)) }
        }
        (Some(false), _) | (None, None) => Err("its body runs until the connection closes".into()),
        (None, Some(len)) => expect_len(usize::try_from(len).map_err(|_| "a length over usize")?),
    }
}

/// A body framed by the close: what follows the head (or an error if framed).
fn until_close_body(bytes: &[u8], head_request: bool) -> Result<u64, String> {
    if bytes.is_empty() {
        return Ok(0);
    }
    let (body_start, head) = final_head(bytes)?;
    let framed = head_request || head.status == 204 || head.status == 304 || head.chunked == Some(true) || (head.chunked.is_none() && head.content_length.is_some());
    if framed { Err("the response is framed, not ended by the close".into()) } else { Ok((bytes.len() - body_start) as u64) }
}

/// A chunked body read line by line (the reader's grammar, written again
/// another way): (bytes used, decoded body length). Lines end in LF, optionally
/// preceded by one CR; a size is 1 to 15 hex digits, then optionally `;`, space
/// or tab and anything up to 4 KB; chunk data ends in CRLF or LF; trailer lines
/// (64 KB at most in all) until an empty line.
fn chunked_body(b: &[u8]) -> Result<(usize, u64), String> {
    let (mut at, mut body) = (0, 0u64);
    loop {
        let (line, next) = line_at(b, at)?;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let digits = line.iter().take_while(|c| c.is_ascii_hexdigit()).count();
        let rest = &line[digits..];
        let rest_ok = rest.first().is_none_or(|c| b"; \t".contains(c)) && !rest.contains(&b'\r') && rest.len() <= 4097;
        if digits == 0 || digits > 15 || !rest_ok {
            return Err(format!("a bad chunk-size line {:?}", String::from_utf8_lossy(line)));
        }
        let size = u64::from_str_radix(std::str::from_utf8(&line[..digits]).unwrap(), 16).unwrap();
        at = next;
        if size == 0 {
            let mut trailers = 0;
            loop {
                let (line, next) = line_at(b, at)?;
                if line.is_empty() || line == b"\r" {
                    return Ok((next, body));
                }
                if line[0] == b'\r' {
                    return Err("a trailer line starting with CR".into());
                }
                trailers += line.len() + 1;
                if trailers > 64 * 1024 {
                    return Err("trailers over 64 KB".into());
                }
                at = next;
            }
        }
        let end = usize::try_from(size).ok().and_then(|s| at.checked_add(s)).filter(|&e| e <= b.len()).ok_or("a chunk longer than the input")?;
        body += size;
        at = match &b[end..] {
            [b'\r', b'\n', ..] => end + 2,
            [b'\n', ..] => end + 1,
            _ => return Err("chunk data not followed by a line end".into()),
        };
    }
}

/// The line starting at `at` (without its LF) and where the next one starts.
fn line_at(b: &[u8], at: usize) -> Result<(&[u8], usize), String> {
    let lf = b[at..].iter().position(|&c| c == b'\n').ok_or("a chunk line without its end")?;
    Ok((&b[at..at + lf], at + lf + 1))
}

//! Mutations: byte-level ones (bit flips, inserts, deletions, repeats,
//! truncation, splices with another corpus entry, dictionary tokens) and
//! protocol-aware ones that aim at the readers' framing and bounds
//! (Content-Length and chunk-size edits, repeated and lengthened header lines;
//! FastCGI record headers). A case gets 1 to 4 of them, and sometimes a new
//! split seed (other read boundaries and reader options).

use crate::case::Case;
use crate::rng::Rng;

/// Inputs are kept below this: far enough past the readers' 64 KB bounds.
pub const MAX_INPUT: usize = 256 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grammar {
    Http,
    FastCgi,
    H2,
}

/// Tokens that matter to the readers (libFuzzer's dictionaries, in short).
const HTTP_TOKENS: &[&[u8]] = &[
    b"\r\n", b"\n", b"\r\n\r\n", b": ", b";", b",", b" ", b"\t", b"0", b"0\r\n\r\n", b"HTTP/1.1 ", b"HTTP/1.0 ",
    b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 204 No Content\r\n", b"HTTP/1.1 304 NM\r\n",
    b"HTTP/1.1 101 Switching\r\n", b"Content-Length: ", b"content-length:", b"Transfer-Encoding: chunked\r\n",
    b"Transfer-Encoding: gzip\r\n", b"Connection: close\r\n", b"Connection: keep-alive\r\n", b"X-Cache: HIT\r\n",
    b"ffffffffffffffff", b"7fffffffffffffff", b"18446744073709551616", b"-1", b"1x",
];
/// Header lines that change how a response is framed or counted.
const HEADER_LINES: &[&[u8]] = &[
    b"Content-Length: 0\r\n", b"Content-Length: 5\r\n", b"Transfer-Encoding: chunked\r\n", b"Transfer-Encoding: gzip\r\n",
    b"Connection: close\r\n", b"Connection: keep-alive\r\n", b"X-Cache: HIT\r\n",
];
const FCGI_TOKENS: &[&[u8]] = &[
    b"\r\n", b"\n", b"\r\n\r\n", b": ", b"Status: ", b"Status: 404 Not Found\r\n", b"Status: 99\r\n", b"Status: 200\r\n",
    b"Location: /x\r\n", b"Content-type: text/html\r\n", b"X-Cache: MISS\r\n",
    &[1, 6, 0, 1, 0, 0, 0, 0], &[1, 7, 0, 1, 0, 4, 4, 0], &[1, 3, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    &[1, 3, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0], &[1, 10, 0, 0, 0, 0, 0, 0], &[0xff, 0xff],
];

/// HTTP/2: frame heads (SETTINGS, its ACK, HEADERS, CONTINUATION, DATA, PING,
/// GOAWAY, RST_STREAM on streams 1 and 3), HPACK bytes (indexed, literals, a size
/// update, a Huffman string's start).
const H2_TOKENS: &[&[u8]] = &[
    &[0, 0, 0, 4, 0, 0, 0, 0, 0], &[0, 0, 0, 4, 1, 0, 0, 0, 0], &[0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1],
    &[0, 0, 1, 1, 4, 0, 0, 0, 1, 0x88], &[0, 0, 1, 1, 5, 0, 0, 0, 3, 0x8d], &[0, 0, 1, 9, 4, 0, 0, 0, 1, 0xbe],
    &[0, 0, 2, 0, 1, 0, 0, 0, 1, b'o', b'k'], &[0, 0, 8, 6, 0, 0, 0, 0, 0], &[0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0],
    &[0, 0, 4, 3, 0, 0, 0, 0, 3, 0, 0, 0, 8], &[0x88], &[0x40, 1, b'x', 1, b'y'], &[0x3f, 0xe1, 0x1f], &[0x20], &[0x41, 0x8c, 0xf1, 0xe3],
    &[0xbe], &[0xff, 0xff, 0xff, 0x7f], &[0x7f, 0xff, 0xff],
];

/// A mutated copy of `base`; `other` is another corpus entry to splice with.
pub fn mutate(base: &Case, other: &Case, grammar: Grammar, rng: &mut Rng) -> Case {
    let mut case = base.clone();
    for _ in 0..1 + rng.below(4) {
        match rng.below(16) {
            0 => case.split = rng.next(),
            1..=6 => bytes(&mut case.bytes, rng, grammar),
            7 => splice(&mut case.bytes, &other.bytes, rng),
            _ => match grammar {
                Grammar::Http => http(&mut case.bytes, rng),
                Grammar::FastCgi => fastcgi(&mut case.bytes, rng),
                Grammar::H2 => h2(&mut case.bytes, rng),
            },
        }
    }
    case.bytes.truncate(MAX_INPUT);
    case
}

fn bytes(b: &mut Vec<u8>, rng: &mut Rng, grammar: Grammar) {
    let at = rng.below(b.len() + 1);
    match rng.below(9) {
        0 if !b.is_empty() => {
            let i = rng.below(b.len());
            b[i] ^= 1 << rng.below(8);
        }
        1 if !b.is_empty() => {
            let i = rng.below(b.len());
            b[i] = *rng.pick(b"\r\n:; \t0123456789abcdefABCDEF\x00\xff");
        }
        2 => {
            let n = rng.size(8);
            let fresh: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            b.splice(at..at, fresh);
        }
        3 if at < b.len() => {
            let end = at + rng.size(b.len() - at);
            b.drain(at..end);
        }
        4 if at < b.len() => {
            // Repeat a range: how huge heads, many headers and long lines arise.
            let end = at + rng.size((b.len() - at).min(4096));
            let piece = b[at..end].to_vec();
            let times = rng.size(MAX_INPUT / piece.len().max(1)).min(4096);
            let insert: Vec<u8> = piece.iter().copied().cycle().take(piece.len() * times).collect();
            b.splice(end..end, insert);
        }
        5 => b.truncate(at),
        6 | 7 => {
            let tokens = match grammar {
                Grammar::Http => HTTP_TOKENS,
                Grammar::FastCgi => FCGI_TOKENS,
                Grammar::H2 => H2_TOKENS,
            };
            let token = rng.pick(tokens);
            if rng.one_in(2) || at + token.len() > b.len() {
                b.splice(at..at, token.iter().copied());
            } else {
                b[at..at + token.len()].copy_from_slice(token);
            }
        }
        _ => {
            // A run of one byte: long lines and values, endless-looking fields.
            let n = rng.size(70_000);
            let byte = *rng.pick(b"ax0 \r\n:");
            b.splice(at..at, std::iter::repeat_n(byte, n));
        }
    }
}

/// The start of one input followed by the end of another.
fn splice(b: &mut Vec<u8>, other: &[u8], rng: &mut Rng) {
    let cut = rng.below(b.len() + 1);
    let from = rng.below(other.len() + 1);
    b.truncate(cut);
    b.extend_from_slice(&other[from..]);
}

/// Positions of `needle` in `hay`, case-insensitively.
fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    hay.windows(needle.len()).enumerate().filter(|(_, w)| w.eq_ignore_ascii_case(needle)).map(|(i, _)| i).collect()
}

/// A number that stresses a length: off by one, zero, huge, or not a number.
fn number(old: u64, rng: &mut Rng, hex: bool) -> Vec<u8> {
    let n = match rng.below(8) {
        0 => old.wrapping_add(1),
        1 => old.saturating_sub(1),
        2 => 0,
        3 => old.wrapping_mul(2),
        4 => rng.next() >> rng.below(64),
        5 => u64::MAX,
        6 => return b"1x".to_vec(),
        _ => return if hex { b"fffffffffffffffff".to_vec() } else { b"99999999999999999999".to_vec() },
    };
    if hex { format!("{n:x}").into_bytes() } else { n.to_string().into_bytes() }
}

fn http(b: &mut Vec<u8>, rng: &mut Rng) {
    match rng.below(6) {
        0 => {
            // Edit a Content-Length value.
            let hits = find_all(b, b"content-length:");
            if let Some(&at) = hits.get(rng.below(hits.len().max(1))) {
                let start = at + b"content-length:".len();
                let digits = b[start..].iter().take_while(|c| c.is_ascii_digit() || **c == b' ').count();
                let old = std::str::from_utf8(&b[start..start + digits]).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
                let new = [b" ".as_slice(), &number(old, rng, false)].concat();
                b.splice(start..start + digits, new);
            }
        }
        1 => {
            // Edit a chunk size: hex digits at the start of a line.
            let lines: Vec<usize> = (0..b.len()).filter(|&i| i > 0 && b[i - 1] == b'\n' && b[i].is_ascii_hexdigit()).collect();
            if let Some(&at) = lines.get(rng.below(lines.len().max(1))) {
                let digits = b[at..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
                let old = std::str::from_utf8(&b[at..at + digits]).ok().and_then(|s| u64::from_str_radix(s, 16).ok()).unwrap_or(0);
                let new = number(old, rng, true);
                b.splice(at..at + digits, new);
            }
        }
        2 => {
            // Repeat one header line many times: too many headers, a huge head.
            if let Some((start, end)) = a_line(b, rng) {
                let line = b[start..end].to_vec();
                let times = rng.size(2000);
                b.splice(end..end, line.iter().copied().cycle().take(line.len() * times));
            }
        }
        3 => {
            // Lengthen a header value.
            if let Some((_, end)) = a_line(b, rng) {
                let at = end.saturating_sub(2);
                b.splice(at..at, std::iter::repeat_n(b'v', rng.size(70_000)));
            }
        }
        4 => {
            // A header where headers go: after the status line.
            if let Some(at) = b.windows(2).position(|w| w == b"\r\n") {
                let header = rng.pick(HEADER_LINES);
                b.splice(at + 2..at + 2, header.iter().copied());
            }
        }
        _ => {
            // Another response, before or after: interim responses, streams.
            let other = *rng.pick(&[&b"HTTP/1.1 100 Continue\r\n\r\n"[..], b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"]);
            if rng.one_in(2) {
                b.splice(0..0, other.iter().copied());
            } else {
                b.extend_from_slice(other);
            }
        }
    }
}

/// A random CRLF-terminated line (start, end after its CRLF), not the first.
fn a_line(b: &[u8], rng: &mut Rng) -> Option<(usize, usize)> {
    let ends: Vec<usize> = b.windows(2).enumerate().filter(|(_, w)| *w == b"\r\n").map(|(i, _)| i + 2).collect();
    if ends.len() < 2 {
        return None;
    }
    let k = 1 + rng.below(ends.len() - 1);
    Some((ends[k - 1], ends[k]))
}

/// Record boundaries (offsets of 8-byte headers) of a FastCGI stream, as far as
/// they can be followed.
fn records(b: &[u8]) -> Vec<usize> {
    let mut at = 0;
    let mut out = Vec::new();
    while at + 8 <= b.len() {
        out.push(at);
        at += 8 + usize::from(u16::from_be_bytes([b[at + 4], b[at + 5]])) + usize::from(b[at + 6]);
    }
    out
}

fn fastcgi(b: &mut Vec<u8>, rng: &mut Rng) {
    let recs = records(b);
    let Some(&at) = recs.get(rng.below(recs.len().max(1))) else { return bytes(b, rng, Grammar::FastCgi) };
    let len = 8 + usize::from(u16::from_be_bytes([b[at + 4], b[at + 5]])) + usize::from(b[at + 6]);
    let end = (at + len).min(b.len());
    match rng.below(8) {
        0 => b[at + 1] = *rng.pick(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 255]),
        1 => {
            let n = match rng.below(4) {
                0 => 0u16,
                1 => u16::MAX,
                2 => u16::from_be_bytes([b[at + 4], b[at + 5]]).wrapping_add(1),
                _ => rng.next() as u16,
            };
            b[at + 4..at + 6].copy_from_slice(&n.to_be_bytes());
        }
        2 => b[at + 6] = rng.next() as u8,
        3 => b[at + 2..at + 4].copy_from_slice(&[0, *rng.pick(&[0u8, 1, 2])]),
        4 => {
            // Duplicate the record, many times perhaps (endless STDOUT or STDERR).
            let rec = b[at..end].to_vec();
            let times = rng.size(MAX_INPUT / rec.len().max(1)).min(2000);
            b.splice(end..end, rec.iter().copied().cycle().take(rec.len() * times));
        }
        5 => {
            b.drain(at..end);
        }
        6 => {
            // Split a record's content in two records of the same type.
            let content = usize::from(u16::from_be_bytes([b[at + 4], b[at + 5]]));
            let padding = usize::from(b[at + 6]);
            if content >= 2 && at + 8 + content + padding <= b.len() {
                let cut = 1 + rng.below(content - 1);
                let kind = b[at + 1];
                let tail_len = content - cut;
                let mut second = vec![1, kind, b[at + 2], b[at + 3]];
                second.extend_from_slice(&(tail_len as u16).to_be_bytes());
                second.extend_from_slice(&[0, 0]);
                b[at + 4..at + 6].copy_from_slice(&(cut as u16).to_be_bytes());
                b[at + 6] = 0;
                b.drain(at + 8 + content..at + 8 + content + padding);
                b.splice(at + 8 + cut..at + 8 + cut, second);
            }
        }
        _ => {
            // END_REQUEST's protocol status.
            if b[at + 1] == 3 && at + 13 <= b.len() {
                b[at + 12] = *rng.pick(&[0u8, 1, 2, 3, 255]);
            }
        }
    }
}

/// Frame heads of an HTTP/2 byte stream (offsets), as far as their lengths chain.
fn h2_frames(b: &[u8]) -> Vec<usize> {
    let mut at = 0;
    let mut heads = Vec::new();
    while at + 9 <= b.len() {
        heads.push(at);
        at += 9 + ((b[at] as usize) << 16 | (b[at + 1] as usize) << 8 | b[at + 2] as usize);
    }
    heads
}

fn h2(b: &mut Vec<u8>, rng: &mut Rng) {
    let heads = h2_frames(b);
    let Some(&at) = heads.get(rng.below(heads.len().max(1))) else {
        b.extend_from_slice(*rng.pick(H2_TOKENS));
        return;
    };
    match rng.below(5) {
        // A length off by a little, or far: frames cut, merged, oversized.
        0 => {
            let len = (b[at] as usize) << 16 | (b[at + 1] as usize) << 8 | b[at + 2] as usize;
            let new = match rng.below(4) {
                0 => len + 1,
                1 => len.saturating_sub(1),
                2 => 16_385,
                _ => rng.below(1 << 24),
            };
            b[at..at + 3].copy_from_slice(&[(new >> 16) as u8, (new >> 8) as u8, new as u8]);
        }
        // Another type, flags or stream.
        1 => b[at + 3] = rng.below(11) as u8,
        2 => b[at + 4] ^= *rng.pick(&[0x1, 0x4, 0x8, 0x20]),
        3 => b[at + 8] = *rng.pick(&[0, 1, 2, 3, 5, 7]),
        // A frame repeated: endless CONTINUATIONs, DATA past its end.
        _ => {
            let end = (at + 9 + ((b[at] as usize) << 16 | (b[at + 1] as usize) << 8 | b[at + 2] as usize)).min(b.len());
            let frame = b[at..end].to_vec();
            let times = rng.size(200);
            b.splice(end..end, frame.iter().copied().cycle().take(frame.len() * times));
        }
    }
}

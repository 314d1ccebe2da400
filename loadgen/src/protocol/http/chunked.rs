//! Chunked transfer coding (RFC 9112 §7.1) as a byte-driven state machine, so a
//! body can arrive split at any byte. Chunk data is counted, never copied.
//!
//! Lenient where real servers are sloppy (a bare LF ends a line), strict where a
//! mistake would desynchronise the stream (a size line must start with a hex digit).

use crate::protocol::reading::{Bound, ParseError};

/// Chunk-size lines (with extensions) longer than this are refused (`too_large`).
const MAX_SIZE_LINE: usize = 4096;
/// Trailer section cap, like the head cap (`too_large`).
const MAX_TRAILERS: usize = 64 * 1024;
/// 15 hex digits = 2^60 bytes: anything longer is not a real chunk (`too_large`).
const MAX_SIZE_DIGITS: u32 = 15;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading hex digits of a chunk size.
    Size,
    /// After the digits: whitespace or `;extension` up to the line end.
    SizeRest,
    /// Saw CR at the end of a size line.
    SizeLf,
    /// Inside chunk data (`remaining` bytes left).
    Data,
    /// Expecting the CRLF after chunk data.
    DataCr,
    DataLf,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    /// Inside a trailer field line.
    TrailerLine,
    /// Saw CR of the final empty line.
    EndLf,
    Done,
}

#[derive(Clone, Debug)]
pub struct ChunkDecoder {
    state: State,
    /// Chunk size being parsed, then the bytes of it still to come.
    remaining: u64,
    digits: u32,
    line_len: usize,
    trailer_len: usize,
}

impl Default for ChunkDecoder {
    fn default() -> Self {
        ChunkDecoder { state: State::Size, remaining: 0, digits: 0, line_len: 0, trailer_len: 0 }
    }
}

impl ChunkDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Consumes bytes of the chunked body. Returns (bytes consumed, body complete).
    /// Decoded payload bytes are added to `body`. Stops right after the final CRLF,
    /// leaving any following bytes unconsumed.
    pub fn feed(&mut self, data: &[u8], body: &mut u64) -> Result<(usize, bool), ParseError> {
        let mut i = 0;
        while i < data.len() {
            if self.state == State::Data {
                let take = (self.remaining.min((data.len() - i) as u64)) as usize;
                *body += take as u64;
                self.remaining -= take as u64;
                i += take;
                if self.remaining == 0 {
                    self.state = State::DataCr;
                }
                continue;
            }
            let b = data[i];
            i += 1;
            match self.state {
                State::Size => match hex_value(b) {
                    Some(v) => {
                        self.digits += 1;
                        if self.digits > MAX_SIZE_DIGITS {
                            return Err(ParseError::TooLarge(Bound::ChunkSize));
                        }
                        self.remaining = self.remaining << 4 | u64::from(v);
                    }
                    None if self.digits == 0 => return Err(ParseError::Chunk),
                    None => match b {
                        b';' | b' ' | b'\t' => self.state = State::SizeRest,
                        b'\r' => self.state = State::SizeLf,
                        b'\n' => self.end_size_line(),
                        _ => return Err(ParseError::Chunk),
                    },
                },
                State::SizeRest => match b {
                    b'\r' => self.state = State::SizeLf,
                    b'\n' => self.end_size_line(),
                    _ => {
                        self.line_len += 1;
                        if self.line_len > MAX_SIZE_LINE {
                            return Err(ParseError::TooLarge(Bound::ChunkLine));
                        }
                    }
                },
                State::SizeLf => match b {
                    b'\n' => self.end_size_line(),
                    _ => return Err(ParseError::Chunk),
                },
                State::DataCr => match b {
                    b'\r' => self.state = State::DataLf,
                    b'\n' => self.start_size_line(),
                    _ => return Err(ParseError::Chunk),
                },
                State::DataLf => match b {
                    b'\n' => self.start_size_line(),
                    _ => return Err(ParseError::Chunk),
                },
                State::TrailerStart => match b {
                    b'\r' => self.state = State::EndLf,
                    b'\n' => {
                        self.state = State::Done;
                        return Ok((i, true));
                    }
                    _ => {
                        self.count_trailer()?;
                        self.state = State::TrailerLine;
                    }
                },
                State::TrailerLine => {
                    self.count_trailer()?;
                    if b == b'\n' {
                        self.state = State::TrailerStart;
                    }
                }
                State::EndLf => match b {
                    b'\n' => {
                        self.state = State::Done;
                        return Ok((i, true));
                    }
                    _ => return Err(ParseError::Chunk),
                },
                State::Done => return Ok((i - 1, true)),
                State::Data => unreachable!("handled above"),
            }
        }
        Ok((i, self.state == State::Done))
    }

    /// Chunk data that may go by unseen (discarded in the kernel, client/exchange.rs):
    /// the rest of the current chunk. Its CRLF and the next size line must be read.
    pub fn skippable(&self) -> u64 {
        if self.state == State::Data { self.remaining } else { 0 }
    }

    /// `n` bytes of chunk data (at most `skippable()`) went by unseen: counted in `body`.
    pub fn skipped(&mut self, n: u64, body: &mut u64) {
        debug_assert!(n <= self.skippable(), "skipped {n} of {}", self.skippable());
        let n = n.min(self.skippable());
        *body += n;
        self.remaining -= n;
        if self.state == State::Data && self.remaining == 0 {
            self.state = State::DataCr;
        }
    }

    fn start_size_line(&mut self) {
        self.state = State::Size;
        self.remaining = 0;
        self.digits = 0;
        self.line_len = 0;
    }

    fn end_size_line(&mut self) {
        self.state = if self.remaining == 0 { State::TrailerStart } else { State::Data };
    }

    fn count_trailer(&mut self) -> Result<(), ParseError> {
        self.trailer_len += 1;
        if self.trailer_len > MAX_TRAILERS { Err(ParseError::TooLarge(Bound::Trailers)) } else { Ok(()) }
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8]) -> Result<(usize, bool, u64), ParseError> {
        let mut d = ChunkDecoder::new();
        let mut body = 0;
        let (n, done) = d.feed(input, &mut body)?;
        Ok((n, done, body))
    }

    #[test]
    fn simple_body_and_leftover() {
        let input = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\nNEXT";
        assert_eq!(decode_all(input).unwrap(), (input.len() - 4, true, 11));
    }

    #[test]
    fn trailers_and_bare_lf() {
        let input = b"A\nabcdefghij\n0\nX-Trailer: 1\n\n";
        assert_eq!(decode_all(input).unwrap(), (input.len(), true, 10));
    }

    #[test]
    fn every_split_point_gives_the_same_result() {
        let input = b"3\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\n";
        for cut in 0..=input.len() {
            let mut d = ChunkDecoder::new();
            let mut body = 0;
            let (a, done_a) = d.feed(&input[..cut], &mut body).unwrap();
            assert_eq!(a, cut);
            let (b, done_b) = d.feed(&input[cut..], &mut body).unwrap();
            assert!(done_b || (done_a && b == 0), "cut {cut}");
            assert_eq!(body, 19);
        }
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(decode_all(b"zz\r\n"), Err(ParseError::Chunk));
        assert_eq!(decode_all(b"\r\n"), Err(ParseError::Chunk));
        assert_eq!(decode_all(b"3\r\nabcX"), Err(ParseError::Chunk));
    }

    #[test]
    fn bounds_are_too_large() {
        assert_eq!(decode_all(b"1234567890abcdef0\r\n"), Err(ParseError::TooLarge(Bound::ChunkSize)));
        assert_eq!(decode_all(b"fffffffffffffff\r\n").map(|r| r.1), Ok(false), "15 digits are allowed");
        let mut long_line = b"5;".to_vec();
        long_line.extend(std::iter::repeat_n(b'x', MAX_SIZE_LINE + 1));
        assert_eq!(decode_all(&long_line), Err(ParseError::TooLarge(Bound::ChunkLine)));
        let mut trailers = b"0\r\n".to_vec();
        while trailers.len() < MAX_TRAILERS + 100 {
            trailers.extend_from_slice(b"X-Trailer: filler\r\n");
        }
        assert_eq!(decode_all(&trailers), Err(ParseError::TooLarge(Bound::Trailers)));
    }
}

//! Incremental FastCGI response reader: records (STDOUT, STDERR, END_REQUEST)
//! split anywhere, the CGI head at the start of STDOUT parsed for `Status:`
//! (RFC 3875 §6.3.3; default 200, `Location:` alone means 302, §6.2.3), the rest
//! of STDOUT counted as body. Same interface and error types as the HTTP reader.

use std::rc::Rc;

use super::record::{END_REQUEST, HEADER_LEN, Header, REQUEST_COMPLETE, REQUEST_ID, STDERR, STDOUT, VERSION_1};
use crate::protocol::capture::Captures;
use crate::protocol::reading::{
    Bound, Completed, EofError, MAX_HEAD_BYTES, MAX_HEADERS, ParseError, Progress, clear_retaining,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Collecting a record header.
    Header,
    Content,
    Padding,
    Done,
}

#[derive(Debug)]
pub struct FcgiReader {
    state: State,
    header: [u8; HEADER_LEN],
    header_len: usize,
    kind: u8,
    content_left: usize,
    padding_left: usize,
    end_body: [u8; 8],
    end_len: usize,
    /// STDOUT bytes until the end of the CGI head (reused between responses; never
    /// more than `MAX_HEAD_BYTES` + 1, and at most `RETAINED_BYTES` kept after it).
    head: Vec<u8>,
    head_done: bool,
    status: u16,
    /// Sent FCGI_KEEP_CONN: the application keeps the connection open.
    keep_conn: bool,
    /// Bytes arrived after END_REQUEST: the stream is out of step, reconnect.
    trailing: bool,
    body_bytes: u64,
    started: bool,
    captures: Captures,
}

impl FcgiReader {
    pub fn new(keep_conn: bool, watch: Rc<[String]>) -> Self {
        FcgiReader {
            state: State::Done,
            header: [0; HEADER_LEN],
            header_len: 0,
            kind: 0,
            content_left: 0,
            padding_left: 0,
            end_body: [0; 8],
            end_len: 0,
            head: Vec::new(),
            head_done: false,
            status: 200,
            keep_conn,
            trailing: false,
            body_bytes: 0,
            started: false,
            captures: Captures::new(watch),
        }
    }

    pub fn start(&mut self) {
        self.state = State::Header;
        self.header_len = 0;
        self.end_len = 0;
        clear_retaining(&mut self.head);
        self.head_done = false;
        self.status = 200;
        self.body_bytes = 0;
        self.started = false;
        if self.captures.active() {
            self.captures.clear();
        }
    }

    pub fn reset(&mut self) {
        self.state = State::Done;
        self.trailing = false;
        self.started = false;
    }

    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    pub fn started(&self) -> bool {
        self.started
    }

    pub fn captures(&self) -> &Captures {
        &self.captures
    }

    /// Bytes of memory the reader holds for a CGI head (what the bounds limit).
    #[cfg(any(test, fuzzing))]
    pub fn buffered_capacity(&self) -> usize {
        self.head.capacity() + self.captures.capacity()
    }

    pub fn feed(&mut self, data: &[u8]) -> Result<Progress, ParseError> {
        if data.is_empty() {
            return Ok(Progress::More);
        }
        self.started = true;
        let mut at = 0;
        while at < data.len() && self.state != State::Done {
            let rest = &data[at..];
            match self.state {
                State::Header => {
                    let take = (HEADER_LEN - self.header_len).min(rest.len());
                    self.header[self.header_len..self.header_len + take].copy_from_slice(&rest[..take]);
                    self.header_len += take;
                    at += take;
                    if self.header_len == HEADER_LEN {
                        self.begin_record()?;
                    }
                }
                State::Content => {
                    let take = self.content_left.min(rest.len());
                    self.content(&rest[..take])?;
                    self.content_left -= take;
                    at += take;
                    if self.content_left == 0 {
                        self.end_content()?;
                    }
                }
                State::Padding => {
                    let take = self.padding_left.min(rest.len());
                    self.padding_left -= take;
                    at += take;
                    if self.padding_left == 0 {
                        self.end_record()?;
                    }
                }
                State::Done => unreachable!("loop condition"),
            }
        }
        if self.state != State::Done {
            return Ok(Progress::More);
        }
        // We never pipeline, so nothing may follow END_REQUEST.
        self.trailing = at < data.len();
        Ok(Progress::Done(Completed { status: self.status, close: !self.keep_conn || self.trailing }))
    }

    pub fn eof(&mut self) -> Result<Completed, EofError> {
        match self.state {
            State::Done => Ok(Completed { status: self.status, close: true }),
            State::Header if !self.started => Err(EofError::BeforeResponse),
            _ if !self.head_done => Err(EofError::InHead),
            _ => Err(EofError::InBody),
        }
    }

    fn begin_record(&mut self) -> Result<(), ParseError> {
        let h = Header::decode(&self.header);
        self.header_len = 0;
        let known = matches!(h.kind, STDOUT | STDERR) || (h.kind == END_REQUEST && h.content_len == 8);
        if h.version != VERSION_1 || h.request_id != REQUEST_ID || !known {
            return Err(ParseError::Head);
        }
        self.kind = h.kind;
        self.content_left = usize::from(h.content_len);
        self.padding_left = usize::from(h.padding_len);
        self.state = State::Content;
        if self.content_left == 0 {
            self.end_content()?;
        }
        Ok(())
    }

    fn content(&mut self, data: &[u8]) -> Result<(), ParseError> {
        match self.kind {
            STDOUT => self.stdout(data),
            END_REQUEST => {
                self.end_body[self.end_len..self.end_len + data.len()].copy_from_slice(data);
                self.end_len += data.len();
                Ok(())
            }
            // STDERR (PHP's warnings, "Primary script unknown"): counted in the bytes
            // received, not part of the response.
            _ => Ok(()),
        }
    }

    fn end_content(&mut self) -> Result<(), ParseError> {
        if self.padding_left > 0 {
            self.state = State::Padding;
            Ok(())
        } else {
            self.end_record()
        }
    }

    fn end_record(&mut self) -> Result<(), ParseError> {
        if self.kind != END_REQUEST {
            self.state = State::Header;
            return Ok(());
        }
        // §5.5: appStatus (4 bytes), protocolStatus, reserved.
        if self.end_body[4] != REQUEST_COMPLETE {
            return Err(ParseError::Rejected);
        }
        if !self.head_done {
            return Err(ParseError::Head); // no CGI head: not a response
        }
        self.state = State::Done;
        Ok(())
    }

    fn stdout(&mut self, data: &[u8]) -> Result<(), ParseError> {
        if self.head_done {
            self.body_bytes += data.len() as u64;
            return Ok(());
        }
        let from = self.head.len().saturating_sub(2);
        // Bytes past the bound cannot be part of an acceptable head: never hold them.
        let take = data.len().min((MAX_HEAD_BYTES + 1).saturating_sub(self.head.len()));
        self.head.extend_from_slice(&data[..take]);
        match head_end(&self.head, from) {
            Some(end) if end > MAX_HEAD_BYTES => Err(ParseError::TooLarge(Bound::Head)),
            Some(end) => {
                self.status = parse_cgi_head(&self.head[..end], &mut self.captures)?;
                self.head_done = true;
                self.body_bytes += (self.head.len() - end + data.len() - take) as u64;
                Ok(())
            }
            None if self.head.len() > MAX_HEAD_BYTES => Err(ParseError::TooLarge(Bound::Head)),
            None => Ok(()),
        }
    }
}

/// End of the CGI head (just after its empty line, CRLF or bare LF), searching
/// from `from`; the head may also be empty (an empty first line).
fn head_end(buf: &[u8], from: usize) -> Option<usize> {
    if buf.starts_with(b"\r\n") {
        return Some(2);
    }
    if buf.starts_with(b"\n") {
        return Some(1);
    }
    let mut i = from;
    while let Some(off) = buf.get(i..)?.iter().position(|&b| b == b'\n') {
        let lf = i + off;
        match buf.get(lf + 1..) {
            Some([b'\n', ..]) => return Some(lf + 2),
            Some([b'\r', b'\n', ..]) => return Some(lf + 3),
            _ => i = lf + 1,
        }
    }
    None
}

/// The response status from the CGI head: `Status: NNN reason`, else 302 for a
/// `Location:` alone, else 200.
fn parse_cgi_head(head: &[u8], captures: &mut Captures) -> Result<u16, ParseError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let parsed = match httparse::parse_headers(head, &mut headers) {
        Ok(httparse::Status::Complete((_, parsed))) => parsed,
        Err(httparse::Error::TooManyHeaders) => return Err(ParseError::TooLarge(Bound::Headers)),
        _ => return Err(ParseError::Head),
    };
    let mut status = None;
    let mut location = false;
    for h in parsed.iter() {
        if captures.active() {
            captures.offer(h.name, h.value);
        }
        if h.name.eq_ignore_ascii_case("status") {
            let v = h.value.trim_ascii();
            let code = v
                .get(..3)
                .filter(|d| d.iter().all(u8::is_ascii_digit) && v.get(3).is_none_or(|&b| b == b' '))
                .map(|d| d.iter().fold(0u16, |a, &b| a * 10 + u16::from(b - b'0')))
                .filter(|c| (100..=599).contains(c))
                .ok_or(ParseError::Head)?;
            status = Some(code);
        } else if h.name.eq_ignore_ascii_case("location") {
            location = true;
        }
    }
    Ok(status.unwrap_or(if location { 302 } else { 200 }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::fastcgi::record::{self, push};

    fn end_request(protocol_status: u8) -> Vec<u8> {
        let mut out = Vec::new();
        push(&mut out, END_REQUEST, &[0, 0, 0, 0, protocol_status, 0, 0, 0]);
        out
    }

    fn response(stdout: &[u8], stderr: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        if !stderr.is_empty() {
            push(&mut out, STDERR, stderr);
        }
        record::push_stream(&mut out, STDOUT, stdout);
        out.extend(end_request(REQUEST_COMPLETE));
        out
    }

    /// Feeds `input` in pieces of `step` bytes; returns the final progress.
    fn read(r: &mut FcgiReader, input: &[u8], step: usize) -> Result<Progress, ParseError> {
        r.start();
        let mut last = Ok(Progress::More);
        for piece in input.chunks(step) {
            last = r.feed(piece);
            if !matches!(last, Ok(Progress::More)) {
                break;
            }
        }
        last
    }

    fn reader() -> FcgiReader {
        FcgiReader::new(true, Rc::from(Vec::new()))
    }

    #[test]
    fn status_and_body_however_split() {
        let input = response(b"X-Powered-By: PHP\r\nContent-type: text/html\r\n\r\nHello", b"warning");
        for step in [1, 2, 3, 7, 8, 9, 64, 4096] {
            let mut r = reader();
            let done = read(&mut r, &input, step);
            assert_eq!(done, Ok(Progress::Done(Completed { status: 200, close: false })), "step {step}");
            assert_eq!(r.body_bytes(), 5, "step {step}");
        }
    }

    #[test]
    fn status_header_and_location() {
        let mut r = reader();
        let input = response(b"Status: 404 Not Found\r\nContent-type: text/html\r\n\r\nFile not found.\n", b"");
        assert_eq!(read(&mut r, &input, 100), Ok(Progress::Done(Completed { status: 404, close: false })));
        let input = response(b"Location: http://x/\n\n", b"");
        assert_eq!(read(&mut r, &input, 100), Ok(Progress::Done(Completed { status: 302, close: false })));
        let input = response(b"Status: abc\r\n\r\n", b"");
        assert_eq!(read(&mut r, &input, 100), Err(ParseError::Head));
    }

    #[test]
    fn keep_conn_off_closes() {
        let mut r = FcgiReader::new(false, Rc::from(Vec::new()));
        let input = response(b"\r\nok", b"");
        assert_eq!(read(&mut r, &input, 100), Ok(Progress::Done(Completed { status: 200, close: true })));
        assert_eq!(r.body_bytes(), 2);
    }

    #[test]
    fn rejected_and_malformed() {
        let mut r = reader();
        assert_eq!(read(&mut r, &end_request(2), 100), Err(ParseError::Rejected));
        // END_REQUEST without any CGI head.
        assert_eq!(read(&mut r, &end_request(REQUEST_COMPLETE), 100), Err(ParseError::Head));
        let mut bad = response(b"\r\n", b"");
        bad[0] = 2; // version
        assert_eq!(read(&mut r, &bad, 100), Err(ParseError::Head));
        let mut bad = response(b"\r\n", b"");
        bad[3] = 9; // request id
        assert_eq!(read(&mut r, &bad, 100), Err(ParseError::Head));
    }

    #[test]
    fn eof_classes_and_trailing_bytes() {
        let mut r = reader();
        r.start();
        assert_eq!(r.eof(), Err(EofError::BeforeResponse));
        let input = response(b"Content-type: x\r\n\r\nbody", b"");
        r.start();
        r.feed(&input[..12]).unwrap();
        assert_eq!(r.eof(), Err(EofError::InHead));
        r.start();
        r.feed(&input[..input.len() - 4]).unwrap();
        assert_eq!(r.eof(), Err(EofError::InBody));
        let mut extra = input.clone();
        extra.extend_from_slice(b"junk");
        assert_eq!(read(&mut r, &extra, 4096), Ok(Progress::Done(Completed { status: 200, close: true })));
    }

    #[test]
    fn captures_cgi_headers() {
        let mut r = FcgiReader::new(true, Rc::from(vec!["X-Cache".to_string()]));
        let input = response(b"X-Cache: HIT\r\n\r\n", b"");
        assert!(matches!(read(&mut r, &input, 3), Ok(Progress::Done(_))));
        assert_eq!(r.captures().values(0).collect::<Vec<_>>(), [&b"HIT"[..]]);
    }

    #[test]
    fn cgi_head_bounds() {
        // No end of head within 64 KB: too large, holding no more than the bound,
        // however the STDOUT records are cut; the buffer is freed for the next one.
        let endless = response(&[b'h'; 3 * MAX_HEAD_BYTES], b"");
        for step in [1000, 65536, endless.len()] {
            let mut r = reader();
            r.start();
            let mut outcome = Ok(Progress::More);
            for piece in endless.chunks(step) {
                outcome = r.feed(piece);
                assert!(r.buffered_capacity() <= 2 * (MAX_HEAD_BYTES + 1));
                if outcome.is_err() {
                    break;
                }
            }
            assert_eq!(outcome, Err(ParseError::TooLarge(Bound::Head)), "step {step}");
            r.start();
            assert!(r.buffered_capacity() <= crate::protocol::reading::RETAINED_BYTES);
        }
        // A head of exactly 64 KB is accepted, and what follows it is body.
        let mut head = b"Status: 201\r\nX-Pad: ".to_vec();
        head.resize(MAX_HEAD_BYTES - 4, b'p');
        head.extend_from_slice(b"\r\n\r\nbody");
        let mut r = reader();
        assert_eq!(read(&mut r, &response(&head, b""), 4096), Ok(Progress::Done(Completed { status: 201, close: false })));
        assert_eq!(r.body_bytes(), 4);
        // 101 header lines: too many.
        let many: Vec<u8> = (0..=MAX_HEADERS).flat_map(|i| format!("X-{i}: v\r\n").into_bytes()).chain(*b"\r\n").collect();
        assert_eq!(read(&mut reader(), &response(&many, b""), 4096), Err(ParseError::TooLarge(Bound::Headers)));
    }

    #[test]
    fn random_input_never_panics() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut r = reader();
        for _ in 0..2000 {
            let mut input = response(b"Status: 200\r\n\r\nabc", b"e");
            for _ in 0..3 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x % input.len() as u64) as usize;
                input[i] = (x >> 32) as u8;
            }
            let _ = read(&mut r, &input, 1 + (x % 13) as usize);
            let _ = r.eof();
        }
    }
}

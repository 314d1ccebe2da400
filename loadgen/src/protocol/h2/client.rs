//! One HTTP/2 client connection without I/O, for the direct loop
//! (client/direct_h2.rs): requests out as frames into `out`, the server's bytes in
//! as events — a response's status, its fields, its body's length, its end, a
//! stream reset, a GOAWAY. Flow control gives back what was received (the window
//! announced is h2load's 2^30 − 1, as on the task loop); SETTINGS and PING are
//! answered here.
//!
//! Only what a load client needs: requests without bodies (HEADERS with
//! END_STREAM), no server push (refused in the first SETTINGS), no priorities.
//! Anything the server does wrong is a connection error with its code (RFC 9113
//! §5.4.1): the caller fails the connection's requests with it.

use super::frame::{self, Head};
use crate::protocol::reading::MAX_HEAD_BYTES;
use super::hpack::{self, Decoder, HpackError, RequestBlocks};

/// The flow-control window announced, per stream and for the connection.
pub const WINDOW: u32 = (1 << 30) - 1;
/// The protocol's initial windows (RFC 9113 §6.9.2).
const INITIAL_WINDOW: u32 = 65_535;

/// What the server's frames said, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A response's final head began (status ≥ 200; informational heads are skipped).
    Status { stream: u32, status: u16 },
    /// One field of that head (pseudo-headers aside).
    Field { stream: u32, name: &'a [u8], value: &'a [u8] },
    /// Body bytes of a response (padding aside).
    Data { stream: u32, len: usize },
    /// The response is whole (END_STREAM).
    End { stream: u32 },
    /// The server reset the stream.
    Reset { stream: u32, code: u32 },
    /// The server goes away: streams above `last` were not processed, none may be opened.
    GoAway { last: u32, code: u32 },
}

/// A connection error: the server broke the protocol (its code, and what it was).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnError {
    pub code: u32,
    pub why: &'static str,
}

fn error(code: u32, why: &'static str) -> ConnError {
    ConnError { code, why }
}

impl From<HpackError> for ConnError {
    fn from(e: HpackError) -> Self {
        error(frame::COMPRESSION_ERROR, e.0)
    }
}

/// A stream this client opened and that has not ended.
struct Open {
    id: u32,
    /// The final head came (what follows is body, then maybe trailers).
    responded: bool,
    /// Received and not yet given back to the stream's window.
    unacked: u32,
}

pub struct Connection {
    decoder: Decoder,
    /// The start of a frame not yet whole.
    partial: Vec<u8>,
    /// A header block still in pieces (HEADERS without END_HEADERS, then
    /// CONTINUATIONs): its stream, whether it ends the stream, its bytes.
    block: Option<(u32, bool)>,
    block_bytes: Vec<u8>,
    /// Frames to send.
    pub out: Vec<u8>,
    next_id: u32,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS.
    max_streams: u32,
    open: Vec<Open>,
    /// Received on the connection and not yet given back to its window.
    unacked: u32,
    goaway: Option<(u32, u32)>,
    indexing: Indexing,
    /// The server's SETTINGS_HEADER_TABLE_SIZE: what our blocks may insert.
    peer_table: usize,
}

/// Whether this connection's requests use the server's table (hpack::RequestBlocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Indexing {
    /// No request sent yet: the first one inserts, if the table holds it.
    Fresh,
    /// The shared fields are in the table: later requests name them.
    Primed,
    /// Plain literals for good; `Some`: the next block first tells the server the
    /// table's new size (it lowered SETTINGS_HEADER_TABLE_SIZE).
    Off(Option<usize>),
}

impl Default for Connection {
    fn default() -> Self {
        Connection::new()
    }
}

impl Connection {
    /// A connection whose preface, SETTINGS and window are queued in `out`.
    pub fn new() -> Connection {
        let mut out = frame::PREFACE.to_vec();
        frame::settings(&mut out, &[(frame::SETTINGS_ENABLE_PUSH, 0), (frame::SETTINGS_INITIAL_WINDOW_SIZE, WINDOW)]);
        frame::window_update(&mut out, 0, WINDOW - INITIAL_WINDOW);
        Connection {
            decoder: Decoder::default(),
            partial: Vec::new(),
            block: None,
            block_bytes: Vec::new(),
            out,
            next_id: 1,
            max_streams: u32::MAX,
            open: Vec::new(),
            unacked: 0,
            goaway: None,
            indexing: Indexing::Fresh,
            peer_table: hpack::TABLE_SIZE,
        }
    }

    /// Whether a request may go now: the server's stream limit has room and it has not
    /// gone away (stream ids last for 2^30 requests: then a new connection).
    pub fn can_open(&self) -> bool {
        self.goaway.is_none() && (self.open.len() as u64) < self.max_streams as u64 && self.next_id < 1 << 31
    }

    /// Whether the server has said it goes away.
    pub fn going_away(&self) -> bool {
        self.goaway.is_some() || self.next_id >= 1 << 31
    }

    #[cfg(test)]
    pub fn open_streams(&self) -> usize {
        self.open.len()
    }

    /// Queues a request (its header blocks, `hpack::encode_request`); its stream's id.
    pub fn request(&mut self, blocks: &RequestBlocks) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        let block = match self.indexing {
            Indexing::Primed => &blocks.repeat,
            Indexing::Fresh if blocks.table <= self.peer_table => {
                self.indexing = Indexing::Primed;
                &blocks.first
            }
            Indexing::Off(Some(size)) => {
                self.indexing = Indexing::Off(None);
                let mut block = Vec::new();
                hpack::size_update(&mut block, size);
                block.extend_from_slice(&blocks.plain);
                frame::request(&mut self.out, id, &block);
                self.open.push(Open { id, responded: false, unacked: 0 });
                return id;
            }
            Indexing::Fresh | Indexing::Off(None) => &blocks.plain,
        };
        frame::request(&mut self.out, id, block);
        self.open.push(Open { id, responded: false, unacked: 0 });
        id
    }

    /// Gives up a stream (its request timed out): RST_STREAM CANCEL.
    pub fn cancel(&mut self, stream: u32) {
        if let Some(i) = self.open.iter().position(|s| s.id == stream) {
            self.open.swap_remove(i);
            frame::rst_stream(&mut self.out, stream, frame::CANCEL);
        }
    }

    /// Takes bytes from the server: every whole frame is handled, events go to `on`
    /// in order; the start of a frame cut at the end waits for the rest.
    pub fn receive(&mut self, bytes: &[u8], mut on: impl FnMut(Event)) -> Result<(), ConnError> {
        if self.partial.is_empty() {
            let used = self.frames(bytes, &mut on)?;
            self.partial.extend_from_slice(&bytes[used..]);
        } else {
            let mut buf = std::mem::take(&mut self.partial);
            buf.extend_from_slice(bytes);
            let used = self.frames(&buf, &mut on);
            let used = used?;
            buf.drain(..used);
            self.partial = buf;
        }
        Ok(())
    }

    /// Handles the whole frames at the start of `bytes`; how many bytes they were.
    fn frames(&mut self, bytes: &[u8], on: &mut impl FnMut(Event)) -> Result<usize, ConnError> {
        let mut at = 0;
        while let Some(head) = bytes.get(at..at + frame::HEAD) {
            let head = Head::parse(head.try_into().expect("9 bytes"));
            if head.len > frame::MAX_FRAME {
                return Err(error(frame::FRAME_SIZE_ERROR, "frame larger than SETTINGS_MAX_FRAME_SIZE"));
            }
            let Some(payload) = bytes.get(at + frame::HEAD..at + frame::HEAD + head.len) else { break };
            self.frame(head, payload, on)?;
            at += frame::HEAD + head.len;
        }
        Ok(at)
    }

    fn frame(&mut self, head: Head, payload: &[u8], on: &mut impl FnMut(Event)) -> Result<(), ConnError> {
        if let Some((stream, end_stream)) = self.block {
            if head.kind != frame::CONTINUATION || head.stream != stream {
                return Err(error(frame::PROTOCOL_ERROR, "a header block interrupted"));
            }
            self.block_bytes.extend_from_slice(payload);
            if self.block_bytes.len() > MAX_HEAD_BYTES {
                // HTTP/1.1's bound on a head (reading.rs): endless CONTINUATIONs end here.
                return Err(error(frame::ENHANCE_YOUR_CALM, "a header block over 64 KB"));
            }
            if head.flags & frame::END_HEADERS != 0 {
                self.block = None;
                let block = std::mem::take(&mut self.block_bytes);
                let decoded = self.head_block(stream, end_stream, &block, on);
                self.block_bytes = block;
                self.block_bytes.clear();
                decoded?;
            }
            return Ok(());
        }
        let stream_frame = matches!(head.kind, frame::DATA | frame::HEADERS | frame::RST_STREAM | frame::CONTINUATION);
        if stream_frame && head.stream == 0 {
            return Err(error(frame::PROTOCOL_ERROR, "a stream's frame on stream 0"));
        }
        match head.kind {
            frame::DATA => self.data(head, payload, on)?,
            frame::HEADERS => {
                let mut fragment = frame::unpadded(head.flags, payload).ok_or(error(frame::PROTOCOL_ERROR, "padding"))?;
                if head.flags & frame::PRIORITY != 0 {
                    fragment = fragment.get(5..).ok_or(error(frame::FRAME_SIZE_ERROR, "HEADERS priority"))?;
                }
                let end_stream = head.flags & frame::END_STREAM != 0;
                if head.flags & frame::END_HEADERS != 0 {
                    self.head_block(head.stream, end_stream, fragment, on)?;
                } else {
                    self.block = Some((head.stream, end_stream));
                    self.block_bytes.extend_from_slice(fragment);
                }
            }
            frame::CONTINUATION => return Err(error(frame::PROTOCOL_ERROR, "CONTINUATION without HEADERS")),
            frame::RST_STREAM => {
                let code = word(payload).ok_or(error(frame::FRAME_SIZE_ERROR, "RST_STREAM"))?;
                if self.close(head.stream) {
                    on(Event::Reset { stream: head.stream, code });
                }
            }
            frame::SETTINGS => {
                if head.stream != 0 {
                    return Err(error(frame::PROTOCOL_ERROR, "SETTINGS on a stream"));
                }
                if head.flags & frame::ACK != 0 {
                    return if payload.is_empty() { Ok(()) } else { Err(error(frame::FRAME_SIZE_ERROR, "SETTINGS ACK")) };
                }
                if payload.len() % 6 != 0 {
                    return Err(error(frame::FRAME_SIZE_ERROR, "SETTINGS"));
                }
                for setting in payload.chunks(6) {
                    let value = u32::from_be_bytes([setting[2], setting[3], setting[4], setting[5]]);
                    match u16::from_be_bytes([setting[0], setting[1]]) {
                        frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.max_streams = value,
                        frame::SETTINGS_HEADER_TABLE_SIZE if (value as usize) < self.peer_table => {
                            // Entries we inserted may be gone: no more indexes, and the next
                            // block says the size (RFC 7541 §4.2).
                            self.peer_table = value as usize;
                            self.indexing = Indexing::Off(Some(value as usize));
                        }
                        frame::SETTINGS_INITIAL_WINDOW_SIZE if value > i32::MAX as u32 => {
                            return Err(error(frame::FLOW_CONTROL_ERROR, "SETTINGS_INITIAL_WINDOW_SIZE"));
                        }
                        // The others bound what we send: requests without bodies, small heads.
                        _ => {}
                    }
                }
                frame::put(&mut self.out, frame::SETTINGS, frame::ACK, 0, &[]);
            }
            frame::PUSH_PROMISE => return Err(error(frame::PROTOCOL_ERROR, "PUSH_PROMISE with push disabled")),
            frame::PING => {
                if head.stream != 0 {
                    return Err(error(frame::PROTOCOL_ERROR, "PING on a stream"));
                }
                if payload.len() != 8 {
                    return Err(error(frame::FRAME_SIZE_ERROR, "PING"));
                }
                if head.flags & frame::ACK == 0 {
                    frame::put(&mut self.out, frame::PING, frame::ACK, 0, payload);
                }
            }
            frame::GOAWAY => {
                if head.stream != 0 || payload.len() < 8 {
                    return Err(error(frame::FRAME_SIZE_ERROR, "GOAWAY"));
                }
                let last = word(&payload[..4]).expect("4 bytes") & 0x7fff_ffff;
                let code = word(&payload[4..8]).expect("4 bytes");
                self.goaway = Some((last, code));
                // Streams above `last` were not processed: the caller retries or fails them.
                self.open.retain(|s| s.id <= last);
                on(Event::GoAway { last, code });
            }
            frame::WINDOW_UPDATE if payload.len() != 4 => return Err(error(frame::FRAME_SIZE_ERROR, "WINDOW_UPDATE")),
            // PRIORITY, and frame types this client does not know: ignored (§4.1, §5.5).
            _ => {}
        }
        Ok(())
    }

    fn data(&mut self, head: Head, payload: &[u8], on: &mut impl FnMut(Event)) -> Result<(), ConnError> {
        let body = frame::unpadded(head.flags, payload).ok_or(error(frame::PROTOCOL_ERROR, "padding"))?;
        // Flow control counts the whole payload, padding included (§6.9.1).
        self.unacked += payload.len() as u32;
        if self.unacked >= WINDOW / 2 {
            frame::window_update(&mut self.out, 0, std::mem::take(&mut self.unacked));
        }
        let end = head.flags & frame::END_STREAM != 0;
        let Some(open) = self.open.iter_mut().find(|s| s.id == head.stream) else {
            // A stream given up (cancelled) or already reset: its bytes only count above.
            return Ok(());
        };
        if !open.responded {
            return Err(error(frame::PROTOCOL_ERROR, "DATA before the response's head"));
        }
        open.unacked += payload.len() as u32;
        if !end && open.unacked >= WINDOW / 2 {
            frame::window_update(&mut self.out, open.id, std::mem::take(&mut open.unacked));
        }
        on(Event::Data { stream: head.stream, len: body.len() });
        if end {
            self.close(head.stream);
            on(Event::End { stream: head.stream });
        }
        Ok(())
    }

    /// A whole header block: decoded in any case (it may change the table the next ones
    /// use), its head or trailers given to `on` when its stream is one of ours.
    fn head_block(&mut self, stream: u32, end_stream: bool, block: &[u8], on: &mut impl FnMut(Event)) -> Result<(), ConnError> {
        let ours = self.open.iter().position(|s| s.id == stream);
        let trailers = ours.is_some_and(|i| self.open[i].responded);
        let mut status: Option<u16> = None;
        let mut bad_status = false;
        self.decoder.decode(block, |name, value| {
            if name == b":status" {
                // One :status a head (RFC 9113 §8.3.2): a second one is malformed.
                bad_status |= status.is_some();
                if bad_status {
                    return;
                }
                status = parse_status(value);
                bad_status |= status.is_none();
                if let (Some(s), Some(_), false) = (status, ours, trailers)
                    && s >= 200
                {
                    on(Event::Status { stream, status: s });
                }
            } else if ours.is_some() && !trailers && status.is_some_and(|s| s >= 200) && !name.starts_with(b":") {
                on(Event::Field { stream, name, value });
            }
        })?;
        let Some(i) = ours else { return Ok(()) };
        if !trailers {
            match status {
                _ if bad_status => return Err(error(frame::PROTOCOL_ERROR, "a malformed :status")),
                None => return Err(error(frame::PROTOCOL_ERROR, "a response without :status")),
                Some(s) if s < 200 => {
                    // Informational (100 Continue, 103 Early Hints): the real head follows.
                    return if end_stream { Err(error(frame::PROTOCOL_ERROR, "an informational head ending its stream")) } else { Ok(()) };
                }
                Some(_) => self.open[i].responded = true,
            }
        } else if !end_stream {
            return Err(error(frame::PROTOCOL_ERROR, "trailers not ending their stream"));
        }
        if end_stream {
            self.close(stream);
            on(Event::End { stream });
        }
        Ok(())
    }

    /// Bytes held for what is not whole yet: a frame's start, a header block's pieces.
    #[cfg(fuzzing)]
    pub fn held(&self) -> usize {
        self.partial.len() + self.block_bytes.len()
    }

    /// Forgets stream `id`; whether it was open.
    fn close(&mut self, id: u32) -> bool {
        match self.open.iter().position(|s| s.id == id) {
            Some(i) => {
                self.open.swap_remove(i);
                true
            }
            None => false,
        }
    }
}

fn word(b: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(b.try_into().ok()?))
}

fn parse_status(value: &[u8]) -> Option<u16> {
    if value.len() != 3 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let s = value.iter().fold(0u16, |n, &d| n * 10 + (d - b'0') as u16);
    (100..=599).contains(&s).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::h2::frame::*;

    fn get() -> RequestBlocks {
        RequestBlocks { plain: vec![0x82], first: vec![0x82], repeat: vec![0x82], table: 0 }
    }

    /// What a connection made of `bytes` said, as text, fed `cut` bytes at a time.
    fn events(c: &mut Connection, bytes: &[u8], cut: usize) -> Result<Vec<String>, ConnError> {
        let mut seen = Vec::new();
        for piece in bytes.chunks(cut.max(1)) {
            c.receive(piece, |e| {
                seen.push(match e {
                    Event::Field { stream, name, value } => {
                        format!("field {stream} {}={}", String::from_utf8_lossy(name), String::from_utf8_lossy(value))
                    }
                    other => format!("{other:?}"),
                })
            })?;
        }
        Ok(seen)
    }

    /// A header block: :status (the static table's 200, else a literal), then literal fields.
    fn head(status: &str, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        if status == "200" {
            b.push(0x88);
        } else {
            b.extend_from_slice(&[0x08, status.len() as u8]);
            b.extend_from_slice(status.as_bytes());
        }
        for (n, v) in fields {
            // Literal with incremental indexing, a new name: the table changes.
            b.extend_from_slice(&[0x40, n.len() as u8]);
            b.extend_from_slice(n.as_bytes());
            b.push(v.len() as u8);
            b.extend_from_slice(v.as_bytes());
        }
        b
    }

    #[test]
    fn the_preface_settings_and_window_go_first() {
        let c = Connection::new();
        assert!(c.out.starts_with(PREFACE));
        let settings = Head::parse(c.out[PREFACE.len()..PREFACE.len() + HEAD].try_into().unwrap());
        assert_eq!((settings.kind, settings.len), (SETTINGS, 12));
        let at = PREFACE.len() + HEAD + 12;
        let window = Head::parse(c.out[at..at + HEAD].try_into().unwrap());
        assert_eq!((window.kind, window.stream), (WINDOW_UPDATE, 0));
        assert_eq!(&c.out[at + HEAD..], &(WINDOW - 65_535).to_be_bytes());
    }

    #[test]
    fn a_response_cut_anywhere_gives_the_same_events() {
        let mut server = Vec::new();
        settings(&mut server, &[(SETTINGS_MAX_CONCURRENT_STREAMS, 2)]);
        put(&mut server, HEADERS, END_HEADERS, 1, &head("103", &[]));
        let block = head("200", &[("x-served-by", "h2"), ("server", "t")]);
        put(&mut server, HEADERS, 0, 1, &block[..3]);
        put(&mut server, CONTINUATION, END_HEADERS, 1, &block[3..]);
        put(&mut server, DATA, PADDED, 1, &[3, b'h', b'e', b'l', 0, 0, 0]);
        put(&mut server, DATA, END_STREAM, 1, b"lo");
        // The second response refers to the table the first one filled (index 62, 63).
        put(&mut server, HEADERS, END_HEADERS | END_STREAM, 3, &[0x8d, 0xbf, 0xbe]);
        let want = vec![
            "Status { stream: 1, status: 200 }", "field 1 x-served-by=h2", "field 1 server=t", "Data { stream: 1, len: 3 }",
            "Data { stream: 1, len: 2 }", "End { stream: 1 }", "Status { stream: 3, status: 404 }", "field 3 x-served-by=h2",
            "field 3 server=t", "End { stream: 3 }",
        ];
        for cut in [1, 2, 7, 9, 10, 64, 4096] {
            let mut c = Connection::new();
            assert_eq!((c.request(&get()), c.request(&get())), (1, 3));
            c.out.clear();
            assert_eq!(events(&mut c, &server, cut).unwrap(), want, "cut {cut}");
            assert_eq!(c.open_streams(), 0);
            // The server's SETTINGS are acknowledged, its limit kept.
            assert_eq!(&c.out[..HEAD], &[0, 0, 0, SETTINGS, ACK, 0, 0, 0, 0]);
            assert!(c.can_open());
            c.request(&get());
            c.request(&get());
            assert!(!c.can_open(), "2 streams at most");
        }
    }

    #[test]
    fn indexes_after_the_first_request_until_the_server_shrinks_its_table() {
        let blocks = crate::protocol::h2::hpack::encode_request("GET", "https", "h:1", "/", &[], true);
        let mut c = Connection::new();
        let sent = |c: &mut Connection| {
            c.out.clear();
            c.request(&blocks);
            c.out[HEAD..].to_vec()
        };
        assert_eq!(sent(&mut c), blocks.first);
        assert_eq!(sent(&mut c), blocks.repeat);
        let mut server = Vec::new();
        settings(&mut server, &[(SETTINGS_HEADER_TABLE_SIZE, 0)]);
        events(&mut c, &server, 4096).unwrap();
        let after = sent(&mut c);
        assert_eq!(after[0], 0x20, "a size update to 0 first");
        assert_eq!(&after[1..], &blocks.plain[..]);
        assert_eq!(sent(&mut c), blocks.plain);
    }

    #[test]
    fn pings_resets_and_goaway() {
        let mut c = Connection::new();
        let (one, three, five) = (c.request(&get()), c.request(&get()), c.request(&get()));
        c.out.clear();
        let mut server = Vec::new();
        put(&mut server, PING, 0, 0, b"12345678");
        rst_stream(&mut server, three, 0x7);
        goaway(&mut server, one, NO_ERROR);
        assert_eq!(events(&mut c, &server, 4096).unwrap(), vec![
            "Reset { stream: 3, code: 7 }".to_string(), "GoAway { last: 1, code: 0 }".to_string()]);
        assert_eq!(&c.out[..HEAD], &[0, 0, 8, PING, ACK, 0, 0, 0, 0]);
        assert_eq!(&c.out[HEAD..HEAD + 8], b"12345678");
        assert!(!c.can_open() && c.going_away());
        assert_eq!(c.open_streams(), 1, "stream {five} was not processed; {one} goes on");
        // A cancelled stream's late bytes are only counted.
        c.cancel(one);
        let mut late = Vec::new();
        put(&mut late, DATA, END_STREAM, one, b"x");
        assert_eq!(events(&mut c, &late, 4096).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn protocol_errors_are_the_connections() {
        let cases: Vec<(Vec<u8>, u32)> = vec![
            ({ let mut b = Vec::new(); put(&mut b, DATA, 0, 0, b"x"); b }, PROTOCOL_ERROR),
            ({ let mut b = Vec::new(); put(&mut b, DATA, 0, 1, b"x"); b }, PROTOCOL_ERROR), // body before head
            ({ let mut b = Vec::new(); put(&mut b, HEADERS, 0, 1, &head("200", &[])); put(&mut b, PING, 0, 0, b"12345678"); b }, PROTOCOL_ERROR),
            ({ let mut b = Vec::new(); put(&mut b, PUSH_PROMISE, END_HEADERS, 1, &[0, 0, 0, 2]); b }, PROTOCOL_ERROR),
            ({ let mut b = Vec::new(); put(&mut b, HEADERS, END_HEADERS, 1, &[0x40, 1, b'x']); b }, COMPRESSION_ERROR),
            ({ let mut b = Vec::new(); put(&mut b, HEADERS, END_HEADERS, 1, &head("2x0", &[])); b }, PROTOCOL_ERROR),
            ({ let mut b = Vec::new(); put(&mut b, HEADERS, END_HEADERS | END_STREAM, 1, &head("100", &[])); b }, PROTOCOL_ERROR),
            ({ let mut b = Vec::new(); put(&mut b, PING, 0, 0, b"1234"); b }, FRAME_SIZE_ERROR),
            ({ let mut b = vec![0x00, 0x40, 0x01, DATA, 0, 0, 0, 0, 1]; b.resize(HEAD + 0x4001, 0); b }, FRAME_SIZE_ERROR),
        ];
        for (bytes, code) in cases {
            let mut c = Connection::new();
            c.request(&get());
            let got = events(&mut c, &bytes, 4096);
            assert_eq!(got.map_err(|e| e.code), Err(code), "{bytes:x?}");
        }
    }
}

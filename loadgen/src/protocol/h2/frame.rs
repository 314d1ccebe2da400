//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte head, and the few frames a client
//! that only sends requests without bodies writes.

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const HEAD: usize = 9;
/// SETTINGS_MAX_FRAME_SIZE's initial value: what the server may send us (we do not
/// raise it) and the most we send it.
pub const MAX_FRAME: usize = 16_384;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY: u8 = 0x20;

pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;

/// Error codes (§7) this client sends or names.
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const CANCEL: u32 = 0x8;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// A frame's head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    pub fn parse(b: &[u8; HEAD]) -> Head {
        Head {
            len: (b[0] as usize) << 16 | (b[1] as usize) << 8 | b[2] as usize,
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }
}

pub fn put(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = payload.len();
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

pub fn settings(out: &mut Vec<u8>, values: &[(u16, u32)]) {
    let mut payload = Vec::with_capacity(values.len() * 6);
    for &(id, value) in values {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    put(out, SETTINGS, 0, 0, &payload);
}

pub fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put(out, WINDOW_UPDATE, 0, stream, &increment.to_be_bytes());
}

pub fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    put(out, RST_STREAM, 0, stream, &code.to_be_bytes());
}

#[cfg(test)] // a server's frame: the tests' servers send it
pub fn goaway(out: &mut Vec<u8>, last: u32, code: u32) {
    let mut payload = [0u8; 8];
    payload[..4].copy_from_slice(&last.to_be_bytes());
    payload[4..].copy_from_slice(&code.to_be_bytes());
    put(out, GOAWAY, 0, 0, &payload);
}

/// A request's HEADERS (the block whole, or its head and CONTINUATIONs past
/// MAX_FRAME), ending the stream: the request has no body.
pub fn request(out: &mut Vec<u8>, stream: u32, block: &[u8]) {
    let mut pieces = block.chunks(MAX_FRAME).peekable();
    let first = pieces.next().unwrap_or(&[]);
    let last = pieces.peek().is_none();
    put(out, HEADERS, END_STREAM | if last { END_HEADERS } else { 0 }, stream, first);
    while let Some(piece) = pieces.next() {
        put(out, CONTINUATION, if pieces.peek().is_none() { END_HEADERS } else { 0 }, stream, piece);
    }
}

/// The payload without its padding (PADDED frames: DATA, HEADERS); None: padding
/// longer than the frame, a PROTOCOL_ERROR.
pub fn unpadded(flags: u8, payload: &[u8]) -> Option<&[u8]> {
    if flags & PADDED == 0 {
        return Some(payload);
    }
    let (&pad, rest) = payload.split_first()?;
    rest.len().checked_sub(pad as usize).map(|end| &rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_round_trip_and_padding_is_stripped() {
        let mut out = Vec::new();
        put(&mut out, DATA, END_STREAM | PADDED, 0x8000_0003, &[2, b'h', b'i', 0, 0]);
        let head = Head::parse(out[..HEAD].try_into().unwrap());
        assert_eq!(head, Head { len: 5, kind: DATA, flags: END_STREAM | PADDED, stream: 3 }, "the reserved bit is ignored");
        assert_eq!(unpadded(head.flags, &out[HEAD..]), Some(&b"hi"[..]));
        assert_eq!(unpadded(PADDED, &[5, 1, 2]), None);
        assert_eq!(unpadded(PADDED, &[]), None);
    }

    #[test]
    fn a_large_request_block_goes_in_continuations() {
        let block = vec![7u8; MAX_FRAME * 2 + 10];
        let mut out = Vec::new();
        request(&mut out, 5, &block);
        let mut at = 0;
        let mut frames = Vec::new();
        while at < out.len() {
            let head = Head::parse(out[at..at + HEAD].try_into().unwrap());
            frames.push((head.kind, head.flags, head.len));
            at += HEAD + head.len;
        }
        assert_eq!(frames, vec![(HEADERS, END_STREAM, MAX_FRAME), (CONTINUATION, 0, MAX_FRAME), (CONTINUATION, END_HEADERS, 10)]);
        out.clear();
        request(&mut out, 1, b"abc");
        assert_eq!(&out[..HEAD], &[0, 0, 3, HEADERS, END_STREAM | END_HEADERS, 0, 0, 0, 1]);
    }
}

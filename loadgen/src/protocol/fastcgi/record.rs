//! FastCGI record framing (spec §3.3): an 8-byte header, content, padding.

pub const VERSION_1: u8 = 1;
pub const BEGIN_REQUEST: u8 = 1;
pub const END_REQUEST: u8 = 3;
pub const PARAMS: u8 = 4;
pub const STDIN: u8 = 5;
pub const STDOUT: u8 = 6;
pub const STDERR: u8 = 7;

/// §5.1: the only role we play.
pub const ROLE_RESPONDER: u16 = 1;
/// §5.1: keep the connection open after the request (the keep-alive of FastCGI).
pub const FLAG_KEEP_CONN: u8 = 1;
/// §5.5: END_REQUEST protocolStatus for a request the application handled.
pub const REQUEST_COMPLETE: u8 = 0;

/// One request at a time per connection, so every request can use id 1 (§3.3:
/// 0 is reserved for management records).
pub const REQUEST_ID: u16 = 1;

/// Largest content of one record (contentLength is 16 bits).
pub const MAX_CONTENT: usize = 0xFFFF;

pub const HEADER_LEN: usize = 8;

/// A record's header, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u8,
    pub kind: u8,
    pub request_id: u16,
    pub content_len: u16,
    pub padding_len: u8,
}

impl Header {
    pub fn decode(b: &[u8; HEADER_LEN]) -> Header {
        Header {
            version: b[0],
            kind: b[1],
            request_id: u16::from_be_bytes([b[2], b[3]]),
            content_len: u16::from_be_bytes([b[4], b[5]]),
            padding_len: b[6],
        }
    }
}

/// Appends one record; content is padded to a multiple of 8 bytes as the spec
/// recommends (§3.3) and nginx does.
pub fn push(out: &mut Vec<u8>, kind: u8, content: &[u8]) {
    assert!(content.len() <= MAX_CONTENT, "record content over 64 KB");
    let padding = (8 - content.len() % 8) % 8;
    let len = (content.len() as u16).to_be_bytes();
    let id = REQUEST_ID.to_be_bytes();
    out.extend_from_slice(&[VERSION_1, kind, id[0], id[1], len[0], len[1], padding as u8, 0]);
    out.extend_from_slice(content);
    out.extend(std::iter::repeat_n(0u8, padding));
}

/// Appends a stream (§3.3): the data in records of at most 64 KB, then the empty
/// record that ends the stream.
pub fn push_stream(out: &mut Vec<u8>, kind: u8, data: &[u8]) {
    for piece in data.chunks(MAX_CONTENT - 7) {
        push(out, kind, piece);
    }
    push(out, kind, &[]);
}

/// Appends one name-value pair (§3.4): lengths below 128 take one byte, others
/// four with the top bit set.
pub fn push_pair(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    for len in [name.len(), value.len()] {
        if len < 128 {
            out.push(len as u8);
        } else {
            out.extend_from_slice(&((len as u32) | 0x8000_0000).to_be_bytes());
        }
    }
    out.extend_from_slice(name);
    out.extend_from_slice(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_padded_to_8() {
        let mut out = Vec::new();
        push(&mut out, STDIN, b"abc");
        assert_eq!(out.len(), 16);
        let h = Header::decode(out[..8].try_into().unwrap());
        assert_eq!(h, Header { version: 1, kind: STDIN, request_id: 1, content_len: 3, padding_len: 5 });
        let mut out = Vec::new();
        push_stream(&mut out, PARAMS, &[]);
        assert_eq!(out, [1, PARAMS, 0, 1, 0, 0, 0, 0]);
    }

    #[test]
    fn long_streams_are_split() {
        let mut out = Vec::new();
        push_stream(&mut out, PARAMS, &vec![7u8; 100_000]);
        let first = Header::decode(out[..8].try_into().unwrap());
        assert!(first.content_len as usize <= MAX_CONTENT);
        assert_eq!((first.content_len as usize + first.padding_len as usize) % 8, 0);
    }

    #[test]
    fn pair_lengths() {
        let mut out = Vec::new();
        push_pair(&mut out, b"A", &[b'v'; 200]);
        assert_eq!(&out[..5], &[1, 0x80, 0, 0, 200]);
        assert_eq!(out.len(), 5 + 1 + 200);
    }
}

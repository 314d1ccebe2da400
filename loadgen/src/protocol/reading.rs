//! What every response reader reports, whatever the protocol: how far it got, the
//! completed response, or why reading failed; and the bounds every reader keeps
//! (loadgen/README.md, "Bounds, and hostile servers"). A leaf: the HTTP and
//! FastCGI readers (and the chunked decoder and header captures) import these;
//! nothing here imports them back.

/// The largest response head (status line, header lines and the empty line that
/// ends them; FastCGI: the CGI head), and so the most a reader ever buffers of
/// one. nginx's default large buffers are 4 × 8 KB; 64 KB is far above any sane
/// server.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Header lines per head, at most (httparse parses into a fixed array).
pub const MAX_HEADERS: usize = 100;

/// A reader keeps the buffer of a head that arrived in pieces for the next one
/// only up to this size (most heads are well under 1 KB); a larger one is freed
/// once its head is parsed, so an idle connection holds at most this much.
pub const RETAINED_BYTES: usize = 4 * 1024;

/// Why a response could not be parsed. `TooLarge` maps to the `too_large` error
/// class, `Rejected` to `rejected`, `TrailingBytes` to `length_mismatch`, the
/// others to `parse`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Status line or header syntax (httparse), or a status outside 100..=599.
    Head,
    BadContentLength,
    Chunk,
    /// 101 Switching Protocols: we never ask for an upgrade.
    Upgrade,
    /// A part of the response over one of the engine's bounds: well-formed,
    /// perhaps, but more than the engine will buffer or believe.
    TooLarge(Bound),
    /// Bytes after the framed end of a response (we never pipeline, so nothing
    /// may follow it): most likely a body longer than its Content-Length. RFC 9112
    /// §6.3 forbids taking them as the next response.
    TrailingBytes,
    /// FastCGI: END_REQUEST with a protocol status other than REQUEST_COMPLETE (the
    /// application refused the request). Its own error class, `rejected`.
    Rejected,
}

/// The engine's bounds on what a server sends (loadgen/README.md, "Bounds").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// A head over `MAX_HEAD_BYTES`.
    Head,
    /// More than `MAX_HEADERS` header lines.
    Headers,
    /// A chunk-size line (size and extensions) over 4 KB (chunked.rs).
    ChunkLine,
    /// A chunk size of more than 15 hex digits (≥ 2^60 bytes).
    ChunkSize,
    /// A trailer section over 64 KB (chunked.rs).
    Trailers,
}

/// Empties `buf` for reuse, freeing it when it grew past `RETAINED_BYTES`.
pub fn clear_retaining(buf: &mut Vec<u8>) {
    if buf.capacity() > RETAINED_BYTES {
        *buf = Vec::new();
    } else {
        buf.clear();
    }
}

/// How the connection ended early, when it closed before a full response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EofError {
    /// Not one byte of this response arrived.
    BeforeResponse,
    /// The head was cut short.
    InHead,
    /// The body was shorter than its framing announced.
    InBody,
}

/// A fully read response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completed {
    pub status: u16,
    /// The connection must not be reused (Connection: close, HTTP/1.0, body ended by close).
    pub close: bool,
}

/// Where a reader stands after the bytes it was fed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    More,
    Done(Completed),
}

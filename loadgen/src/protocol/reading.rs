//! What every response reader reports, whatever the protocol: how far it got, the
//! completed response, or why reading failed. A leaf: the HTTP and FastCGI readers
//! (and the chunked decoder inside the HTTP one) import these; nothing here
//! imports them back.

/// A head longer than this is treated as garbage (nginx's default large buffers
/// are 4 × 8 KB; 64 KB is far above any sane server).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Why a response could not be parsed. All map to the `parse` error class but
/// `Rejected`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Status line or header syntax (httparse), or a status outside 100..=599.
    Head,
    HeadTooLarge,
    BadContentLength,
    Chunk,
    /// 101 Switching Protocols: we never ask for an upgrade.
    Upgrade,
    /// FastCGI: END_REQUEST with a protocol status other than REQUEST_COMPLETE (the
    /// application refused the request). Its own error class, `rejected`.
    Rejected,
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

//! The io_uring I/O path (`--io uring`): one ring per engine thread, driven by a
//! task of the thread's tokio runtime, and a connection type over it.
//!
//! ```text
//! setup    the ring's flags and sizes; the probe that decides epoll or io_uring
//! bufs     the provided-buffer ring shared by the thread's connections
//! ring     submission batching, completions, the driver task, cancellation
//! stream   a connection: AsyncRead + AsyncWrite + poll_discard
//! ```
//!
//! Connects stay on tokio (rare with keep-alive): the connected socket is then
//! handed over. Sits beside `net` (which has the `Stream::Uring` variant), below
//! `config` and `client`.

mod bufs;
mod ring;
mod setup;
mod stream;

pub use ring::Ring;
pub use setup::{probe, refusal};
pub use stream::UringStream;

/// Which I/O path runs the connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoMode {
    /// Readiness (epoll through tokio), a send and a receive per request.
    Epoll,
    /// Completions (io_uring): one io_uring_enter submits many connections' operations.
    Uring,
}

impl IoMode {
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Epoll => "epoll",
            IoMode::Uring => "uring",
        }
    }
}

#[cfg(test)]
mod tests;

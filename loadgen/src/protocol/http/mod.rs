//! HTTP/1.1 on the wire: the request we send (formatted once) and an incremental
//! response reader that never allocates on the hot path.

pub mod chunked;
pub mod head_memo;
pub mod request;
pub mod response;

#[cfg(test)]
mod fuzz_tests;

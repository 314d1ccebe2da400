//! HTTP/2 on the wire: the request parts, built once per URL. On the task loop
//! frames, HPACK and flow control are the `h2` crate's (hyper's); the direct loop
//! (client/direct_h2.rs) speaks them itself through `client` (one connection,
//! without I/O), `frame` and `hpack` — readers of what a server sends, so the
//! fuzzer has them too (fuzz/).

pub mod client;
pub mod frame;
pub mod hpack;
// Not in the fuzzer's build: the task loop's request (the `http` crate's types).
#[cfg(not(fuzzing))]
pub mod request;

//! HTTP/2 on the wire: the request parts, built once per URL. Frames, HPACK and
//! flow control are the `h2` crate's (hyper's): the engine parses no HTTP/2 bytes
//! itself, so there is no reader here and nothing new for the fuzzer.

pub mod request;

//! What goes on the wire, for each protocol the engine speaks: the request,
//! formatted once, and an incremental response reader that never allocates on the
//! hot path.
//!
//! Dependencies point one way: `reader` (the run's protocol, chosen once) →
//! `http`, `fastcgi` → `capture` (`--count-header` values) → `reading` (what
//! every reader reports, and the bounds), which imports nothing here. A new
//! protocol is a folder next to `http/` and one more arm in `reader.rs`.

pub mod capture;
pub mod fastcgi;
pub mod h2;
pub mod http;
pub mod reader;
pub mod reading;

pub use reader::{Protocol, Reader};

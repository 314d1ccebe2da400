//! The client side of the load: one engine thread and the connections it runs.
//!
//! Dependencies point one way, from the thread down to what all its connections
//! share, never back:
//!
//! ```text
//! worker      an engine thread: CPU sampling; the direct loop or the task loop
//!   direct, direct_h2   the direct loop's HTTP/1.1 clients (TLS: direct_tls) and
//!             HTTP/2 connections, no task per connection
//!     direct_loop   its turn: epoll, deadlines, coalesced waits (pacer, arrival)
//!     direct_lane   a client (or stream slot) as the statistics see it
//!   conn      one connection's loop (closed / open loop)
//!   page      one visitor's loop (page mode), and a page view (shared with visit)
//!   visit     one visitor slot's visits (--journey): login, pages, think times, its jar
//!     lane    a client connection as the statistics see it (--http2: a stream slot)
//!       exchange   one request/response on a socket
//!       h2         one request on a shared HTTP/2 connection (falls back to exchange)
//!         connect  opening a connection: TCP, unix socket, TLS handshake
//!         deadline, slow_read   per-connection timeout and read pacing
//! rules       the per-request rules both loops ask: deadline, counted or not, error
//!             classes, retry, keep-alive after a response; imports none of them
//! context     the thread context every module above reads (config, schedule,
//!             picker, statistics, read buffer); imports none of them
//! ```

mod arrival;
mod conn;
mod connect;
mod direct;
mod direct_h2;
mod direct_lane;
mod direct_loop;
mod direct_tls;
mod context;
mod deadline;
mod exchange;
mod h2;
mod join;
mod lane;
mod pacer;
mod page;
mod rules;
mod slow_read;
mod visit;
pub mod worker;

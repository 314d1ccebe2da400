//! Opening a connection for a request: TCP (or a unix socket), then, for https,
//! the TLS handshake with the thread's connector. What it cost and negotiated
//! goes into the request's `Transfer` (recorded for measured requests only).

use std::io;
use std::time::Instant;

use super::context::ThreadContext;
use crate::net::{self, Endpoint, Stream};
use crate::stats::{Detail, ErrorClass};
use crate::tls::{self, Handshake};

/// A new connection, ready for its first request.
pub struct Opened {
    pub stream: Stream,
    /// https only.
    pub handshake: Option<Handshake>,
}

/// Why a connection could not be opened: the request's error class and detail.
pub type Refused = (ErrorClass, Option<Detail>);

/// Errors meaning "the peer closed or reset the connection".
pub fn closed_by_peer(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionAborted
    )
}

/// ECONNRESET while connecting: the handshake completed and the server reset the
/// connection before the connect was seen to succeed. It was accepted, so it is a
/// reset, not a connect failure (refused, unreachable...).
pub(super) fn connect_failure(e: &io::Error) -> Refused {
    (if closed_by_peer(e) { ErrorClass::Reset } else { ErrorClass::Connect }, None)
}

/// Opens a connection to the run's endpoint. `http11_only`: offer ALPN http/1.1
/// alone even in an --http2 run (the HTTP/1.1 connection of an h2 fallback).
pub async fn open(ctx: &ThreadContext, http11_only: bool) -> Result<Opened, Refused> {
    let cfg = &*ctx.cfg;
    // --io uring: connected by tokio, then handed to the thread's ring (no-op on epoll).
    let Some(tls) = &ctx.tls else {
        let stream = net::connect(&cfg.endpoint, cfg.connect).await.and_then(Stream::onto_ring);
        return Ok(Opened { stream: stream.map_err(|e| connect_failure(&e))?, handshake: None });
    };
    let Endpoint::Tcp(addr) = cfg.endpoint else { unreachable!("https targets are TCP (config/from_cli.rs)") };
    let started = Instant::now();
    let tcp = net::connect_tcp(addr, cfg.connect).await.and_then(|s| Stream::Tcp(s).onto_ring());
    let tcp = tcp.map_err(|e| connect_failure(&e))?;
    let connected = Instant::now();
    let connector = if http11_only { &tls.http11 } else { &tls.connector };
    // Boxed: a handshake in progress holds a whole rustls connection; inline, it
    // would grow the future of every request, clear text included.
    let (stream, handshake) = Box::pin(tls::handshake(connector, &tls.name, tcp, started, connected)).await?;
    Ok(Opened { stream: Stream::Tls(Box::new(stream)), handshake: Some(handshake) })
}

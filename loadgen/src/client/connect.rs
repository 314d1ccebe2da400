//! Opening a connection for a request: TCP (or a unix socket), then, for https,
//! the TLS handshake with the thread's connector. What it cost and negotiated
//! goes into the request's `Transfer` (recorded for measured requests only).

use std::time::Instant;

use super::context::ThreadContext;
use super::rules::{Failure, connect_failed};
use crate::net::{self, Endpoint, Stream};
use crate::tls::{self, Handshake};

/// A new connection, ready for its first request.
pub struct Opened {
    pub stream: Stream,
    /// https only.
    pub handshake: Option<Handshake>,
}

/// Opens a connection to the run's endpoint. `http11_only`: offer ALPN http/1.1
/// alone even in an --http2 run (the HTTP/1.1 connection of an h2 fallback).
pub async fn open(ctx: &ThreadContext, http11_only: bool) -> Result<Opened, Failure> {
    let cfg = &*ctx.cfg;
    // --io uring: connected by tokio, then handed to the thread's ring (no-op on epoll).
    let Some(tls) = &ctx.tls else {
        let stream = net::connect(&cfg.endpoint, cfg.connect).await.and_then(Stream::onto_ring);
        return Ok(Opened { stream: stream.map_err(|e| connect_failed(&e))?, handshake: None });
    };
    let Endpoint::Tcp(addr) = cfg.endpoint else { unreachable!("https targets are TCP (config/from_cli.rs)") };
    let started = Instant::now();
    let tcp = net::connect_tcp(addr, cfg.connect).await.and_then(|s| Stream::Tcp(s).onto_ring());
    let tcp = tcp.map_err(|e| connect_failed(&e))?;
    let connected = Instant::now();
    let connector = if http11_only { &tls.http11 } else { &tls.connector };
    // Boxed: a handshake in progress holds a whole rustls connection; inline, it
    // would grow the future of every request, clear text included.
    let (stream, handshake) = Box::pin(tls::handshake(connector, &tls.name, tcp, started, connected)).await?;
    Ok(Opened { stream: Stream::Tls(Box::new(stream)), handshake: Some(handshake) })
}

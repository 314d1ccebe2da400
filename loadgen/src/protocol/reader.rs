//! The response reader of the run's protocol: HTTP/1.1, or FastCGI. An enum, not
//! a trait object: one predictable branch per call, no allocation, no vtable.

use std::rc::Rc;

use super::capture::Captures;
use super::fastcgi::response::FcgiReader;
use super::http::head_memo::HeadMemo;
use super::http::response::ResponseReader;
use super::reading::{Completed, EofError, ParseError, Progress};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Http,
    FastCgi,
}

pub enum Reader {
    Http(ResponseReader),
    FastCgi(FcgiReader),
}

impl Reader {
    /// `memo`: the thread's last parsed HTTP head (http/head_memo.rs).
    pub fn new(protocol: Protocol, keepalive: bool, watch: Rc<[String]>, memo: &Rc<HeadMemo>) -> Reader {
        match protocol {
            Protocol::Http => Reader::Http(ResponseReader::with_captures(watch, memo.clone())),
            Protocol::FastCgi => Reader::FastCgi(FcgiReader::new(keepalive, watch)),
        }
    }

    #[inline]
    pub fn start(&mut self, head_request: bool) {
        match self {
            Reader::Http(r) => r.start(head_request),
            Reader::FastCgi(r) => r.start(),
        }
    }

    #[inline]
    pub fn feed(&mut self, data: &[u8]) -> Result<Progress, ParseError> {
        match self {
            Reader::Http(r) => r.feed(data),
            Reader::FastCgi(r) => r.feed(data),
        }
    }

    pub fn eof(&mut self) -> Result<Completed, EofError> {
        match self {
            Reader::Http(r) => r.eof(),
            Reader::FastCgi(r) => r.eof(),
        }
    }

    pub fn reset(&mut self) {
        match self {
            Reader::Http(r) => r.reset(),
            Reader::FastCgi(r) => r.reset(),
        }
    }

    #[inline]
    pub fn body_bytes(&self) -> u64 {
        match self {
            Reader::Http(r) => r.body_bytes(),
            Reader::FastCgi(r) => r.body_bytes(),
        }
    }

    /// Body bytes that may be discarded unseen (HTTP only: a FastCGI body comes in
    /// records whose heads must be read, over a unix socket that cannot discard).
    #[inline]
    pub fn skippable(&self) -> u64 {
        match self {
            Reader::Http(r) => r.skippable(),
            Reader::FastCgi(_) => 0,
        }
    }

    /// `n` bytes of what `skippable()` allowed were discarded.
    pub fn skipped(&mut self, n: u64) -> Progress {
        match self {
            Reader::Http(r) => r.skipped(n),
            Reader::FastCgi(_) => Progress::More,
        }
    }

    pub fn started(&self) -> bool {
        match self {
            Reader::Http(r) => r.started(),
            Reader::FastCgi(r) => r.started(),
        }
    }

    pub fn captures(&self) -> &Captures {
        match self {
            Reader::Http(r) => r.captures(),
            Reader::FastCgi(r) => r.captures(),
        }
    }
}

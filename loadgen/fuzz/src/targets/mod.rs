//! The fuzz targets: the engine's response readers (HTTP/1.1, FastCGI) and its
//! HTTP/2 connection (h2.rs, checked its own way), each driven the way the
//! engine drives it (reads cut anywhere, a new response after each complete one
//! on a kept-alive connection, EOF at the end) and checked after every read.
//!
//! What every target checks (a violation is a finding):
//! - no panic;
//! - bounded buffers: after every read, the memory the reader holds for a head
//!   stays under its bound, and between responses under `RETAINED_BYTES`;
//! - split invariance: where the cut reader ends a response (or fails), a fresh
//!   reader fed the same bytes in one read says exactly the same;
//! - an independent reference: a completed response spans exactly the bytes its
//!   framing says, with the body length its Content-Length or chunks say;
//! - a work budget (HTTP): the head parser scans at most twice the bytes fed,
//!   so no input makes reading quadratic;
//! - no hang: main.rs's watchdog stops a case that runs too long.

pub mod fastcgi;
pub mod h2;
pub mod http;

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::case::Case;
use crate::mutate::Grammar;
use crate::protocol::reading::{ParseError, Progress};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Http,
    FastCgi,
    H2,
}

impl Target {
    pub const ALL: [Target; 3] = [Target::Http, Target::FastCgi, Target::H2];

    pub fn name(self) -> &'static str {
        match self {
            Target::Http => "http",
            Target::FastCgi => "fastcgi",
            Target::H2 => "h2",
        }
    }

    pub fn grammar(self) -> Grammar {
        match self {
            Target::Http => Grammar::Http,
            Target::FastCgi => Grammar::FastCgi,
            Target::H2 => Grammar::H2,
        }
    }

    /// Runs one case; a finding if anything above is violated.
    pub fn run(self, case: &Case) -> Result<(), Finding> {
        let checked = catch_unwind(AssertUnwindSafe(|| match self {
            Target::Http => http::check(case),
            Target::FastCgi => fastcgi::check(case),
            Target::H2 => h2::check(case),
        }));
        checked.unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Err(Finding::new("panic", message))
        })
    }
}

/// What a case revealed: a kind (the file name's prefix) and what was seen.
#[derive(Debug)]
pub struct Finding {
    pub kind: &'static str,
    pub detail: String,
}

impl Finding {
    pub fn new(kind: &'static str, detail: impl Into<String>) -> Finding {
        Finding { kind, detail: detail.into() }
    }
}

/// A finding unless `ok`.
pub fn ensure(ok: bool, kind: &'static str, detail: impl FnOnce() -> String) -> Result<(), Finding> {
    if ok { Ok(()) } else { Err(Finding::new(kind, detail())) }
}

/// What a reader said about some bytes: the part to compare.
#[derive(Debug, PartialEq, Eq)]
pub enum Said {
    Done { status: u16, close: bool, body: u64 },
    Failed(ParseError),
}

impl Said {
    /// What `result` says, with the reader's body count; None while it wants more.
    pub fn of(result: Result<Progress, ParseError>, body: u64) -> Option<Said> {
        match result {
            Ok(Progress::More) => None,
            Ok(Progress::Done(c)) => Some(Said::Done { status: c.status, close: c.close, body }),
            Err(e) => Some(Said::Failed(e)),
        }
    }
}

/// Split invariance: what a fresh reader said of bytes `from..to` in one read must
/// be what the reader said of them in pieces.
pub fn same_at_once(cut: &Said, at_once: Option<Said>, from: usize, to: usize) -> Result<(), Finding> {
    ensure(at_once.as_ref() == Some(cut), "split", || {
        format!("bytes {from}..{to}: read in pieces {cut:?}, in one read {at_once:?}")
    })
}

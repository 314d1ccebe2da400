//! The per-request rules of both event loops, in one place: when a request times
//! out or is cut off by the run's end, whether a request that ended is counted,
//! which error class each way an attempt can fail is counted in, when a failed
//! attempt is retried on a new connection instead, and whether a connection stays
//! open after a response (loadgen/README.md, "What the numbers mean" and "TLS and
//! HTTP/2"). Functions of what happened, with no I/O and no state of their own: the
//! task loop (exchange.rs, h2.rs) and the direct loop (direct.rs, direct_h2.rs,
//! direct_lane.rs) each say what happened in their own terms — a `Cause` and where
//! the attempt stood — and do what the answer says, so the same events count the
//! same on either loop.
//!
//! The rules, each asked by the task loop and the direct loop alike:
//!
//! - `Deadline`: a request must be over `--timeout` after its start (connect, write,
//!   response, a retry included), or at the run's end if that comes first — then it
//!   is cut off, in flight at the end, not a timeout;
//! - `counted`: a request answered after the run's end is not counted;
//! - `judge`: a failed attempt's error class, or its one retry on a new connection
//!   (`Cause::after_goaway`: after a GOAWAY with an error code, that GOAWAY is what
//!   ended the connection; `connect_failed`: a failed connect's class);
//! - `keep_open`: whether a connection stays open after a whole response.
//!
//! Shared the same way, elsewhere: a response's status class (2xx or not, and the
//! count by status) is the statistics' (`Sample::is_2xx`, stats/mod.rs), recorded
//! through `Tally::ended` (lane.rs) by both loops; a TLS handshake's failure class
//! is tls.rs's (`classify`, `classify_tls`); what a response's bytes mean (framing,
//! `Connection: close`, malformed) is the response reader's (protocol/).

use std::io;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::protocol::h2::frame::NO_ERROR;
use crate::protocol::reading::{EofError, ParseError};
use crate::stats::{Detail, ErrorClass, Outcome, Transfer};

/// When a request must be over: its connect, write and whole response, a retry
/// included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    pub at: Instant,
    /// The run ends first: a request still unanswered then is cut off — in flight
    /// at the end, neither completed nor failed — not a timeout.
    pub run_end: bool,
}

impl Deadline {
    /// The deadline of a request begun at `start`: `timeout` later, or the run's end
    /// if that comes first.
    pub fn of(start: Instant, timeout: Duration, run_end: Option<Instant>) -> Deadline {
        let timeout_at = start + timeout;
        match run_end {
            Some(end) if end <= timeout_at => Deadline { at: end, run_end: true },
            _ => Deadline { at: timeout_at, run_end: false },
        }
    }
}

/// Whether a request that ended at `end` is counted: one answered after the run's
/// end is not (the measured window stays exact); it is in flight at the end, and
/// its client stops.
pub fn counted(end: Instant, run_end: Option<Instant>) -> bool {
    run_end.is_none_or(|e| end <= e)
}

/// Whether a connection stays open for the next request after a whole response:
/// not when the response ends it (`close`: `Connection: close`, HTTP/1.0 without
/// keep-alive, a body ended by the close), without keep-alive, nor once it has
/// carried `--keepalive-requests` responses (`uses`, this one included).
pub fn keep_open(cfg: &Config, close: bool, uses: u32) -> bool {
    !close && cfg.keepalive && cfg.keepalive_requests.is_none_or(|n| uses < n)
}

/// A failed request's error class, and its detail where the class has one
/// (`error_details`: a TLS alert, an HTTP/2 error code).
pub type Failure = (ErrorClass, Option<Detail>);

/// ECONNRESET, EPIPE, ECONNABORTED: the peer closed or reset the connection.
pub fn closed_by_peer(kind: io::ErrorKind) -> bool {
    matches!(kind, io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionAborted)
}

/// The class of a failed TCP (or unix socket) connect. A reset means the server had
/// accepted — the handshake completed and the server reset the connection before the
/// connect was seen to succeed —, so it is a reset, not a connect failure (refused,
/// unreachable...).
pub fn connect_failed(e: &io::Error) -> Failure {
    (if closed_by_peer(e.kind()) { ErrorClass::Reset } else { ErrorClass::Connect }, None)
}

/// What ended an attempt before its response was whole, as the loop saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The connection could not be opened, already classed (`connect_failed`, tls.rs).
    Refused(Failure),
    /// Writing the request failed.
    Write(io::ErrorKind),
    /// Reading failed.
    Read(io::ErrorKind),
    /// HTTP/2: the shared connection's I/O failed (a stream cannot tell which way),
    /// or it ended (UnexpectedEof).
    H2Io(io::ErrorKind),
    /// The server ended the connection before the response was whole, where the
    /// response reader stood (HTTP/1.1, FastCGI).
    Eof(EofError),
    /// The HTTP/2 connection was gone when the request came to it (closed by the
    /// server while idle, or by our side), or ended under it.
    Gone,
    /// The response reader refused what the server sent.
    Malformed(ParseError),
    /// A TLS record that does not decrypt, after the handshake: the stream is unreadable.
    BadRecord,
    /// HTTP/2: a GOAWAY with this code (NO_ERROR: graceful) cut the request off.
    GoAway(u32),
    /// HTTP/2: the server reset the request's stream with this code.
    StreamReset(u32),
    /// HTTP/2: a protocol error in what the server sent, its code if known.
    Protocol(Option<u32>),
    /// The deadline passed (`Deadline`; not the run's end, which fails nothing).
    Timeout,
}

impl Cause {
    /// What cut a request off its HTTP/2 connection, once the server had sent GOAWAY
    /// with `goaway` (its code): with an error code, that GOAWAY is the cause, not the
    /// reset, close or garbage that ended the connection behind it.
    pub fn after_goaway(self, goaway: Option<u32>) -> Cause {
        match (self, goaway) {
            (Cause::H2Io(_) | Cause::Gone | Cause::BadRecord | Cause::Protocol(_), Some(code))
                if code != NO_ERROR =>
            {
                Cause::GoAway(code)
            }
            _ => self,
        }
    }
}

/// Where the failed attempt stood, for the retry rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The request's one retry is unused, and its connection is one a retry is for.
    /// HTTP/1.1 and FastCGI: a kept-alive one (it served a request before), which the
    /// server may have closed while idle; a new connection that fails is a failure.
    /// HTTP/2: any, since it is shared and the server may have closed it or sent it
    /// away while another stream opened or used it.
    pub may_retry: bool,
    /// Not one byte of this request's response had arrived.
    pub nothing_yet: bool,
}

/// What becomes of a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not counted: the request goes again on a new connection (its retry used).
    /// As browsers and hyper do for a kept-alive connection the server closed while
    /// idle, and the h2 crate for a connection gone away.
    Retry,
    /// Counted failed.
    Failed(Failure),
}

/// The verdict on an attempt that ended with `cause`. A connection the server closed
/// or reset, or sent away gracefully, before any byte of the response is retried
/// where `attempt` allows it; everything else is counted in its class. Exhaustive on
/// purpose: a new cause must be given its class here.
pub fn judge(cause: Cause, attempt: Attempt) -> Verdict {
    let retry = attempt.may_retry && attempt.nothing_yet;
    let class = match cause {
        Cause::Refused(failure) => return Verdict::Failed(failure),
        // The response of a request not yet written cannot have begun.
        Cause::Write(kind) if closed_by_peer(kind) && attempt.may_retry => return Verdict::Retry,
        Cause::Read(kind) if closed_by_peer(kind) && retry => return Verdict::Retry,
        Cause::Write(kind) | Cause::Read(kind) if closed_by_peer(kind) => ErrorClass::Reset,
        Cause::Write(_) => ErrorClass::Write,
        Cause::Read(_) => ErrorClass::Read,
        // Closed or reset before the response began, the connection is gone: as the h2
        // crate reconnects, once; cut off twice, read.
        Cause::H2Io(kind) if attempt.nothing_yet && (closed_by_peer(kind) || kind == io::ErrorKind::UnexpectedEof) => {
            if attempt.may_retry {
                return Verdict::Retry;
            }
            ErrorClass::Read
        }
        Cause::H2Io(kind) if closed_by_peer(kind) => ErrorClass::Reset,
        Cause::H2Io(_) => ErrorClass::Read,
        Cause::Eof(EofError::BeforeResponse) if attempt.may_retry => return Verdict::Retry,
        Cause::Eof(EofError::BeforeResponse | EofError::InHead) => ErrorClass::Read,
        // The body was shorter than its framing said.
        Cause::Eof(EofError::InBody) => ErrorClass::LengthMismatch,
        Cause::Gone if retry => return Verdict::Retry,
        Cause::Gone => ErrorClass::Read,
        Cause::Malformed(e) => malformed(e),
        Cause::BadRecord => ErrorClass::Read,
        // A graceful GOAWAY before the response began: the server never took the
        // request. Cut off twice: a connection that ended under it, read.
        Cause::GoAway(NO_ERROR) if attempt.nothing_yet => {
            if attempt.may_retry {
                return Verdict::Retry;
            }
            ErrorClass::Read
        }
        Cause::GoAway(code) => return Verdict::Failed((ErrorClass::H2Goaway, Some(Detail::H2(code)))),
        Cause::StreamReset(code) => return Verdict::Failed((ErrorClass::H2RstStream, Some(Detail::H2(code)))),
        Cause::Protocol(code) => return Verdict::Failed((ErrorClass::Parse, code.map(Detail::H2))),
        Cause::Timeout => ErrorClass::Timeout,
    };
    Verdict::Failed((class, None))
}

/// The class of a failure no retry can follow (a timeout, a request whose retry is
/// used): `judge` without a retry to give.
pub fn final_class(cause: Cause, nothing_yet: bool) -> Failure {
    match judge(cause, Attempt { may_retry: false, nothing_yet }) {
        Verdict::Failed(failure) => failure,
        Verdict::Retry => unreachable!("judge retries only where the attempt may"),
    }
}

/// A failed request's outcome; its detail, if it has one, kept with what it moved (the
/// statistics count it in `error_details`).
pub fn failed(t: &mut Transfer, (class, detail): Failure) -> Outcome {
    if detail.is_some() {
        t.detail = detail;
    }
    Outcome::Failed(class)
}

/// The class of a response the reader refused. Exhaustive on purpose: a new kind of
/// refusal must be given its class here.
fn malformed(e: ParseError) -> ErrorClass {
    match e {
        ParseError::Head | ParseError::BadContentLength | ParseError::Chunk | ParseError::Upgrade => ErrorClass::Parse,
        ParseError::TooLarge(_) => ErrorClass::TooLarge,
        ParseError::TrailingBytes => ErrorClass::LengthMismatch,
        ParseError::Rejected => ErrorClass::Rejected,
    }
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind;
    use std::time::{Duration, Instant};

    use super::{Attempt, Cause, Deadline, Verdict, counted, judge};
    use crate::protocol::reading::{Bound, EofError, ParseError};
    use crate::stats::{Detail, ErrorClass};

    const FRESH: Attempt = Attempt { may_retry: true, nothing_yet: true };
    const USED: Attempt = Attempt { may_retry: false, nothing_yet: true };
    const STARTED: Attempt = Attempt { may_retry: true, nothing_yet: false };

    fn failed(class: ErrorClass) -> Verdict {
        Verdict::Failed((class, None))
    }

    /// README "What the numbers mean": one class a failure, and the one retry of a
    /// connection the server closed before the response began.
    #[test]
    fn each_cause_in_its_class_or_retried_once() {
        let cases = [
            (Cause::Write(ErrorKind::BrokenPipe), FRESH, Verdict::Retry),
            (Cause::Write(ErrorKind::BrokenPipe), USED, failed(ErrorClass::Reset)),
            (Cause::Write(ErrorKind::Other), FRESH, failed(ErrorClass::Write)),
            (Cause::Read(ErrorKind::ConnectionReset), FRESH, Verdict::Retry),
            (Cause::Read(ErrorKind::ConnectionReset), STARTED, failed(ErrorClass::Reset)),
            (Cause::Read(ErrorKind::ConnectionAborted), USED, failed(ErrorClass::Reset)),
            (Cause::Read(ErrorKind::Other), FRESH, failed(ErrorClass::Read)),
            (Cause::Eof(EofError::BeforeResponse), FRESH, Verdict::Retry),
            (Cause::Eof(EofError::BeforeResponse), USED, failed(ErrorClass::Read)),
            (Cause::Eof(EofError::InHead), FRESH, failed(ErrorClass::Read)),
            (Cause::Eof(EofError::InBody), FRESH, failed(ErrorClass::LengthMismatch)),
            (Cause::H2Io(ErrorKind::ConnectionReset), FRESH, Verdict::Retry),
            (Cause::H2Io(ErrorKind::UnexpectedEof), FRESH, Verdict::Retry),
            (Cause::H2Io(ErrorKind::ConnectionReset), USED, failed(ErrorClass::Read)),
            (Cause::H2Io(ErrorKind::ConnectionReset), STARTED, failed(ErrorClass::Reset)),
            (Cause::H2Io(ErrorKind::UnexpectedEof), STARTED, failed(ErrorClass::Read)),
            (Cause::H2Io(ErrorKind::Other), FRESH, failed(ErrorClass::Read)),
            (Cause::Gone, FRESH, Verdict::Retry),
            (Cause::Gone, USED, failed(ErrorClass::Read)),
            (Cause::Gone, STARTED, failed(ErrorClass::Read)),
            (Cause::Malformed(ParseError::Head), FRESH, failed(ErrorClass::Parse)),
            (Cause::Malformed(ParseError::Upgrade), FRESH, failed(ErrorClass::Parse)),
            (Cause::Malformed(ParseError::TooLarge(Bound::Headers)), FRESH, failed(ErrorClass::TooLarge)),
            (Cause::Malformed(ParseError::TrailingBytes), FRESH, failed(ErrorClass::LengthMismatch)),
            (Cause::Malformed(ParseError::Rejected), FRESH, failed(ErrorClass::Rejected)),
            (Cause::BadRecord, FRESH, failed(ErrorClass::Read)),
            (Cause::GoAway(0), FRESH, Verdict::Retry),
            (Cause::GoAway(0), USED, failed(ErrorClass::Read)),
            (Cause::GoAway(0), STARTED, Verdict::Failed((ErrorClass::H2Goaway, Some(Detail::H2(0))))),
            (Cause::GoAway(11), FRESH, Verdict::Failed((ErrorClass::H2Goaway, Some(Detail::H2(11))))),
            (Cause::StreamReset(7), FRESH, Verdict::Failed((ErrorClass::H2RstStream, Some(Detail::H2(7))))),
            (Cause::Protocol(Some(1)), FRESH, Verdict::Failed((ErrorClass::Parse, Some(Detail::H2(1))))),
            (Cause::Protocol(None), FRESH, failed(ErrorClass::Parse)),
            (Cause::Timeout, FRESH, failed(ErrorClass::Timeout)),
            (Cause::Refused((ErrorClass::Connect, None)), FRESH, failed(ErrorClass::Connect)),
        ];
        for (cause, attempt, verdict) in cases {
            assert_eq!(judge(cause, attempt), verdict, "{cause:?} {attempt:?}");
            // Without a retry to give, every cause has a class.
            let _ = super::final_class(cause, attempt.nothing_yet);
        }
    }

    #[test]
    fn a_goaway_with_an_error_code_is_the_cause_of_the_end_behind_it() {
        let reset = Cause::H2Io(ErrorKind::ConnectionReset);
        assert_eq!(reset.after_goaway(Some(11)), Cause::GoAway(11));
        assert_eq!(Cause::Gone.after_goaway(Some(11)), Cause::GoAway(11));
        assert_eq!(Cause::Protocol(Some(1)).after_goaway(Some(11)), Cause::GoAway(11));
        // A graceful one, or none: the end is what it looked like.
        assert_eq!(reset.after_goaway(Some(0)), reset);
        assert_eq!(reset.after_goaway(None), reset);
        // A stream's own reset is its own.
        assert_eq!(Cause::StreamReset(7).after_goaway(Some(11)), Cause::StreamReset(7));
    }

    #[test]
    fn a_deadline_is_the_timeout_or_the_runs_end_if_sooner() {
        let start = Instant::now();
        let timeout = Duration::from_secs(10);
        assert_eq!(Deadline::of(start, timeout, None), Deadline { at: start + timeout, run_end: false });
        let end = start + Duration::from_secs(1);
        assert_eq!(Deadline::of(start, timeout, Some(end)), Deadline { at: end, run_end: true });
        let late = start + Duration::from_secs(20);
        assert_eq!(Deadline::of(start, timeout, Some(late)), Deadline { at: start + timeout, run_end: false });
        assert!(counted(end, Some(end)) && counted(late, None));
        assert!(!counted(late, Some(end)));
    }

    #[test]
    fn a_connection_closes_when_the_response_the_options_or_the_budget_say() {
        let cfg = |words: &[&str]| {
            let mut all = vec!["-c", "1"];
            all.extend_from_slice(words);
            all.push("http://127.0.0.1:1/");
            crate::config::from_words(&all).unwrap()
        };
        let kept = cfg(&[]);
        assert!(super::keep_open(&kept, false, 1_000_000));
        assert!(!super::keep_open(&kept, true, 1));
        assert!(!super::keep_open(&cfg(&["--no-keepalive"]), false, 1));
        let budget = cfg(&["--keepalive-requests", "3"]);
        assert!(super::keep_open(&budget, false, 2));
        assert!(!super::keep_open(&budget, false, 3));
    }
}

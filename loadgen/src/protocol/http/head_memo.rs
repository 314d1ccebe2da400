//! The last response head a thread parsed, and what it decided.
//!
//! A server answering one URL sends the same head, byte for byte, again and again:
//! only its Date changes, once a second. Parsing a head is a function of its bytes
//! (and of whether the request was HEAD), so a head equal to the remembered one
//! decides the same status, framing and keep-alive without being parsed again.
//! One comparison of ~250 bytes replaces httparse and the header loop, ~2,500 of
//! the ~6,000 instructions the engine spends a request on a 12-byte file
//! (callgrind, bench/RESULTS.md "Heads parsed once").
//!
//! One memo per engine thread, shared by its connections (a memo per connection
//! would cost 10,000 connections 2.5 MB: bench/engine-memory's bar). A head that
//! differs is parsed in full and becomes the memo; heads watched by
//! `--count-header` are never remembered nor recalled (their values are captured
//! while parsing).

use std::cell::{Cell, RefCell};

use super::response::Head;

/// Heads longer than this are not remembered: the copy bounded, and a long head
/// is rarely repeated as it stands.
pub const MEMO_MAX_BYTES: usize = 1024;

#[derive(Debug, Default)]
pub struct HeadMemo {
    bytes: RefCell<Vec<u8>>,
    /// What `bytes` decided, and for which kind of request (HEAD or not); None
    /// until a head was remembered.
    decided: Cell<Option<(Head, bool)>>,
    /// Heads recalled, not parsed (the tests check the fast path is taken).
    #[cfg(test)]
    recalls: Cell<u32>,
}

impl HeadMemo {
    /// What the head at the start of `data` decides, if it is the remembered one,
    /// and its length.
    #[inline]
    pub fn recall(&self, data: &[u8], head_request: bool) -> Option<(Head, usize)> {
        let (head, for_head) = self.decided.get()?;
        let bytes = self.bytes.borrow();
        let hit = for_head == head_request && data.starts_with(&bytes);
        #[cfg(test)]
        self.recalls.set(self.recalls.get() + u32::from(hit));
        hit.then_some((head, bytes.len()))
    }

    /// How many heads were recalled (tests only: the fast path must be taken).
    #[cfg(test)]
    pub fn recalls(&self) -> u32 {
        self.recalls.get()
    }

    /// Remembers a complete final head (`bytes`, exactly its length) and what it decided.
    pub fn remember(&self, bytes: &[u8], head: Head, head_request: bool) {
        if bytes.len() > MEMO_MAX_BYTES || head.interim {
            return;
        }
        let mut held = self.bytes.borrow_mut();
        held.clear();
        held.extend_from_slice(bytes);
        self.decided.set(Some((head, head_request)));
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::*;
    use crate::protocol::http::response::ResponseReader;
    use crate::protocol::reading::{Completed, Progress};

    const NGINX_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Thu, 26 Nov 2026 08:35:44 GMT\r\n\
Content-Type: text/html\r\nContent-Length: 12\r\nConnection: keep-alive\r\n\r\n";

    /// Two connections of one thread: readers sharing a memo.
    fn pair(memo: &Rc<HeadMemo>) -> (ResponseReader, ResponseReader) {
        let reader = || ResponseReader::with_captures(Rc::from(Vec::new()), memo.clone());
        (reader(), reader())
    }

    fn read(r: &mut ResponseReader, bytes: &[u8], head_request: bool) -> (Progress, u64) {
        r.start(head_request);
        let p = r.feed(bytes).expect("a valid response");
        (p, r.body_bytes())
    }

    fn done(status: u16, close: bool, body: u64) -> (Progress, u64) {
        (Progress::Done(Completed { status, close }), body)
    }

    #[test]
    fn the_same_head_on_any_connection_is_recalled_not_parsed() {
        let memo = Rc::new(HeadMemo::default());
        let (mut a, mut b) = pair(&memo);
        let response = [NGINX_HEAD, b"hello world\n"].concat();
        assert_eq!(read(&mut a, &response, false), done(200, false, 12));
        assert_eq!(memo.recalls(), 0, "the first head is parsed");
        assert_eq!(read(&mut b, &response, false), done(200, false, 12));
        assert_eq!(read(&mut a, &response, false), done(200, false, 12));
        assert_eq!(memo.recalls(), 2);
    }

    #[test]
    fn a_head_that_differs_anywhere_is_parsed_and_decides_for_itself() {
        let memo = Rc::new(HeadMemo::default());
        let (mut a, _) = pair(&memo);
        read(&mut a, &[NGINX_HEAD, b"hello world\n"].concat(), false);
        // A Date a second later, then another length, then the connection closing:
        // each parsed (no recall), each read by its own head.
        let nginx = String::from_utf8(NGINX_HEAD.to_vec()).unwrap();
        let later = nginx.replace("08:35:44", "08:35:45");
        assert_eq!(read(&mut a, &[later.as_bytes(), b"hello world\n"].concat(), false), done(200, false, 12));
        let longer = nginx.replace("Length: 12", "Length: 13");
        assert_eq!(read(&mut a, &[longer.as_bytes(), b"hello world\n!"].concat(), false), done(200, false, 13));
        let closing = nginx.replace("keep-alive", "close");
        assert_eq!(read(&mut a, &[closing.as_bytes(), b"hello world\n"].concat(), false), done(200, true, 12));
        assert_eq!(memo.recalls(), 0);
        // The last one is the memo now.
        assert_eq!(read(&mut a, &[closing.as_bytes(), b"hello world\n"].concat(), false), done(200, true, 12));
        assert_eq!(memo.recalls(), 1);
    }

    #[test]
    fn a_head_request_is_never_answered_from_a_get_s_memo() {
        let memo = Rc::new(HeadMemo::default());
        let (mut a, mut b) = pair(&memo);
        read(&mut a, &[NGINX_HEAD, b"hello world\n"].concat(), false);
        // The same head answering HEAD has no body: read as if a body followed, the
        // response would never end.
        assert_eq!(read(&mut b, NGINX_HEAD, true), done(200, false, 0));
        assert_eq!(memo.recalls(), 0);
    }

    #[test]
    fn interim_heads_are_not_remembered() {
        let memo = Rc::new(HeadMemo::default());
        let (mut a, _) = pair(&memo);
        let response = [b"HTTP/1.1 100 Continue\r\n\r\n".as_slice(), NGINX_HEAD, b"hello world\n"].concat();
        assert_eq!(read(&mut a, &response, false), done(200, false, 12));
        // The memo holds the final head, not the 100's.
        assert_eq!(read(&mut a, &response, false), done(200, false, 12));
        assert_eq!(memo.recalls(), 1);
    }

    #[test]
    fn watched_headers_are_captured_from_every_head() {
        let memo = Rc::new(HeadMemo::default());
        let mut r = ResponseReader::with_captures(Rc::from(vec!["Server".to_string()]), memo.clone());
        for _ in 0..3 {
            read(&mut r, &[NGINX_HEAD, b"hello world\n"].concat(), false);
            assert_eq!(r.captures().values(0).collect::<Vec<_>>(), [b"nginx/1.22.1"]);
        }
        assert_eq!(memo.recalls(), 0);
    }

    #[test]
    fn a_head_split_across_reads_is_recalled_once_whole() {
        let memo = Rc::new(HeadMemo::default());
        let (mut a, _) = pair(&memo);
        let response = [NGINX_HEAD, b"hello world\n"].concat();
        read(&mut a, &response, false);
        a.start(false);
        assert_eq!(a.feed(&response[..40]), Ok(Progress::More));
        assert_eq!(a.feed(&response[40..]), Ok(Progress::Done(Completed { status: 200, close: false })));
        assert_eq!((a.body_bytes(), memo.recalls()), (12, 1));
    }

    #[test]
    fn long_heads_are_not_kept() {
        let memo = Rc::new(HeadMemo::default());
        let (mut a, _) = pair(&memo);
        let long = format!("HTTP/1.1 204 No Content\r\nX-Pad: {}\r\n\r\n", "p".repeat(MEMO_MAX_BYTES));
        read(&mut a, long.as_bytes(), false);
        read(&mut a, long.as_bytes(), false);
        assert_eq!(memo.recalls(), 0);
    }
}

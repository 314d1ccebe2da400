//! Randomised tests of the response reader (fixed seed, so failures reproduce):
//! random bytes and mutated responses, split at random points, must never panic;
//! valid responses must read the same however they are split.

use std::rc::Rc;

use super::head_memo::HeadMemo;
use super::response::ResponseReader;
use crate::protocol::reading::Progress;

/// xorshift64*: tiny, deterministic, good enough to pick bytes and split points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[derive(Debug, PartialEq)]
enum End {
    Done { status: u16, close: bool, body: u64 },
    Error,
    Incomplete,
}

/// Feeds `input` in random pieces, then EOF, the way a connection would.
fn run(input: &[u8], head: bool, rng: &mut Rng) -> End {
    run_on(ResponseReader::new(), input, head, rng)
}

fn run_on(mut r: ResponseReader, input: &[u8], head: bool, rng: &mut Rng) -> End {
    r.start(head);
    let mut at = 0;
    while at < input.len() {
        let n = 1 + rng.below((input.len() - at).min(64));
        match r.feed(&input[at..at + n]) {
            Ok(Progress::Done(c)) => return End::Done { status: c.status, close: c.close, body: r.body_bytes() },
            Ok(Progress::More) => {}
            Err(_) => return End::Error,
        }
        at += n;
    }
    match r.eof() {
        Ok(c) => End::Done { status: c.status, close: c.close, body: r.body_bytes() },
        Err(_) => End::Incomplete,
    }
}

fn valid_responses() -> Vec<(Vec<u8>, bool, u64)> {
    let mut chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n".to_vec();
    for size in [1usize, 15, 16, 300] {
        chunked.extend(format!("{size:X};name=value\r\n").as_bytes());
        chunked.extend(std::iter::repeat_n(b'c', size));
        chunked.extend(b"\r\n");
    }
    chunked.extend(b"0\r\nTrailer-A: 1\r\nTrailer-B: 2\r\n\r\n");
    vec![
        (b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nServer: t\r\n\r\nhello world\n".to_vec(), false, 12),
        (chunked, false, 332),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end".to_vec(), false, 13),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n".to_vec(), false, 0),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc".to_vec(), false, 3),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 3000\r\n\r\n".to_vec(), true, 0),
    ]
}

#[test]
fn splits_do_not_change_the_result() {
    let mut rng = Rng(0x5eed_0001);
    for (input, head, body) in valid_responses() {
        let whole = {
            let mut r = ResponseReader::new();
            r.start(head);
            match r.feed(&input) {
                Ok(Progress::Done(c)) => End::Done { status: c.status, close: c.close, body: r.body_bytes() },
                _ => match r.eof() {
                    Ok(c) => End::Done { status: c.status, close: c.close, body: r.body_bytes() },
                    Err(_) => End::Incomplete,
                },
            }
        };
        assert!(matches!(whole, End::Done { body: b, .. } if b == body), "{whole:?}");
        for _ in 0..2000 {
            assert_eq!(run(&input, head, &mut rng), whole, "{}", String::from_utf8_lossy(&input));
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(0x5eed_0002);
    let alphabet = b"HTTP/1.0 2345\r\n:;,abcxyzABCXYZ-chunkedContent-LengthTransfer-Encoding\t 0123456789";
    for case in 0..20_000 {
        let len = rng.below(300);
        let input: Vec<u8> = (0..len)
            .map(|_| if case % 2 == 0 { rng.next() as u8 } else { alphabet[rng.below(alphabet.len())] })
            .collect();
        let _ = run(&input, case % 7 == 0, &mut rng);
    }
}

#[test]
fn mutated_responses_never_panic() {
    let mut rng = Rng(0x5eed_0003);
    let seeds = valid_responses();
    for _ in 0..30_000 {
        let (mut input, head, _) = seeds[rng.below(seeds.len())].clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(input.len());
            match rng.below(4) {
                0 => input[at] = rng.next() as u8,
                1 => input.insert(at, b"\r\n0:;Fx"[rng.below(7)]),
                2 => {
                    input.remove(at);
                }
                _ => input.truncate(at),
            }
            if input.is_empty() {
                break;
            }
        }
        let _ = run(&input, head, &mut rng);
    }
}

/// The thread's head memo (head_memo.rs) remembers the last head parsed; a head
/// that begins as the remembered one but differs — by a byte, cut short, with more
/// after it — must read as a reader without a memo reads it.
#[test]
fn a_remembered_head_never_changes_a_reading() {
    let mut rng = Rng(0x5eed_0004);
    let seeds = valid_responses();
    let memo = Rc::new(HeadMemo::default());
    let shared = || ResponseReader::with_captures(Rc::from(Vec::new()), memo.clone());
    for case in 0..30_000 {
        let (seed, seed_head, _) = &seeds[rng.below(seeds.len())];
        // Remember the seed's head (a reading of it whole), then read a variant.
        let _ = run_on(shared(), seed, *seed_head, &mut Rng(case + 1));
        let mut input = seed.clone();
        for _ in 0..rng.below(3) {
            let at = rng.below(input.len());
            match rng.below(3) {
                0 => input[at] = b"\r\n:0129aZ ,"[rng.below(11)],
                1 => input.insert(at, b"\r\n0:;Fx"[rng.below(7)]),
                _ => input.truncate(at.max(1)),
            }
        }
        let head = if case % 5 == 0 { !seed_head } else { *seed_head };
        let split = Rng((case + 1) ^ 0x9e37);
        let fresh = run_on(ResponseReader::new(), &input, head, &mut Rng(split.0));
        assert_eq!(run_on(shared(), &input, head, &mut Rng(split.0)), fresh, "{}", String::from_utf8_lossy(&input));
    }
    assert!(memo.recalls() > 10_000, "the memo was used {} times", memo.recalls());
}

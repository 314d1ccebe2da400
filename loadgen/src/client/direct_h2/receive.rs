//! What a connection of the direct loop's HTTP/2 client says once its records are
//! decrypted: HTTP/2 frames, their events for the streams in flight (a status, a
//! header field, data, an end, a reset, a GOAWAY), or, where the server chose
//! HTTP/1.1, the response of the slot whose turn it is.

use std::time::Instant;

use super::{H2Loop, State};
use crate::client::rules::{self, Cause};
use crate::protocol::Reader;
use crate::protocol::capture::Captures;
use crate::protocol::h2::client::Event;
use crate::protocol::h2::frame;
use crate::protocol::reading::Progress;

/// An event of `Connection::receive`, kept until the connection is no longer borrowed.
pub(super) enum Ev {
    Status(u32, u16),
    /// A field's name and value: ranges of `H2Loop::fields`.
    Field(u32, (usize, usize), (usize, usize)),
    Data(u32, usize),
    End(u32),
    Reset(u32, u32),
    GoAway(u32, u32),
}

/// An HTTP/1.1 response's --count-header values, to the slot's captures (h2.rs does
/// the same for its fallback).
pub(super) fn offer(captures: &mut Captures, reader: &Reader, watch: &[String]) {
    if captures.active() {
        let seen = reader.captures();
        for (i, name) in watch.iter().enumerate().take(seen.watched()) {
            for value in seen.values(i) {
                captures.offer(name, value);
            }
        }
    }
}

impl H2Loop<'_> {
    /// The plaintext just read on `ci` (its bytes landed at `now`), to its protocol;
    /// false if the connection is gone.
    pub(super) fn take_plain(&mut self, ci: usize, now: Instant) -> bool {
        let H2Loop { conns, plain, events, fields, slots, ctx, .. } = self;
        let c = &mut conns[ci];
        match &mut c.state {
            State::H2(h2) => {
                events.clear();
                fields.clear();
                let watching = !ctx.watch.is_empty();
                let received = h2.receive(plain, |e| {
                    events.push(match e {
                        Event::Status { stream, status } => Ev::Status(stream, status),
                        Event::Field { stream, name, value } => {
                            if !watching {
                                return;
                            }
                            let n = (fields.len(), fields.len() + name.len());
                            fields.extend_from_slice(name);
                            let v = (fields.len(), fields.len() + value.len());
                            fields.extend_from_slice(value);
                            Ev::Field(stream, n, v)
                        }
                        Event::Data { stream, len } => Ev::Data(stream, len),
                        Event::End { stream } => Ev::End(stream),
                        Event::Reset { stream, code } => Ev::Reset(stream, code),
                        Event::GoAway { last, code } => Ev::GoAway(last, code),
                    })
                });
                if !h2.out.is_empty() {
                    self.mark(ci);
                }
                let events = std::mem::take(&mut self.events);
                for e in &events {
                    self.event(ci, e, now);
                }
                self.events = events;
                match received {
                    Ok(()) => {
                        self.pump(ci);
                        matches!(self.conns[ci].state, State::H2(_))
                    }
                    Err(e) => {
                        self.lost(ci, Cause::Protocol(Some(e.code)));
                        false
                    }
                }
            }
            State::Http1 { reader, current, uses } => {
                let Some(k) = *current else {
                    // Bytes nobody asked for: the connection is not usable.
                    self.lost(ci, Cause::Protocol(Some(frame::PROTOCOL_ERROR)));
                    return false;
                };
                let s = &mut slots[k];
                s.lane.first_byte.get_or_insert(now);
                match reader.feed(plain) {
                    Ok(Progress::More) => true,
                    Ok(Progress::Done(done)) => {
                        s.lane.t.body += reader.body_bytes();
                        s.status = done.status;
                        offer(&mut s.captures, reader, &ctx.watch);
                        *uses += 1;
                        *current = None;
                        let close = !rules::keep_open(&self.ctx.cfg, done.close, *uses);
                        self.complete(k, now);
                        if close {
                            self.close(ci);
                            if !self.conns[ci].waiting.is_empty() && !self.to_open.contains(&ci) {
                                self.to_open.push(ci);
                            }
                            return false;
                        }
                        self.pump(ci);
                        true
                    }
                    Err(e) => {
                        *current = None;
                        self.conns[ci].in_flight.clear();
                        self.judge(k, Cause::Malformed(e), false);
                        self.lost(ci, Cause::Gone);
                        false
                    }
                }
            }
            _ => true,
        }
    }

    fn event(&mut self, ci: usize, e: &Ev, now: Instant) {
        let slot_of = |lp: &Self, id: u32| lp.conns[ci].in_flight.iter().find(|&&(i, _)| i == id).map(|&(_, k)| k);
        match *e {
            Ev::Status(id, status) => {
                if let Some(k) = slot_of(self, id) {
                    let s = &mut self.slots[k];
                    s.status = status;
                    s.lane.first_byte = Some(now);
                }
            }
            Ev::Field(id, (n0, n1), (v0, v1)) => {
                if let Some(k) = slot_of(self, id) {
                    let name = String::from_utf8_lossy(&self.fields[n0..n1]);
                    self.slots[k].captures.offer(&name, &self.fields[v0..v1]);
                }
            }
            Ev::Data(id, len) => {
                if let Some(k) = slot_of(self, id) {
                    self.slots[k].lane.t.body += len as u64;
                }
            }
            Ev::End(id) => {
                if let Some(k) = slot_of(self, id) {
                    self.complete(k, now);
                }
            }
            Ev::Reset(id, code) => {
                if let Some(k) = slot_of(self, id) {
                    self.judge(k, Cause::StreamReset(code), true);
                }
            }
            Ev::GoAway(last, code) => {
                self.conns[ci].goaway = Some(code);
                let cut: Vec<usize> = self.conns[ci].in_flight.iter().filter(|&&(id, _)| id > last).map(|&(_, k)| k).collect();
                for k in cut {
                    self.judge(k, Cause::GoAway(code), true);
                }
            }
        }
    }
}

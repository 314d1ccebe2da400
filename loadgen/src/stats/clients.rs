//! Who got served, seen from the client side: how many client connections took
//! part in the measured phase, how many of them never got a complete response in
//! it, and the requests still in flight when it ended (with their ages).
//!
//! Why: a server that serves only some clients can look excellent. Apache prefork
//! with 14 children and 64 keep-alive connections serves 14 connections while 50
//! wait in the accept queue for the whole run; their requests never complete, so
//! they appear in no latency figure. Counting them is the only way to see it.

use super::histogram::LatencyHist;

#[derive(Clone, Debug, Default)]
pub struct ClientStats {
    /// Client connections (the -c slots; page mode: each visitor's connections)
    /// that had a request ending in, or still in flight at the end of, the
    /// measured phase.
    pub measured: u64,
    /// Of those, the ones that got no complete response during the measured phase.
    pub without_response: u64,
    /// Ages at the end of the run of the requests still in flight then, from their
    /// (intended) send time; `count()` is how many there were.
    pub in_flight: LatencyHist,
}

impl ClientStats {
    /// One client connection's record, when it stops.
    pub fn connection(&mut self, took_part: bool, responses: u64) {
        if took_part {
            self.measured += 1;
            if responses == 0 {
                self.without_response += 1;
            }
        }
    }

    pub fn in_flight(&mut self, age_us: u64) {
        self.in_flight.record(age_us);
    }

    pub fn merge(&mut self, other: &ClientStats) {
        self.measured += other.measured;
        self.without_response += other.without_response;
        self.in_flight.merge(&other.in_flight);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_connections_and_in_flight() {
        let mut a = ClientStats::default();
        a.connection(true, 10);
        a.connection(true, 0);
        a.connection(false, 0);
        a.in_flight(5_000_000);
        let mut b = ClientStats::default();
        b.connection(true, 0);
        b.in_flight(7);
        a.merge(&b);
        assert_eq!((a.measured, a.without_response), (3, 2));
        assert_eq!(a.in_flight.count(), 2);
        assert_eq!(a.in_flight.summary().max, Some(5_000_000));
    }
}

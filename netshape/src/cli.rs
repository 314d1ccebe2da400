//! Arguments → checked options. Hand-written: six flags do not need a parser crate, and
//! every error is one line naming the flag.

use std::path::PathBuf;

use crate::shape::{Shape, parse_duration_ns};
use crate::tun::check_name;

pub const USAGE: &str = "\
usage: stackbench-netshape --a NETNS_FILE:TUN --b NETNS_FILE:TUN
                           [--a-to-b SHAPE] [--b-to-a SHAPE]
                           [--seed N] [--stats-every DURATION] [--spin DURATION]

Forwards every IP packet between two TUN devices, each in its own network namespace
(e.g. --a /run/netns/client:sbt-a), delaying, losing and rate-limiting each direction.
A TUN device that exists is attached to; one that does not is created and vanishes on exit.

SHAPE: comma-separated, every key optional (empty: a plain wire):
  delay=20ms  jitter=2ms  (uniform in delay ± jitter; jitter <= delay)
  loss=0.1%   rate=5mbit  queue=100ms|64kB (drop-tail; default 100ms at the rate, >= 10 packets)
  order=keep|free  (keep: a packet never overtakes the one ahead of it; default keep)
--stats-every: a JSON line of counters on stderr this often (also on SIGUSR1);
  a final summary line on SIGTERM/SIGINT.
--spin: spin on the clock this long before a packet is due instead of sleeping (default 0).";

#[derive(Debug)]
pub struct Endpoint {
    pub netns: PathBuf,
    pub tun: String,
}

#[derive(Debug)]
pub struct Options {
    pub a: Endpoint,
    pub b: Endpoint,
    pub a_to_b: Shape,
    pub b_to_a: Shape,
    pub seed: Option<u64>,
    pub stats_every_ns: Option<u64>,
    pub spin_ns: u64,
}

#[allow(clippy::large_enum_variant)] // made once per process
pub enum Parsed {
    Run(Options),
    Help,
    Version,
}

pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Parsed, String> {
    let (mut a, mut b, mut a_to_b, mut b_to_a) = (None, None, Shape::default(), Shape::default());
    let (mut seed, mut stats_every_ns, mut spin_ns) = (None, None, 0);
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Parsed::Help),
            "-V" | "--version" => return Ok(Parsed::Version),
            _ => {}
        }
        let mut value = || inline.clone().or_else(|| args.next()).ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--a" => a = Some(endpoint(&value()?).map_err(|e| format!("--a: {e}"))?),
            "--b" => b = Some(endpoint(&value()?).map_err(|e| format!("--b: {e}"))?),
            "--a-to-b" => a_to_b = Shape::parse(&value()?).map_err(|e| format!("--a-to-b: {e}"))?,
            "--b-to-a" => b_to_a = Shape::parse(&value()?).map_err(|e| format!("--b-to-a: {e}"))?,
            "--seed" => {
                let v = value()?;
                seed = Some(v.parse().map_err(|_| format!("--seed takes a whole number, not {v:?}"))?);
            }
            "--stats-every" => {
                let ns = parse_duration_ns(&value()?).map_err(|e| format!("--stats-every: {e}"))?;
                if ns < 10_000_000 {
                    return Err("--stats-every must be at least 10ms".into());
                }
                stats_every_ns = Some(ns);
            }
            "--spin" => {
                spin_ns = parse_duration_ns(&value()?).map_err(|e| format!("--spin: {e}"))?;
                if spin_ns > 5_000_000 {
                    return Err("--spin must be at most 5ms (it burns a core while it waits)".into());
                }
            }
            _ => return Err(format!("unknown argument {arg:?} (see --help)")),
        }
    }
    let a = a.ok_or("--a NETNS_FILE:TUN is required")?;
    let b = b.ok_or("--b NETNS_FILE:TUN is required")?;
    if a.netns == b.netns && a.tun == b.tun {
        return Err("--a and --b name the same device".into());
    }
    Ok(Parsed::Run(Options { a, b, a_to_b, b_to_a, seed, stats_every_ns, spin_ns }))
}

/// "/run/netns/NAME:DEVICE" (split at the last ':', so the path may hold one).
fn endpoint(text: &str) -> Result<Endpoint, String> {
    let (path, tun) = text.rsplit_once(':').ok_or_else(|| format!("{text:?} is not NETNS_FILE:TUN"))?;
    if path.is_empty() {
        return Err(format!("{text:?} has no namespace file before ':'"));
    }
    check_name(tun)?;
    Ok(Endpoint { netns: PathBuf::from(path), tun: tun.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn full_command_line() {
        let Parsed::Run(o) = parse(args(&[
            "--a", "/run/netns/x:sbt-a", "--b=/run/netns/y:sbt-b", "--a-to-b", "delay=20ms,rate=5mbit",
            "--seed", "7", "--stats-every", "1s", "--spin", "50us",
        ]))
        .unwrap() else { panic!() };
        assert_eq!(o.a.netns, PathBuf::from("/run/netns/x"));
        assert_eq!(o.b.tun, "sbt-b");
        assert_eq!(o.a_to_b.delay_ns, 20_000_000);
        assert_eq!(o.b_to_a, Shape::default());
        assert_eq!((o.seed, o.stats_every_ns, o.spin_ns), (Some(7), Some(1_000_000_000), 50_000));
    }

    #[test]
    fn errors_name_the_flag() {
        for (argv, needle) in [
            (vec!["--b", "/n:b"], "--a NETNS_FILE:TUN is required"),
            (vec!["--a", "/n"], "--a: \"/n\" is not NETNS_FILE:TUN"),
            (vec!["--a", ":t"], "no namespace file"),
            (vec!["--a", "/n:waytoolongdevicename"], "1 to 15"),
            (vec!["--a", "/n:a", "--b", "/n:b", "--a-to-b", "delay=x"], "--a-to-b: delay:"),
            (vec!["--a", "/n:a", "--b", "/n:b", "--seed", "-1"], "--seed takes"),
            (vec!["--a", "/n:a", "--b", "/n:b", "--stats-every", "1ms"], "at least 10ms"),
            (vec!["--a", "/n:a", "--b", "/n:a"], "same device"),
            (vec!["--a"], "--a needs a value"),
            (vec!["--frobnicate"], "unknown argument"),
        ] {
            let err = parse(args(&argv)).err().unwrap();
            assert!(err.contains(needle), "{argv:?}: {err}");
        }
    }
}

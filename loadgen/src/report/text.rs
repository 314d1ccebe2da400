//! Human summary, laid out like ab's and wrk's so their users find their numbers.
//! Reads only the finished document: nothing here measures.

use std::fmt::Write as _;

use super::{Document, PhaseDoc};
use crate::stats::histogram::{Latency, Summary};

fn ms(us: Option<u64>) -> String {
    us.map_or("-".into(), |v| format!("{:.3}", v as f64 / 1000.0))
}

fn ms_f(us: Option<f64>) -> String {
    us.map_or("-".into(), |v| format!("{:.3}", v / 1000.0))
}

fn row(out: &mut String, name: &str, s: &Summary) {
    let _ = writeln!(
        out,
        "  {name:<11}{:>10} {:>10} {:>10} {:>10} {:>10}",
        ms(s.min),
        ms_f(s.mean),
        ms_f(s.stdev),
        ms(s.median),
        ms(s.max)
    );
}

fn percentiles(out: &mut String, title: &str, l: &Latency) {
    let _ = writeln!(out, "\n{title} (ms), {} responses", l.count);
    for (p, v) in &l.percentiles.0 {
        let note = if *p == "100" { "  (longest request)" } else { "" };
        let _ = writeln!(out, "  {:>6}%  {:>10}{note}", p, ms(*v));
    }
}

fn phase(out: &mut String, r: &PhaseDoc) {
    let c = &r.requests;
    let secs = r.duration_us as f64 / 1e6;
    let _ = writeln!(out, "Measured time:      {secs:.3} s");
    let _ = writeln!(out, "Complete requests:  {} ({} 2xx, {} non-2xx)", c.completed, c.ok_2xx, c.non_2xx);
    let _ = writeln!(out, "Failed requests:    {}", c.failed);
    if c.failed > 0 {
        let classes: Vec<String> =
            r.errors.iter().filter(|&(_, &n)| n > 0).map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(out, "   ({})", classes.join(", "));
    }
    let codes: Vec<String> = r.status_codes.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let _ = writeln!(out, "Status codes:       {}", if codes.is_empty() { "-".into() } else { codes.join(", ") });
    let _ = writeln!(out, "Connections opened: {}", r.connections_opened);
    let _ = writeln!(
        out,
        "Requests per second: {}",
        r.requests_per_s.map_or("-".into(), |v| format!("{v:.2} [#/sec]"))
    );
    let _ = writeln!(
        out,
        "Transfer rate:      {} received, {} sent, {} body bytes",
        r.bytes_per_s.map_or("-".into(), |v| format!("{:.2} KB/s", v / 1024.0)),
        r.bytes.sent,
        r.bytes.body_received
    );
    let _ = writeln!(out, "\nConnection times (ms)");
    let _ = writeln!(out, "  {:<11}{:>10} {:>10} {:>10} {:>10} {:>10}", "", "min", "mean", "[+/-sd]", "median", "max");
    row(out, "Connect:", &r.phases_us.connect);
    row(out, "Waiting:", &r.phases_us.waiting);
    row(out, "Processing:", &r.phases_us.processing);
    row(out, "Total:", &r.phases_us.total);
    match &r.latency_uncorrected_us {
        Some(unc) => {
            percentiles(out, "Latency from intended send time (corrected for coordinated omission)", &r.latency_us);
            percentiles(out, "Latency from actual send time (uncorrected)", unc);
        }
        None => percentiles(out, "Latency percentiles", &r.latency_us),
    }
}

pub fn render(doc: &Document) -> String {
    let mut out = String::new();
    let c = &doc.config;
    let loop_kind = c.rate.map_or("closed loop".to_string(), |r| format!("open loop at {r} req/s"));
    let _ = writeln!(out, "{} {} — {} {}", doc.engine.name, doc.engine.version, c.method, c.url);
    let _ = writeln!(
        out,
        "{} connections, {} thread(s), {}, keep-alive {}, warm-up {:.3} s\n",
        c.connections,
        c.threads,
        loop_kind,
        if c.keepalive { "on" } else { "off" },
        c.warmup_us as f64 / 1e6
    );
    phase(&mut out, &doc.result);

    for s in &doc.stages {
        let r = &s.result;
        let _ = writeln!(
            out,
            "\nStage {}: {} connections, {:.3} s: {} complete, {} failed, {} req/s, p50 {} ms, p99 {} ms",
            s.index,
            s.connections,
            r.duration_us as f64 / 1e6,
            r.requests.completed,
            r.requests.failed,
            r.requests_per_s.map_or("-".into(), |v| format!("{v:.1}")),
            ms(r.latency_us.percentiles.0[0].1),
            ms(r.latency_us.percentiles.0[7].1),
        );
    }

    let cpu = &doc.engine_cpu;
    let _ = writeln!(
        out,
        "\nEngine CPU: user {:.3} s, system {:.3} s, busiest thread {}",
        cpu.user_us as f64 / 1e6,
        cpu.system_us as f64 / 1e6,
        cpu.max_thread_busy.map_or("-".into(), |b| format!("{:.0}%", b * 100.0))
    );
    for w in &doc.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}

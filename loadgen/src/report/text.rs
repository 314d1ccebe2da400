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

fn percentiles(out: &mut String, title: &str, l: &Latency, what: &str) {
    let _ = writeln!(out, "\n{title} (ms), {} {what}", l.count);
    for (p, v) in &l.percentiles.0 {
        let note = if *p == "100" { "  (longest)" } else { "" };
        let _ = writeln!(out, "  {:>6}%  {:>10}{note}", p, ms(*v));
    }
}

fn phase(out: &mut String, r: &PhaseDoc) {
    let c = &r.requests;
    let secs = r.duration_us as f64 / 1e6;
    let _ = writeln!(out, "Measured time:      {secs:.3} s");
    // Open loop: what became of the requests the rate asked for.
    if let (Some(Some(due)), Some(Some(not_sent)), Some(Some(late))) = (c.due, c.not_sent, c.sent_late) {
        let sent = due.saturating_sub(not_sent);
        let _ = writeln!(
            out,
            "Due requests:       {due} ({sent} sent, {late} of them over 1 ms late; {not_sent} never sent)"
        );
    }
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
    if let Some(n) = c.in_flight_at_end {
        let oldest = c.in_flight_oldest_us.flatten();
        let _ = writeln!(out, "In flight at end:   {n}{}", oldest.map_or(String::new(), |o| format!(" (oldest {} ms)", ms(Some(o)))));
    }
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
            percentiles(out, "Latency from intended send time (corrected for coordinated omission)", &r.latency_us, "responses");
            percentiles(out, "Latency from actual send time (uncorrected)", unc, "responses");
        }
        None => percentiles(out, "Latency percentiles", &r.latency_us, "responses"),
    }
}

pub fn render(doc: &Document) -> String {
    let mut out = String::new();
    let c = &doc.config;
    let loop_kind = c.rate.map_or("closed loop".to_string(), |r| format!("open loop at {r} req/s"));
    let _ = writeln!(out, "{} {} — {} {}", doc.engine.name, doc.engine.version, c.method, c.url);
    let clients = match c.page_conns {
        Some(n) => format!("{} visitors × up to {n} connections", c.connections),
        None => format!("{} connections", c.connections),
    };
    let _ = writeln!(
        out,
        "{}, {} thread(s), {}, keep-alive {}, warm-up {:.3} s\n",
        clients,
        c.threads,
        loop_kind,
        if c.keepalive { "on" } else { "off" },
        c.warmup_us as f64 / 1e6
    );
    if let Some(f) = &c.fastcgi {
        let _ = writeln!(out, "FastCGI {} script {}\n", f.address, f.script);
    }
    phase(&mut out, &doc.result);
    if let Some(t) = &doc.tls {
        let negotiated: Vec<String> = t
            .negotiated
            .iter()
            .map(|n| {
                let parts = [n.alpn.map(str::to_string), n.version.clone(), n.cipher.clone(), n.group.clone()];
                let words: Vec<String> = parts.into_iter().map(|p| p.unwrap_or_else(|| "-".into())).collect();
                format!("{} ({} connections)", words.join(" "), n.connections)
            })
            .collect();
        let p = &t.handshake_us.percentiles.0;
        let _ = writeln!(
            out,
            "\nTLS handshakes:     {} full, {} resumed; handshake p50 {} ms, p99 {} ms; {}",
            t.handshakes.full,
            t.handshakes.resumed,
            ms(p[0].1),
            ms(p[7].1),
            if negotiated.is_empty() { "-".into() } else { negotiated.join(", ") }
        );
    }
    if doc.protocol != "http/1.1" && doc.protocol != "fastcgi" {
        let _ = writeln!(out, "Protocol spoken:    {}", doc.protocol);
    }
    for (class, details) in &doc.error_details {
        let list: Vec<String> = details.iter().map(|(d, n)| format!("{d} {n}")).collect();
        let _ = writeln!(out, "Errors {class}: {}", list.join(", "));
    }
    let _ = writeln!(
        out,
        "\nClient connections: {} took part, {} got no response",
        doc.connections_measured, doc.connections_without_response
    );
    for (name, values) in &doc.header_counts {
        let list: Vec<String> = values.iter().map(|(v, n)| format!("{v} {n}")).collect();
        let _ = writeln!(out, "Header {name}: {}", if list.is_empty() { "-".into() } else { list.join(", ") });
    }
    if !doc.per_url.is_empty() {
        let _ = writeln!(out, "\nPer URL{:>42} {:>8} {:>8} {:>10} {:>10}", "complete", "non-2xx", "failed", "p50 ms", "p99 ms");
        for u in &doc.per_url {
            let name = match u.weight {
                Some(w) => format!("{} (x{w})", u.path),
                None => u.path.clone(),
            };
            let p = &u.latency_us.percentiles.0;
            let _ = writeln!(
                out,
                "  {name:<38} {:>8} {:>8} {:>8} {:>10} {:>10}",
                u.requests.completed,
                u.requests.non_2xx,
                u.requests.failed,
                ms(p[0].1),
                ms(p[7].1)
            );
        }
    }
    if let (Some(pages), Some(load)) = (&doc.pages, &doc.page_load_us) {
        let _ = writeln!(
            out,
            "\nPage views: {} complete, {} failed, {} per second",
            pages.completed,
            pages.failed,
            pages.per_s.map_or("-".into(), |v| format!("{v:.2}"))
        );
        percentiles(&mut out, "Page load time", load, "page views");
    }
    if let (Some(v), Some(duration)) = (&doc.visits, &doc.visit_duration_us) {
        let per = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.1}"));
        let _ = writeln!(
            out,
            "\nVisits: {} complete, {} failed, {} cut off by the end, {} per second; {} pages and {} requests a visit",
            v.completed,
            v.failed,
            v.in_flight_at_end,
            v.per_s.map_or("-".into(), |v| format!("{v:.2}")),
            per(v.pages_per_visit),
            per(v.requests_per_visit)
        );
        percentiles(&mut out, "Visit duration (think times included)", duration, "visits");
        let _ = writeln!(out, "\nPer page{:>41} {:>8} {:>10} {:>10}", "complete", "failed", "p50 ms", "p99 ms");
        for row in &doc.visit_pages {
            let p = &row.load_us.percentiles.0;
            let name = if row.login { format!("{} (login)", row.name) } else { row.name.clone() };
            let _ = writeln!(out, "  {name:<38} {:>8} {:>8} {:>10} {:>10}", row.completed, row.failed, ms(p[0].1), ms(p[7].1));
        }
    }

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
    if let Some(p) = &cpu.paced {
        // Says that responses were taken in batches, and how big (client/pacer.rs).
        let per_sleep = if p.sleeps > 0 { format!(", {:.1} socket events each", p.events_found as f64 / p.sleeps as f64) } else { String::new() };
        let _ = writeln!(out, "Coalesced waits: {} timed sleeps instead of blocking{per_sleep}", p.sleeps);
    }
    for w in &doc.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}

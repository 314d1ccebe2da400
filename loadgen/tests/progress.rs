//! `--progress`: the JSON lines on stderr while the load runs (their shape is a
//! contract with the lab's Python side), checked against a real run of the binary.

mod common;

use common::{TestServer, engine, u};
use serde_json::Value;

const KEYS: [&str; 6] = ["phase", "elapsed_s", "completed", "failed", "non_2xx", "per_s"];

/// Every stderr line, parsed; each must be exactly `{"progress":{...the 6 keys...}}`.
fn progress_lines(stderr: &str) -> Vec<Value> {
    stderr
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            let outer = v.as_object().expect("an object");
            assert_eq!(outer.keys().collect::<Vec<_>>(), ["progress"], "{line}");
            let p = v["progress"].as_object().expect("progress is an object");
            let mut keys: Vec<&str> = p.keys().map(String::as_str).collect();
            keys.sort_unstable();
            let mut want = KEYS.to_vec();
            want.sort_unstable();
            assert_eq!(keys, want, "{line}");
            assert!(matches!(p["phase"].as_str(), Some("warmup" | "measure")), "{line}");
            for k in ["elapsed_s", "per_s"] {
                assert!(p[k].as_f64().is_some_and(|x| x >= 0.0), "{k} in {line}");
            }
            for k in ["completed", "failed", "non_2xx"] {
                assert!(p[k].as_u64().is_some(), "{k} in {line}");
            }
            v["progress"].clone()
        })
        .collect()
}

fn of_phase<'a>(lines: &'a [Value], phase: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["phase"] == phase).collect()
}

fn f(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap()
}

/// Within a phase: about one line a second and never two within a second, counts
/// that never go down, and `per_s` = the completions since the line before over
/// the time since it.
fn check_phase(lines: &[&Value], expected: usize) {
    assert_eq!(lines.len(), expected, "{lines:#?}");
    let mut before: Option<&Value> = None;
    for (i, line) in lines.iter().enumerate() {
        let elapsed = f(line, "elapsed_s");
        assert!((elapsed - (i + 1) as f64).abs() < 0.25, "line {i} at {elapsed} s: {lines:#?}");
        let (since_s, done_before) = before.map_or((0.0, 0), |b| (f(b, "elapsed_s"), b["completed"].as_u64().unwrap()));
        assert!(elapsed - since_s >= 0.999, "two lines within a second: {lines:#?}");
        if let Some(b) = before {
            for k in ["completed", "failed", "non_2xx"] {
                assert!(line[k].as_u64() >= b[k].as_u64(), "{k} went down: {lines:#?}");
            }
        }
        let rate = (line["completed"].as_u64().unwrap() - done_before) as f64 / (elapsed - since_s);
        assert!((f(line, "per_s") - rate).abs() <= rate * 0.01 + 1.0, "per_s of {line} vs {rate}");
        before = Some(line);
    }
}

on_both_loops!(progress_lines_once_a_second_per_phase);
fn progress_lines_once_a_second_per_phase() {
    let server = TestServer::start();
    // A mix so that every counter moves: 2xx, 503 (non-2xx), and a request the
    // server never answers (a timeout after 200 ms, failed).
    let base = server.url("");
    let run = engine(&[
        "--json", "--progress", "--warmup", "1500ms", "-d", "3500ms", "-c", "4", "--timeout", "200ms",
        "--url", "/slow/2/12=4", "--url", "/status/503=1", "--url", "/stall=1", &base,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = run.json();
    let lines = progress_lines(&run.stderr);
    let (warmup, measure) = (of_phase(&lines, "warmup"), of_phase(&lines, "measure"));
    // Warm-up 1.5 s: a line at 1 s, none for its last half second. Measured 3.5 s:
    // lines at 1, 2 and 3 s, none after the end.
    check_phase(&warmup, 1);
    check_phase(&measure, 3);
    assert_eq!(lines[0]["phase"], "warmup", "warm-up lines come first: {lines:#?}");
    for line in &lines {
        for k in ["completed", "failed", "non_2xx"] {
            assert!(line[k].as_u64().unwrap() > 0, "{k} in {line}");
        }
    }
    // The measured phase's counts are the result's, seen earlier: never above them.
    let last = measure.last().unwrap();
    assert!(last["completed"].as_u64().unwrap() <= u(&doc, "/requests/completed"));
    assert!(last["failed"].as_u64().unwrap() <= u(&doc, "/requests/failed"));
    assert!(last["non_2xx"].as_u64().unwrap() <= u(&doc, "/requests/non_2xx"));
    assert!(last["completed"].as_u64().unwrap() * 10 >= u(&doc, "/requests/completed") * 7, "{last} vs {doc:#}");
}

on_both_loops!(without_a_warmup_and_without_the_flag);
fn without_a_warmup_and_without_the_flag() {
    let server = TestServer::start();
    let run = engine(&["--json", "--progress", "-d", "2500ms", "-c", "2", &server.url("/slow/2/12")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines = progress_lines(&run.stderr);
    check_phase(&of_phase(&lines, "measure"), 2);
    assert!(of_phase(&lines, "warmup").is_empty());
    // Off, stderr stays for error lines only, and the result is the same document.
    let quiet = engine(&["--json", "-d", "1200ms", "-c", "2", &server.url("/slow/2/12")]);
    assert_eq!(quiet.code, 0);
    assert!(quiet.stderr.is_empty(), "{}", quiet.stderr);
    let (a, b) = (run.json(), quiet.json());
    let keys = |d: &Value| d.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&a), keys(&b));
    assert_eq!(keys(&a["config"]), keys(&b["config"]));
}

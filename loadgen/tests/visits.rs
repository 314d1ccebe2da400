//! End-to-end tests of visits (`--journey`) against a server with sessions
//! (`tests/common/session.rs`): each visitor's cookie jar (a page counting per-session
//! visits answers 1, 2, 3 to one visitor and 1 to a new one), the login (form page, post,
//! redirect), cookies on every connection of a visitor, the Cookie rules the server can
//! see, think times, choices and leaving, failed and cut-off visits, the open loop of
//! visits, and the result's figures. Visits run on the task loop: each test runs once.
//! Every run is bounded (by -n/-d, --timeout, and a 30 s kill in `engine`).

mod common;

use common::session::SessionServer;
use common::{assert_valid, engine, engine_json, u, warning_codes};

fn visits(server: &SessionServer, journey: &str, words: &[&str]) -> serde_json::Value {
    let mut all = vec!["--journey", journey];
    all.extend_from_slice(words);
    let url = server.url();
    all.push(&url);
    let doc = engine_json(&all);
    assert_valid(&doc);
    doc
}

fn f(doc: &serde_json::Value, pointer: &str) -> f64 {
    doc.pointer(pointer).and_then(serde_json::Value::as_f64).unwrap_or_else(|| panic!("{pointer} missing in {doc:#}"))
}

#[test]
fn one_visitor_counts_one_two_three_and_a_new_one_starts_at_one() {
    let server = SessionServer::start();
    let journey = r#"{"steps": [{"page": "/count"}, {"page": "/count"}, {"page": "/count"}]}"#;
    let doc = visits(&server, journey, &["-c", "1", "-n", "3"]);
    // Three visits one after another: three visitors, each its own session.
    assert_eq!(server.counts_by_session(), [[1, 2, 3], [1, 2, 3], [1, 2, 3]]);
    assert_eq!((u(&doc, "/visits/completed"), u(&doc, "/visits/failed"), u(&doc, "/visits/in_flight_at_end")), (3, 0, 0));
    assert_eq!((u(&doc, "/visits/pages"), u(&doc, "/visits/requests")), (9, 9));
    assert_eq!((f(&doc, "/visits/pages_per_visit"), f(&doc, "/visits/requests_per_visit")), (3.0, 3.0));
    assert!(doc["visits"]["due"].is_null() && doc["requests"]["due"].is_null(), "closed loop");
    assert_eq!(u(&doc, "/visit_duration_us/count"), 3);
    assert_eq!((u(&doc, "/pages/completed"), u(&doc, "/page_load_us/count")), (9, 9));
    let rows = doc["visit_pages"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "the same page three times is one row");
    assert_eq!((rows[0]["name"].as_str(), rows[0]["login"].as_bool(), u(&rows[0], "/completed")), (Some("/count"), Some(false), 9));
    let per_url = doc["per_url"].as_array().unwrap();
    assert_eq!((per_url.len(), per_url[0]["method"].as_str(), u(&per_url[0], "/requests/completed")), (1, Some("GET"), 9));
    assert_eq!(u(&doc, "/connections_opened"), 3, "a new visitor opens its own connection");
    assert_eq!((u(&doc, "/connections_measured"), u(&doc, "/connections_without_response")), (1, 0), "the visitor slot");
    assert_eq!(doc["config"]["journey"]["steps"].as_array().unwrap().len(), 3);
    assert_eq!(u(&doc, "/config/page_conns"), 6);
}

#[test]
fn concurrent_visitors_never_share_a_jar() {
    let server = SessionServer::start();
    let journey = r#"{"steps": [{"page": "/count", "assets": ["/a.css", "/b.js"], "name": "first"}, {"page": "/count"},
                                {"page": "/count"}]}"#;
    let doc = visits(&server, journey, &["-c", "4", "-t", "2", "-n", "12"]);
    let sessions = server.counts_by_session();
    assert_eq!(sessions.len(), 12);
    assert!(sessions.iter().all(|s| s == &[1, 2, 3]), "{sessions:?}");
    assert_eq!((u(&doc, "/visits/completed"), u(&doc, "/visits/requests")), (12, 12 * 5));
    // Every request after the first of a visit carries its session, the assets (on the
    // visitor's other connections) too.
    let log = server.log();
    let assets: Vec<_> = log.iter().filter(|l| l.path != "/count").collect();
    assert_eq!(assets.len(), 24);
    assert!(assets.iter().all(|l| l.cookie.starts_with("SID=")), "{assets:?}");
    assert_eq!(u(&doc, "/connections_measured"), 4);
}

#[test]
fn a_login_posts_its_form_with_the_forms_cookie_and_follows_the_redirect() {
    let server = SessionServer::start();
    let journey = r#"{"login": {"form_page": "/login", "path": "/login", "form": {"log": "alice", "pwd": "p@ss"}},
                      "headers": {"User-Agent": "visits-test"},
                      "steps": [{"page": "/home", "assets": ["/a.css", "/b.js"], "name": "home"}]}"#;
    let doc = visits(&server, journey, &["-c", "1", "-n", "2"]);
    let log = server.log();
    let paths: Vec<(&str, &str)> = log.iter().map(|l| (l.method.as_str(), l.path.as_str())).collect();
    assert_eq!(&paths[..3], [("GET", "/login"), ("POST", "/login"), ("GET", "/home")], "the redirect followed");
    let post = &log[1];
    assert_eq!((post.body.as_str(), post.cookie.as_str()), ("log=alice&pwd=p%40ss", "testcookie=1"));
    // After the login every request is alice's, on every connection.
    let after: Vec<_> = log.iter().filter(|l| !l.path.starts_with("/login")).collect();
    assert_eq!(after.len(), 2 * 4, "per visit: the redirect, the page, two assets");
    assert!(after.iter().all(|l| l.cookie.contains("auth=alice")), "{after:?}");
    assert_eq!((u(&doc, "/visits/completed"), u(&doc, "/visits/pages"), u(&doc, "/visits/requests")), (2, 2, 12));
    let rows = doc["visit_pages"].as_array().unwrap();
    let names: Vec<(&str, bool)> = rows.iter().map(|r| (r["name"].as_str().unwrap(), r["login"].as_bool().unwrap())).collect();
    assert_eq!(names, [("login", true), ("home", false)]);
    assert_eq!((u(&rows[0], "/completed"), u(&rows[1], "/completed")), (2, 2));
    // The POST has its own row; the redirect's target (learnt from the server) none.
    let methods: Vec<(&str, &str)> =
        doc["per_url"].as_array().unwrap().iter().map(|r| (r["method"].as_str().unwrap(), r["path"].as_str().unwrap())).collect();
    assert_eq!(methods, [("GET", "/login"), ("POST", "/login"), ("GET", "/home"), ("GET", "/a.css"), ("GET", "/b.js")]);
    assert_eq!(u(&doc, "/requests/completed"), 12, "the redirects count among the requests");
    assert_eq!(doc["config"]["journey"]["login"]["form"]["pwd"], "*", "no password in the result");
    assert!(doc["status_codes"]["302"] == 2);

    // Not following the redirect: the login ends at the 302.
    let server = SessionServer::start();
    let journey = journey.replace(r#""pwd": "p@ss"}"#, r#""pwd": "p@ss"}, "follow_redirect": false"#);
    visits(&server, &journey, &["-c", "1", "-n", "1"]);
    let home: Vec<_> = server.log().into_iter().filter(|l| l.path == "/home").collect();
    assert_eq!(home.len(), 1, "only the journey's own /home");
    assert!(home[0].cookie.contains("auth=alice"));
}

#[test]
fn each_visit_logs_in_as_one_of_the_accounts() {
    let server = SessionServer::start();
    let journey = r#"{"login": {"form_page": "/login", "path": "/login",
                                "forms": [{"log": "alice", "pwd": "p@ss"}, {"log": "bob", "pwd": "p@ss"}]},
                      "steps": [{"page": "/home"}]}"#;
    let doc = visits(&server, journey, &["-c", "2", "-n", "40"]);
    let users: Vec<String> = server.log().into_iter().filter(|l| l.path == "/home").map(|l| l.cookie).collect();
    let alice = users.iter().filter(|c| c.contains("auth=alice")).count();
    let bob = users.iter().filter(|c| c.contains("auth=bob")).count();
    // Each visit: the redirect's /home and the journey's, as the same account.
    assert_eq!((alice + bob, alice % 2, bob % 2), (80, 0, 0), "{users:?}");
    assert!(alice >= 20 && bob >= 20, "alice {alice}, bob {bob}: drawn at random, 1 in 2 each");
    assert_eq!(doc["config"]["journey"]["login"]["forms"][1]["pwd"], "*");
}

#[test]
fn a_login_without_the_forms_cookie_is_refused_by_the_site() {
    // Without the form's page the test cookie is missing: the site answers the form
    // again (200), the visit goes on as a guest. The engine counts what happened.
    let server = SessionServer::start();
    let journey = r#"{"login": {"path": "/login", "form": {"log": "alice", "pwd": "p@ss"}}, "steps": [{"page": "/home"}]}"#;
    let doc = visits(&server, journey, &["-c", "1", "-n", "1"]);
    let home = server.log().into_iter().find(|l| l.path == "/home").unwrap();
    assert_eq!(home.cookie, "");
    assert_eq!(u(&doc, "/visits/completed"), 1);
}

#[test]
fn a_visitors_browser_keeps_the_assets_it_got() {
    let server = SessionServer::start();
    let steps = r#""steps": [{"page": "/a", "assets": ["/s.css", "/j.js"]}, {"page": "/b", "assets": ["/s.css", "/b.png"]}]"#;
    let doc = visits(&server, &format!("{{{steps}}}"), &["-c", "1", "-n", "2"]);
    let fetched = |path: &str| server.log().iter().filter(|l| l.path == path).count();
    assert_eq!((fetched("/s.css"), fetched("/j.js"), fetched("/b.png")), (2, 2, 2), "once a visit");
    assert_eq!(f(&doc, "/visits/requests_per_visit"), 5.0);
    // Without the cache every page fetches all its assets.
    let server = SessionServer::start();
    let doc = visits(&server, &format!(r#"{{"cache_assets": false, {steps}}}"#), &["-c", "1", "-n", "2"]);
    assert_eq!(server.log().iter().filter(|l| l.path == "/s.css").count(), 4);
    assert_eq!(f(&doc, "/visits/requests_per_visit"), 6.0);
}

#[test]
fn cookie_rules_the_server_can_see() {
    let server = SessionServer::start();
    let journey = r#"{"steps": [{"page": "/count"}, {"page": "/secure"}, {"page": "/dir/set"}, {"page": "/dir/x"},
                                {"page": "/other"}, {"page": "/forget"}, {"page": "/count"}]}"#;
    visits(&server, journey, &["-c", "1", "-n", "1"]);
    let cookie_of = |path: &str| server.log().into_iter().find(|l| l.path == path).unwrap().cookie;
    // Secure is kept but never sent over http; d=1's default path is /dir.
    assert_eq!(cookie_of("/dir/x"), "d=1; SID=1");
    assert_eq!(cookie_of("/other"), "SID=1");
    // Max-Age=0 deleted the session: the last /count is a new session's first.
    assert_eq!(server.counts_by_session(), [vec![1], vec![1]]);
}

#[test]
fn think_times_stretch_the_visit_not_the_pages() {
    let server = SessionServer::start();
    let journey = r#"{"think": {"kind": "fixed", "ms": 150}, "steps": [{"page": "/a"}, {"page": "/b"}, {"page": "/c"}]}"#;
    let doc = visits(&server, journey, &["-c", "1", "-n", "2"]);
    // Two thinks a visit (none before its first page).
    let min = u(&doc, "/visit_duration_us/min");
    assert!((300_000..600_000).contains(&min), "visit {min} us");
    assert!(u(&doc, "/page_load_us/max") < 100_000, "a page's load leaves the think time out");
    assert_eq!(doc["visit_duration_us"]["histogram_max_us"], 3_600_000_000u64);
}

#[test]
fn choices_follow_their_weights_and_visitors_leave() {
    let server = SessionServer::start();
    let journey = r#"{"steps": [{"page": "/home"},
                                {"choice": [{"page": "/a", "weight": 3}, {"page": "/b", "weight": 1}]},
                                {"choice": [{"page": "/c"}, {"exit": true, "weight": 3}]}]}"#;
    let doc = visits(&server, journey, &["-c", "4", "-n", "400"]);
    let rows: Vec<(String, u64)> = doc["visit_pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap().to_string(), u(r, "/completed")))
        .collect();
    let count = |name: &str| rows.iter().find(|(n, _)| n == name).map_or(0, |r| r.1);
    assert_eq!(count("/home"), 400);
    assert_eq!(count("/a") + count("/b"), 400);
    assert!((250..350).contains(&count("/a")), "3 in 4 take /a: {rows:?}");
    assert!((60..140).contains(&count("/c")), "1 in 4 go on to /c: {rows:?}");
    assert_eq!(u(&doc, "/visits/pages"), 800 + count("/c"));
    let pages_per_visit = f(&doc, "/visits/pages_per_visit");
    assert!((2.0..2.5).contains(&pages_per_visit), "{pages_per_visit}");
}

#[test]
fn a_failed_request_ends_the_visit() {
    let server = SessionServer::start();
    let journey = r#"{"steps": [{"page": "/count"}, {"page": "/fail"}, {"page": "/count"}]}"#;
    let doc = visits(&server, journey, &["-c", "1", "-n", "3"]);
    assert_eq!((u(&doc, "/visits/completed"), u(&doc, "/visits/failed")), (0, 3));
    assert_eq!(server.counts_by_session(), [[1], [1], [1]], "no visitor went on past the failure");
    assert_eq!(u(&doc, "/errors/parse"), 3);
    assert_eq!(u(&doc, "/visit_duration_us/count"), 0, "only complete visits have a duration");
    let failed: Vec<u64> = doc["visit_pages"].as_array().unwrap().iter().map(|r| u(r, "/failed")).collect();
    assert_eq!(failed, [0, 3]);
}

#[test]
fn visits_cut_off_by_the_end_are_in_flight_not_failed() {
    let server = SessionServer::start();
    let journey = r#"{"think": {"kind": "fixed", "ms": 5000}, "steps": [{"page": "/a"}, {"page": "/b"}]}"#;
    let doc = visits(&server, journey, &["-c", "3", "-d", "1s"]);
    assert_eq!((u(&doc, "/visits/completed"), u(&doc, "/visits/failed"), u(&doc, "/visits/in_flight_at_end")), (0, 0, 3));
    assert_eq!(u(&doc, "/requests/completed"), 3, "each visitor's first page");
    // A visitor thinking at the end was served: no clients_unserved alarm.
    assert_eq!((u(&doc, "/connections_measured"), u(&doc, "/connections_without_response")), (3, 0));
    assert!(!warning_codes(&doc).contains(&"clients_unserved"));
    assert!(doc["visits"]["per_s"] == 0.0);
}

#[test]
fn open_loop_counts_visits_arriving_a_second() {
    let server = SessionServer::start();
    let journey = r#"{"steps": [{"page": "/count", "assets": ["/a.css"], "name": "first"}, {"page": "/count"}]}"#;
    let doc = visits(&server, journey, &["--rate", "40", "-c", "8", "-d", "1s"]);
    assert_eq!(u(&doc, "/visits/due"), 40);
    assert_eq!(u(&doc, "/visits/not_started"), 0);
    // The first visit is due as the run begins, before its visitor's task is up.
    assert!(u(&doc, "/visits/started_late") < 4, "{:#}", doc["visits"]);
    let done = u(&doc, "/visits/completed") + u(&doc, "/visits/in_flight_at_end");
    assert_eq!(done, 40, "every visit due began, and ended complete or in flight");
    assert!(doc["requests"]["due"].is_null(), "the schedule is of visits");
    assert!(warning_codes(&doc).is_empty(), "{:?}", doc["warnings"]);

    // Too few visitors for the rate: visits wait, and some never begin.
    let journey = r#"{"think": {"kind": "fixed", "ms": 300}, "steps": [{"page": "/a"}, {"page": "/b"}]}"#;
    let doc = visits(&server, journey, &["--rate", "20", "-c", "2", "-d", "1s"]);
    assert_eq!(u(&doc, "/visits/due"), 20);
    assert!(u(&doc, "/visits/not_started") >= 10, "{:#}", doc["visits"]);
    assert!(warning_codes(&doc).contains(&"rate_not_reached"));
    let params = &doc["warning_codes"].as_array().unwrap().iter().find(|w| w["code"] == "rate_not_reached").unwrap()["params"];
    assert_eq!((params["of"].as_str(), u(params, "/due")), (Some("visits"), 20));
}

#[test]
fn visits_in_stages_after_a_warmup_and_outside_visits_the_keys_are_empty() {
    let server = SessionServer::start();
    let doc = visits(&server, r#"{"steps": [{"page": "/count"}]}"#, &["--stages", "300ms:1,300ms:3"]);
    assert!(u(&doc, "/visits/completed") > 0);
    assert_eq!(doc["stages"].as_array().unwrap().len(), 2);

    // A warm-up's visits load the server and are not counted.
    let server = SessionServer::start();
    let doc = visits(&server, r#"{"steps": [{"page": "/count"}]}"#, &["-c", "1", "--warmup", "300ms", "-d", "300ms"]);
    let counted = u(&doc, "/visits/completed") + u(&doc, "/visits/in_flight_at_end");
    assert!(counted > 0 && (server.counts_by_session().len() as u64) > counted + 10, "{:#}", doc["visits"]);

    let plain = engine_json(&["-c", "1", "-n", "2", &format!("{}/count", server.url())]);
    assert_valid(&plain);
    assert!(plain["visits"].is_null() && plain["visit_duration_us"].is_null() && plain["config"]["journey"].is_null());
    assert_eq!(plain["visit_pages"], serde_json::json!([]));
    assert!(plain["per_url"].as_array().unwrap().is_empty());
}

#[test]
fn bad_journeys_are_usage_errors_in_one_line() {
    for (args, words) in [
        (vec!["--journey", r#"{"steps": []}"#, "http://127.0.0.1:1"], "journey: steps: a journey needs at least one step"),
        (vec!["--journey", "/no/such.json", "http://127.0.0.1:1"], "cannot read the journey file"),
        (vec!["--journey", r#"{"steps": [{"page": "/"}]}"#, "--page", "/", "http://127.0.0.1:1"], "cannot be used with"),
    ] {
        let run = engine(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(words) && run.stderr.trim().lines().count() == 1, "{}", run.stderr);
    }
}

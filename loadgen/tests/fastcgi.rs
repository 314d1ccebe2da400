//! FastCGI mode end to end: the engine against the test responder
//! (tests/common/fcgi.rs) over unix sockets and TCP, and — when run with
//! `--ignored` on a machine that has it — against a real PHP-FPM 8.2.

mod common;

use std::path::PathBuf;

use common::fcgi::FcgiServer;
use common::{assert_valid, engine, engine_json, u};

fn tmp() -> PathBuf {
    std::env::temp_dir()
}

#[test]
fn unix_socket_keepalive_and_cgi_status() {
    let server = FcgiServer::unix(&tmp());
    let doc = engine_json(&["-n", "200", "-c", "4", "--fastcgi", &server.address, "--script", "/srv/www/hello.php"]);
    assert_valid(&doc);
    assert_eq!((u(&doc, "/requests/completed"), u(&doc, "/requests/failed")), (200, 0));
    assert_eq!(u(&doc, "/status_codes/200"), 200);
    assert_eq!(u(&doc, "/bytes/body_received"), 200 * 5);
    assert_eq!(server.requests(), 200);
    assert_eq!(server.accepts(), 4, "FCGI_KEEP_CONN keeps connections open");
    assert!(server.last_keep_conn());
    assert_eq!(server.param("SCRIPT_FILENAME").as_deref(), Some("/srv/www/hello.php"));
    assert_eq!(server.param("REQUEST_METHOD").as_deref(), Some("GET"));
    assert_eq!(server.param("SCRIPT_NAME").as_deref(), Some("/hello.php"));
    assert_eq!(server.param("DOCUMENT_ROOT").as_deref(), Some("/srv/www"));
    assert_eq!(doc["config"]["fastcgi"]["script"], "/srv/www/hello.php");
    assert_eq!(u(&doc, "/errors/rejected"), 0);

    let doc = engine_json(&["-n", "20", "-c", "2", "--fastcgi", &server.address, "--script", "/srv/www/notfound.php"]);
    assert_eq!((u(&doc, "/status_codes/404"), u(&doc, "/requests/non_2xx")), (20, 20));
}

#[test]
fn tcp_without_keepalive_and_large_bodies() {
    let server = FcgiServer::tcp();
    let doc = engine_json(&["-n", "50", "-c", "2", "--no-keepalive", "--fastcgi", &format!("tcp:{}", server.address),
        "--script", "/srv/hello.php", "http://localhost/hello.php?a=1"]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/requests/completed"), 50);
    assert_eq!(server.accepts(), 50, "no keep-conn: the application closes after each request");
    assert!(!server.last_keep_conn());
    assert_eq!(server.param("QUERY_STRING").as_deref(), Some("a=1"));
    assert_eq!(server.param("HTTP_HOST").as_deref(), Some("localhost"));

    let doc = engine_json(&["-n", "20", "-c", "2", "--fastcgi", &server.address, "--script", "/srv/big.php"]);
    assert_eq!((u(&doc, "/requests/completed"), u(&doc, "/bytes/body_received")), (20, 20 * 100_000));
}

#[test]
fn rejected_and_malformed_responses_are_errors() {
    let server = FcgiServer::unix(&tmp());
    let doc = engine_json(&["-n", "10", "-c", "2", "--fastcgi", &server.address, "--script", "/x/overloaded.php"]);
    assert_valid(&doc);
    assert_eq!((u(&doc, "/errors/rejected"), u(&doc, "/requests/failed")), (10, 10));
    let doc = engine_json(&["-n", "10", "-c", "2", "--fastcgi", &server.address, "--script", "/x/badversion.php"]);
    assert_eq!(u(&doc, "/errors/parse"), 10);
}

#[test]
fn cgi_headers_can_be_counted() {
    let server = FcgiServer::tcp();
    let doc = engine_json(&["-n", "30", "-c", "3", "--count-header", "X-Cache", "--fastcgi", &server.address,
        "--script", "/x/xcache.php"]);
    assert_eq!(doc["header_counts"]["X-Cache"], serde_json::json!({"HIT": 30}));
}

#[test]
fn fastcgi_usage_errors() {
    for args in [
        &["-n", "1", "--fastcgi", "unix:/tmp/none.sock"][..],
        &["-n", "1", "--fastcgi", "unix:/tmp/none.sock", "--script", "relative.php"],
        &["-n", "1", "--fastcgi", "10.1.2.3:9000", "--script", "/a.php"],
        &["-n", "1", "--script", "/a.php", "http://127.0.0.1:1/"],
        &["-n", "1", "--fastcgi", "unix:/tmp/none.sock", "--script", "/a.php", "--url", "/b"],
    ] {
        let run = engine(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.trim().lines().count(), 1, "{args:?}: {}", run.stderr);
    }
    // A socket nobody listens on: connect errors, not a crash.
    let doc = engine_json(&["-n", "3", "-c", "1", "--fastcgi", "unix:/nonexistent/php.sock", "--script", "/a.php"]);
    assert_eq!(u(&doc, "/errors/connect"), 3);
}

/// Against the real PHP-FPM 8.2 of the distribution (run with `--ignored`).
#[test]
#[ignore = "needs php-fpm8.2; run with: cargo test --release -- --ignored"]
fn real_php_fpm() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let bin = "/usr/sbin/php-fpm8.2";
    assert!(std::path::Path::new(bin).exists(), "{bin} is not installed");
    let dir = tmp().join(format!("sbl-fpm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hello.php"), "<?php header('X-Test: yes'); echo 'Hello';").unwrap();
    let sock = dir.join("php.sock");
    let conf = format!(
        "[global]\nerror_log = {d}/fpm.log\ndaemonize = no\npid = {d}/fpm.pid\n\
         [www]\nlisten = {s}\npm = static\npm.max_children = 2\nuser = nobody\ngroup = nogroup\n\
         listen.mode = 0666\n",
        d = dir.display(),
        s = sock.display()
    );
    std::fs::write(dir.join("fpm.conf"), conf).unwrap();
    let mut child = Command::new(bin)
        .args(["-F", "-R", "-n", "-y"])
        .arg(dir.join("fpm.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sock.exists() && Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let script = dir.join("hello.php").display().to_string();
    let address = format!("unix:{}", sock.display());
    let result = std::panic::catch_unwind(|| {
        let doc = engine_json(&["-n", "500", "-c", "4", "--count-header", "X-Test", "--fastcgi", &address, "--script", &script]);
        assert_valid(&doc);
        assert_eq!((u(&doc, "/requests/completed"), u(&doc, "/status_codes/200")), (500, 500));
        assert_eq!(u(&doc, "/bytes/body_received"), 500 * 5);
        assert_eq!(doc["header_counts"]["X-Test"]["yes"], 500);
        let doc = engine_json(&["-n", "10", "-c", "1", "--fastcgi", &address, "--script", "/nonexistent.php"]);
        assert_eq!(u(&doc, "/status_codes/404"), 10);
    });
    // SIGTERM, not SIGKILL: the master then stops its children (SIGKILL would
    // orphan them). SIGKILL only if it has not exited after 5 s.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(5);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

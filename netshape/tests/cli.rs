//! The binary from the outside: bad input is one line on stderr and exit status 2; a
//! namespace that cannot be entered is one line and exit status 1 (no root needed).

use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_stackbench-netshape")).args(args).output().expect("run the binary");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_shape_is_one_line_and_status_2() {
    let (code, err) = run(&["--a", "/run/netns/x:a", "--b", "/run/netns/y:b", "--a-to-b", "delay=5ms,jitter=9ms"]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("stackbench-netshape: error: --a-to-b: jitter must not exceed delay"), "{err}");
}

#[test]
fn missing_flag_and_unknown_flag_are_usage_errors() {
    for args in [&["--b", "/n:b"][..], &["--a", "/n:a", "--b", "/n:b", "--bogus"][..]] {
        let (code, err) = run(args);
        assert_eq!(code, 2, "{args:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn a_namespace_that_does_not_exist_is_status_1() {
    let (code, err) = run(&["--a", "/nonexistent/ns:a", "--b", "/nonexistent/ns2:b"]);
    assert_eq!(code, 1);
    assert_eq!(err.trim(), "stackbench-netshape: error: cannot open the network namespace /nonexistent/ns: No such file or directory (os error 2)");
}

#[test]
fn help_and_version_exit_0() {
    let out = Command::new(env!("CARGO_BIN_EXE_stackbench-netshape")).arg("--help").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--a-to-b"));
    let (code, _) = run(&["--version"]);
    assert_eq!(code, 0);
}

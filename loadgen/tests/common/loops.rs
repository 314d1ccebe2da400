//! Every engine test on both event loops (loadgen/README.md, "Design": the direct
//! loop and the task loop count the same events the same, by the rules of
//! src/client/rules.rs). `on_both_loops!(name)` beside a test's function makes it
//! two tests, `name::direct` and `name::tasks`, each running every load of the test
//! on that loop: the engine's own switch, STACKBENCH_LOAD_LOOP, set on each engine
//! process the test starts (`engine`, `engine_with_env`, `engine_under_ulimit`,
//! `engine_command`). A load the direct loop cannot carry (open loop, stages, page
//! mode, --read-rate, FastCGI, io_uring) goes to the task loop either way; a test
//! whose loads are all such is a task-loop test and is not doubled.
//!
//! `STACKBENCH_LOAD_LOOP=tasks cargo test` (or `=direct`) still runs the suite on one
//! loop: the other loop's twins pass at once, saying so.

use std::cell::{Cell, RefCell};
use std::process::Command;

/// The engine's switch between its loops (src/client/direct_loop.rs, `LOOP_ENV`).
const LOOP_ENV: &str = "STACKBENCH_LOAD_LOOP";

thread_local! {
    /// The loop this test's loads go on (each test runs on a thread of its own).
    static LOOP: Cell<Option<&'static str>> = const { Cell::new(None) };
    /// The loops the documents of this test's runs said they ran on.
    static RAN_ON: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// `on_both_loops!(name)`: the test body `fn name()` as two tests, `name::direct` and
/// `name::tasks` (see the module's comment).
#[macro_export]
macro_rules! on_both_loops {
    ($test:ident) => {
        mod $test {
            #[test]
            fn direct() {
                $crate::common::loops::on_loop("direct", super::$test);
            }

            #[test]
            fn tasks() {
                $crate::common::loops::on_loop("tasks", super::$test);
            }
        }
    };
}

/// Runs `test` with every engine it starts on loop `lp`. On the direct loop, at least
/// one of its loads must have run there (else it is a task-loop test, and doubled for
/// nothing) — unless the whole suite runs on io_uring (STACKBENCH_TEST_IO), which the
/// direct loop does not carry.
pub fn on_loop(lp: &'static str, test: fn()) {
    if let Ok(only) = std::env::var(LOOP_ENV)
        && only != lp
    {
        eprintln!("not run: {LOOP_ENV}={only}");
        return;
    }
    LOOP.set(Some(lp));
    test();
    let ran = RAN_ON.take();
    if lp == "tasks" {
        assert!(ran.iter().all(|l| l == "tasks"), "asked for the task loop, the runs said {ran:?}");
    }
    let on_epoll = !matches!(std::env::var("STACKBENCH_TEST_IO").as_deref(), Ok(io) if io != "epoll");
    if lp == "direct" && on_epoll && !ran.is_empty() {
        assert!(ran.iter().any(|l| l == "direct"), "no load of this test ran on the direct loop: {ran:?}");
    }
}

/// The loop this test's loads go on: the one `on_both_loops!` asked for, else the
/// engine's own choice (STACKBENCH_LOAD_LOOP, or the direct loop where it carries
/// the load).
pub fn current() -> &'static str {
    match (LOOP.get(), std::env::var(LOOP_ENV).as_deref()) {
        (Some(lp), _) => lp,
        (None, Ok("tasks")) => "tasks",
        (None, _) => "direct",
    }
}

/// Sets the loop on an engine process about to start (its own environment, given
/// after this, still wins).
pub fn apply(command: &mut Command) {
    if let Some(lp) = LOOP.get() {
        command.env(LOOP_ENV, lp);
    }
}

/// Notes which loop a run's document (its stdout) says it ran on, if it is one.
pub fn saw(stdout: &str) {
    if let Ok(doc) = serde_json::from_str::<serde_json::Value>(stdout)
        && let Some(lp) = doc["event_loop"].as_str()
    {
        RAN_ON.with_borrow_mut(|ran| ran.push(lp.to_string()));
    }
}

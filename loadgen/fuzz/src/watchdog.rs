//! Hang detection: a thread that watches the case being run. A case that runs
//! longer than the limit (an endless loop in a reader, or work out of all
//! proportion) is saved as a `hang-` finding and the process exits with status 1
//! — it cannot be interrupted, so the watchdog ends it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::case::{Case, fingerprint};

struct Running {
    since: Option<Instant>,
    case: Case,
}

pub struct Watchdog {
    running: Arc<Mutex<Running>>,
}

impl Watchdog {
    pub fn start(limit: Duration, crashes: PathBuf) -> Watchdog {
        let running = Arc::new(Mutex::new(Running { since: None, case: Case { bytes: Vec::new(), split: 0 } }));
        let watched = running.clone();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(limit / 4);
                let state = watched.lock().unwrap_or_else(|e| e.into_inner());
                if state.since.is_some_and(|t| t.elapsed() > limit) {
                    let name = format!("hang-{:016x}", fingerprint(&state.case.bytes));
                    let saved = state.case.save(&crashes, &name);
                    eprintln!("stackbench-load-fuzz finding: hang: a case ran over {limit:?}; saved as {saved:?}");
                    std::process::exit(1);
                }
            }
        });
        Watchdog { running }
    }

    /// A case starts: remember it (a copy: the allocation is reused).
    pub fn arm(&self, case: &Case) {
        let mut state = self.running.lock().unwrap_or_else(|e| e.into_inner());
        state.case.bytes.clear();
        state.case.bytes.extend_from_slice(&case.bytes);
        state.case.split = case.split;
        state.since = Some(Instant::now());
    }

    pub fn disarm(&self) {
        self.running.lock().unwrap_or_else(|e| e.into_inner()).since = None;
    }
}

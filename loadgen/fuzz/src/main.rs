//! stackbench-load-fuzz: a coverage-guided fuzzer of the load engine's response
//! readers (HTTP/1.1 and FastCGI) that builds and runs on stable Rust.
//!
//! cargo-fuzz needs a nightly compiler; the coverage feedback it relies on does
//! not: LLVM's SanitizerCoverage counters are a stable codegen flag
//! (.cargo/config.toml), read here (coverage.rs). The loop is libFuzzer's in
//! small: load the seed corpus → run each seed → then until the time or run
//! budget is spent: pick an entry, mutate it (mutate.rs), run it against the
//! target's checks (targets/), keep it if it reached new coverage. A finding
//! (panic, broken invariant, hang) is saved under the crash directory with its
//! split seed, and the exit status is 1.
//!
//! ```text
//! stackbench-load-fuzz --target http|fastcgi [--seconds N] [--runs N] [--seed S]
//!                      [--corpus DIR] [--crashes DIR] [--case-ms MS]
//! stackbench-load-fuzz --target http|fastcgi --replay FILE
//! ```

// The engine's own reader code, compiled in from loadgen/src: loadgen is a
// binary crate with no library to depend on, and these modules import only each
// other (and `target`/`error` for the request builders), so they build as is.
#[allow(dead_code)]
#[path = "../../src/error.rs"]
mod error;
#[allow(dead_code, unused_imports)]
#[path = "../../src/protocol/mod.rs"]
mod protocol;
#[allow(dead_code)]
#[path = "../../src/target.rs"]
mod target;

mod case;
mod coverage;
mod mutate;
mod rng;
mod targets;
mod watchdog;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use case::{Case, corpus_files, fingerprint};
use coverage::Coverage;
use rng::Rng;
use targets::{Finding, Target};
use watchdog::Watchdog;

struct Options {
    target: Target,
    seconds: u64,
    runs: Option<u64>,
    seed: u64,
    corpus: PathBuf,
    crashes: PathBuf,
    case_ms: u64,
    replay: Option<PathBuf>,
}

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1).collect()) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("stackbench-load-fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    // Panics are findings, reported once by the loop: no backtrace noise per case.
    std::panic::set_hook(Box::new(|_| {}));
    let result = match &options.replay {
        Some(file) => replay(&options, file),
        None => fuzz(&options),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stackbench-load-fuzz: {e}");
            ExitCode::from(1)
        }
    }
}

fn parse_args(args: Vec<String>) -> Result<Options, String> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut target = None;
    let (mut seconds, mut runs, mut seed, mut case_ms) = (60, None, None, 2000);
    let (mut corpus, mut crashes, mut replay) = (None, None, None);
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<u64>().map_err(|_| format!("{flag}: '{v}' is not a whole number"));
        match flag.as_str() {
            "--target" => {
                let name = value()?;
                target = Some(Target::ALL.into_iter().find(|t| t.name() == name).ok_or(format!("unknown target '{name}' (http, fastcgi, h2)"))?);
            }
            "--seconds" => seconds = number(value()?)?,
            "--runs" => runs = Some(number(value()?)?),
            "--seed" => seed = Some(number(value()?)?),
            "--case-ms" => case_ms = number(value()?)?,
            "--corpus" => corpus = Some(PathBuf::from(value()?)),
            "--crashes" => crashes = Some(PathBuf::from(value()?)),
            "--replay" => replay = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown option '{other}' (see the header of src/main.rs)")),
        }
    }
    let target = target.ok_or("--target http|fastcgi|h2 is required")?;
    let seed = seed.unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64));
    Ok(Options {
        target,
        seconds,
        runs,
        seed,
        corpus: corpus.unwrap_or_else(|| here.join("corpus").join(target.name())),
        crashes: crashes.unwrap_or_else(|| here.join("crashes").join(target.name())),
        case_ms,
        replay,
    })
}

/// Runs one saved case (a finding, or any file) and says what it does.
fn replay(options: &Options, file: &Path) -> Result<(), String> {
    let case = Case::load(file, 0).map_err(|e| format!("{}: {e}", file.display()))?;
    match options.target.run(&case) {
        Ok(()) => {
            println!("{}: no finding ({} bytes, split {})", file.display(), case.bytes.len(), case.split);
            Ok(())
        }
        Err(f) => Err(format!("{}: {}: {}", file.display(), f.kind, f.detail)),
    }
}

fn fuzz(options: &Options) -> Result<(), String> {
    let target = options.target;
    let mut rng = Rng::new(options.seed);
    let mut coverage = Coverage::new();
    let watchdog = Watchdog::start(Duration::from_millis(options.case_ms), options.crashes.clone());
    let files = corpus_files(&options.corpus).map_err(|e| format!("corpus {}: {e}", options.corpus.display()))?;
    if files.is_empty() {
        return Err(format!("the corpus {} has no seeds", options.corpus.display()));
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(options.seconds);
    let mut corpus = Vec::new();
    let mut execs = 0u64;
    // Every seed runs first, with the split its file names or a fresh one, so a
    // saved finding added to the corpus is checked on every run from then on.
    for file in &files {
        let case = Case::load(file, rng.next()).map_err(|e| format!("{}: {e}", file.display()))?;
        execute(target, &case, &mut coverage, &watchdog, &options.crashes)?;
        execs += 1;
        corpus.push(case);
    }
    let seeds = corpus.len();
    while options.runs.map_or(Instant::now() < deadline, |n| execs < n) {
        let base = &corpus[rng.below(corpus.len())];
        let other = &corpus[rng.below(corpus.len())];
        let case = mutate::mutate(base, other, target.grammar(), &mut rng);
        let new = execute(target, &case, &mut coverage, &watchdog, &options.crashes)?;
        execs += 1;
        if new {
            corpus.push(case);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "fuzz {}: {execs} runs in {seconds:.1} s ({:.0}/s), seed {}, corpus {seeds} seeds + {} found, edges {}/{}, findings 0",
        target.name(),
        execs as f64 / seconds,
        options.seed,
        corpus.len() - seeds,
        coverage.covered(),
        coverage.edges(),
    );
    Ok(())
}

/// Runs one case under the watchdog; true if it reached new coverage. A finding
/// is saved and ends the run.
fn execute(target: Target, case: &Case, coverage: &mut Coverage, watchdog: &Watchdog, crashes: &Path) -> Result<bool, String> {
    watchdog.arm(case);
    Coverage::reset();
    let result = target.run(case);
    let new = coverage.record();
    watchdog.disarm();
    match result {
        Ok(()) => Ok(new),
        Err(Finding { kind, detail }) => {
            let name = format!("{kind}-{:016x}", fingerprint(&case.bytes));
            let saved = case.save(crashes, &name).map_err(|e| format!("cannot save a finding in {}: {e}", crashes.display()))?;
            Err(format!("{} finding: {kind}: {detail}\nsaved as {} (replay: --target {} --replay FILE)", target.name(), saved.display(), target.name()))
        }
    }
}

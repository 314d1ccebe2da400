//! stackbench-load: the load engine of stackbench.
//!
//! Reads like a table of contents: parse arguments → validate → file descriptors
//! for the connections → run → report.
//! Exit status: 0 the run happened (even if requests failed), 1 fatal, 2 usage.

mod cli;
mod client;
mod clock;
mod config;
mod cpu;
mod error;
mod fd_limit;
mod journey;
mod net;
mod progress;
mod protocol;
mod report;
mod run;
mod schedule;
mod stats;
mod target;
mod tls;
mod uring;
mod urls;

use clap::Parser;

use config::Config;
use error::Error;

fn main() {
    let args = match cli::Args::try_parse() {
        Ok(args) => args,
        Err(e) if !e.use_stderr() => {
            // --help / --version: print as clap renders them, exit 0.
            let _ = e.print();
            std::process::exit(0);
        }
        Err(e) => fail(&Error::Usage(first_line_of_clap_error(&e))),
    };
    if let Err(e) = main_with(args) {
        fail(&e);
    }
}

fn main_with(args: cli::Args) -> Result<(), Error> {
    if args.clock {
        return clock::serve().map_err(|e| Error::Fatal(format!("clock probe: {e}")));
    }
    if args.watch_stdin {
        clock::exit_when_stdin_closes();
    }
    let cfg = Config::from_args(args)?;
    fd_limit::ensure(&cfg)?;
    let measured = run::run(&cfg)?;
    let doc = report::build(&cfg, &measured);
    if cfg.json {
        report::json::print(&doc).map_err(|e| Error::Fatal(format!("cannot write the result: {e}")))
    } else {
        use std::io::Write;
        // A closed pipe (`| head`) is not an error worth a panic.
        let _ = std::io::stdout().lock().write_all(report::text::render(&doc).as_bytes());
        Ok(())
    }
}

/// One line on stderr and the matching exit status.
fn fail(e: &Error) -> ! {
    eprintln!("stackbench-load: {e}");
    std::process::exit(e.exit_code());
}

/// clap's errors span several lines (usage, tips); the first one says what is wrong.
fn first_line_of_clap_error(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("invalid arguments");
    line.trim_start_matches("error: ").trim().to_string()
}

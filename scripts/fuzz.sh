#!/bin/sh
# Fuzzes the load engine's response readers (HTTP/1.1, FastCGI) and its HTTP/2
# connection for SECONDS (default 60; FastCGI and HTTP/2 half of it each), on stable Rust: loadgen/fuzz is a coverage-guided fuzzer
# (LLVM SanitizerCoverage counters, see loadgen/fuzz/README.md) seeded from
# loadgen/fuzz/corpus/. A finding is saved under loadgen/fuzz/crashes/TARGET/
# and the exit status is 1. FUZZ_SEED=N repeats a run's mutations.
#   scripts/fuzz.sh [SECONDS]
set -eu
seconds=${1:-60}
case $seconds in ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;; esac
cd "$(dirname "$0")/../loadgen/fuzz"
# The same toolchain rule as scripts/setup.sh: ~/.cargo's when present.
if [ -x "$HOME/.cargo/bin/cargo" ]; then PATH="$HOME/.cargo/bin:$PATH"; fi
# Built from here so that .cargo/config.toml (--cfg fuzzing) applies. The coverage
# instrumentation (LLVM SanitizerCoverage, inline 8-bit counters: stable rustc
# codegen flags) goes to the fuzzer's crate only — it holds the engine's readers;
# not to dependencies, whose build scripts would not link with it.
cargo rustc --release --quiet --bin stackbench-load-fuzz -- \
  -Cpasses=sancov-module \
  -Cllvm-args=-sanitizer-coverage-level=3 \
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
# One core each: http for SECONDS; fastcgi then h2 for half of it each on the other
# (the smaller readers), so `make test` waits SECONDS, not three times that.
./target/release/stackbench-load-fuzz --target http --seconds "$seconds" ${FUZZ_SEED:+--seed "$FUZZ_SEED"} &
http=$!
status=0
half=$(( (seconds + 1) / 2 ))
./target/release/stackbench-load-fuzz --target fastcgi --seconds "$half" ${FUZZ_SEED:+--seed "$FUZZ_SEED"} || status=1
./target/release/stackbench-load-fuzz --target h2 --seconds "$half" ${FUZZ_SEED:+--seed "$FUZZ_SEED"} || status=1
wait $http || status=1
exit $status

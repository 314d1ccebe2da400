#!/bin/sh
# `make test` after the set-up: the engine's and netshape's tests, 40 s of fuzzing, then
# every Python test. Timings: bench/RESULTS.md, "Tests in budget (session 22)" and "(session 23)".
#   scripts/test.sh
set -eu
cd "$(dirname "$0")/.."
if [ -x "$HOME/.cargo/bin/cargo" ]; then PATH="$HOME/.cargo/bin:$PATH"; fi  # scripts/setup.sh's toolchain rule
# Bytecode written and reused: with PYTHONDONTWRITEBYTECODE set (some machines' environment
# sets it) each `python -m stackbench` a test starts compiles the package anew, 0.3 s of
# its 0.6 s start (bench/RESULTS.md, "Tests in budget (session 23)").
unset PYTHONDONTWRITEBYTECODE

# The unit tier and the simulations (computation on one core: no server, no process, no
# timer it could miss) run beside the test builds, which leave a core idle for much of
# their time (their last crates and links); nothing that measures, starts the engine or
# waits on a deadline runs beside anything.
quiet='not servers and (not slow or simulation)'
unit_log=$(mktemp)
trap 'rm -f "$unit_log"' EXIT
.venv/bin/python -m pytest -q -m "$quiet" tests >"$unit_log" 2>&1 &
unit=$!
built=0
cargo test --profile ci-test --no-run --quiet --manifest-path loadgen/Cargo.toml \
  && cargo test --profile ci-test --no-run --quiet --manifest-path netshape/Cargo.toml || built=1
unit_status=0
wait $unit || unit_status=$?
echo "== pytest -m '$quiet' (beside the builds)"
cat "$unit_log"
[ $built = 0 ] || { echo "test: the engine's or netshape's tests did not build" >&2; exit 1; }
[ $unit_status = 0 ] || exit $unit_status

# The engine's tests wait on timers (stalls, deadlines, slow peers) more than they compute:
# eight threads on two cores (bench/RESULTS.md, "Tests in budget (session 23)").
cargo test --profile ci-test --quiet --manifest-path loadgen/Cargo.toml -- --test-threads 8
cargo test --profile ci-test --quiet --manifest-path netshape/Cargo.toml
./scripts/fuzz.sh 40
# Alone on the machine: these start real servers and measure them, or wait on the clock.
.venv/bin/python -m pytest -q --durations=20 -m "not ($quiet)" tests

# The two commands of the README. Both run the idempotent set-up first, so a fresh
# Debian 12 machine needs nothing else.
PLAN ?=
DB ?= results.sqlite

.PHONY: setup bench test check clean

setup:
	./scripts/setup.sh

bench: setup
	.venv/bin/stackbench run $(PLAN) --db $(DB)

# The engine's tests wait on timers (stalls, deadlines, slow peers) more than they compute:
# four threads on two cores run them in 47 s instead of 73 (bench/RESULTS.md, "Tests in
# budget (session 20)").
test: setup
	cargo test --profile ci-test --quiet --manifest-path loadgen/Cargo.toml -- --test-threads 4
	cargo test --profile ci-test --quiet --manifest-path netshape/Cargo.toml
	./scripts/fuzz.sh 40
	.venv/bin/python -m pytest -q --durations=20 tests

# The inner loop (under a minute): the unit tier — every test that starts no server and
# takes no seconds, the docs' and the architecture's checks among them. `make test` runs
# everything.
check:
	.venv/bin/python -m pytest -q -m "not servers and not slow" tests

clean:
	rm -rf .venv loadgen/target loadgen/fuzz/target netshape/target

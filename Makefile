# The two commands of the README. Both run the idempotent set-up first, so a fresh
# Debian 12 machine needs nothing else.
PLAN ?=
DB ?= results.sqlite

.PHONY: setup bench test check clean

setup:
	./scripts/setup.sh

bench: setup
	.venv/bin/stackbench run $(PLAN) --db $(DB)

# The engine's and netshape's tests, 40 s of fuzzing, every Python test: scripts/test.sh
# says which run side by side and why.
test: setup
	./scripts/test.sh

# The inner loop (under a minute): the unit tier — every test that starts no server and
# takes no seconds, the docs' and the architecture's checks among them. `make test` runs
# everything.
check:
	.venv/bin/python -m pytest -q -m "not servers and not slow" tests

clean:
	rm -rf .venv loadgen/target loadgen/fuzz/target netshape/target

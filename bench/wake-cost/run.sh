#!/usr/bin/env bash
# What a sleep and wake-up costs the sleeping task on this machine, with idle cores as
# the system has them and held polling (bench/hold-idle, the lab's cpu_idle = "poll"),
# alternating. Why it matters: a load engine faster than its server sleeps between
# responses, and on a VM whose idle vCPUs halt each wake is charged to it (and the
# interrupt that wakes it to the server's core). bench/RESULTS.md, "Idle cores".
# Then, the same way, what a timed sleep of 5, 20 and 40 µs takes and costs (timer.c):
# the other way to wait that spares the server its wake-ups (bench/RESULTS.md, "Who
# pays for a client's wake-ups").
#
# Usage: bench/wake-cost/run.sh [ROUNDS (default 3)] [GAP_US (default 30)]
set -euo pipefail
ROUNDS=${1:-3}
GAP_US=${2:-30}
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(mktemp -d /tmp/stackbench-wake-XXXXXX)
trap 'rm -rf "$BIN"' EXIT
gcc -O2 -pthread -o "$BIN/wake" "$HERE/wake.c"
gcc -O2 -o "$BIN/timer" "$HERE/timer.c"
for round in $(seq "$ROUNDS"); do
    for idle in as-is poll; do
        printf 'round %s, idle cores %-6s ' "$round" "$idle"
        # hold-idle's banner goes; its errors (no root, a lab measuring) stay.
        "$HERE/../hold-idle" "$idle" "$BIN/wake" $((GAP_US * 1000)) 2>&1 | grep -v '^hold-idle: idle cores'
        "$HERE/../hold-idle" "$idle" taskset -c 1 "$BIN/timer" 2>&1 | grep -v '^hold-idle: idle cores'
    done
done

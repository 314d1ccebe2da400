#!/usr/bin/env bash
# Wall time of the read commands on one stored run, best of 3, with the code of TREE
# (a checkout: compare two commits with `git worktree add`).
#   bench/read-side/time.sh TREE STORE RUN
set -u
TREE=$1; DB=$2; RUN=$3
PY=${PY:-$(cd "$(dirname "$0")/../.." && pwd)/.venv/bin/python}
export PYTHONPATH=$TREE NO_COLOR=1
for cmd in "export $RUN --verdicts" "export $RUN --format json" "report $RUN -o /tmp/read-side.html" "show $RUN"; do
  best=999
  for _ in 1 2 3; do
    s=$(date +%s.%N); (cd "$TREE" && $PY -m stackbench $cmd --db "$DB" > /dev/null 2>&1); e=$(date +%s.%N)
    best=$(python3 -c "print(min($best, $e - $s))")
  done
  printf "%-32s %.2f s\n" "$cmd" "$best"
done

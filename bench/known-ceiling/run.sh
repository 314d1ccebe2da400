#!/usr/bin/env bash
# The known ceiling (plan.toml beside this): five capacity searches of php-sleep on nginx +
# 4 PHP-FPM workers (80 requests/s at most), each search's capacity and the most its met
# probes served, printed one line a search.
set -euo pipefail
cd "$(dirname "$0")/../.."
db=${DB:-/tmp/known-ceiling.sqlite}
rm -f "$db"
.venv/bin/stackbench run bench/known-ceiling/plan.toml --db "$db" >/tmp/known-ceiling.out
.venv/bin/python bench/known-ceiling/searches.py "$db"

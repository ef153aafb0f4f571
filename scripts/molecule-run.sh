#!/usr/bin/env bash
# molecule-run.sh SCENARIO... - `molecule test -s` each scenario in turn, with its time after it
# ("=== molecule <s> took <n> s", read by scripts/ci-report.sh); stops at the first red one.
# Used by `make molecule` and, for the scenarios beside `make check`, by `make test` (Makefile).
set -euo pipefail
cd "$(dirname "$0")/.."
for s in "$@"; do
  echo "=== molecule test -s $s"
  start=$(date +%s)
  .venv/bin/molecule test -s "$s"
  echo "=== molecule $s took $(( $(date +%s) - start )) s"
done

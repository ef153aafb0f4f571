#!/usr/bin/env bash
# test-phases.sh - `make test`'s schedule: everything CI runs, arranged so both cores stay busy
# (one scenario alone leaves about half of them idle: one host's tasks run one after another;
# reports/cpu.log, written by .ci/run, shows how busy they were).
#   - from the start: `make check` (lint + pytest, in the foreground), beside it the scenarios
#     that start no SGLang server and time nothing (BESIDE: the CUDA toolkit's apt path, the GPU
#     host's preflight), and the FIRST serving scenario whole: up to its converge (it builds the
#     ml_env generation), then its verifier at once, then THEN where one is named (CI names
#     ci-demo: the README's `make demo` on new hosts, beside the second scenario's last part);
#   - once `make check` and BESIDE are green: the SECOND serving scenario, whole (it gets the
#     generation as hard links), in the foreground.
# Timings are taken under each other's load: the scenarios record no speed baseline
# (molecule/shared/fleet.py), so no regression gate compares figures measured under different
# load; the absolute floors, probes and quality gate still judge every change. Each log in the
# background is shown once it is done; `make test-scenario` still runs one scenario alone.
# Usage (Makefile): test-phases.sh "BESIDE..." FIRST SECOND [THEN]
set -uo pipefail
cd "$(dirname "$0")/.."
beside=${1:?usage: $0 "BESIDE..." FIRST SECOND [THEN]} first=${2:?} second=${3:?} then=${4:-}
mkdir -p reports
rm -f reports/molecule-first.log reports/then.log

# shellcheck disable=SC2086  # BESIDE is a list of scenario names
./scripts/molecule-run.sh $beside > reports/molecule-beside-check.log 2>&1 & beside_pid=$!
(
  ./scripts/molecule-run.sh --until converge "$first" && ./scripts/molecule-run.sh --from verify "$first"
  rc=$?
  if [ -n "$then" ]; then
    # after the first scenario whatever it did, so that a red one still tells how the demo fared
    make --no-print-directory "$then" > reports/then.log 2>&1 || rc=1
  fi
  exit "$rc"
) > reports/molecule-first.log 2>&1 & first_pid=$!

kill_tree() {
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
stop_first() {
  kill_tree "$first_pid"
  wait "$first_pid" 2>/dev/null
  .venv/bin/molecule destroy -s "$first" >/dev/null 2>&1
}

rc=0; make --no-print-directory check || rc=$?
brc=0; wait "$beside_pid" || brc=$?
echo "=== beside make check: molecule $beside (rc=$brc), its log:"
cat reports/molecule-beside-check.log
if [ "$rc" -ne 0 ] || [ "$brc" -ne 0 ]; then
  echo "=== make check (rc=$rc) or the scenarios beside it (rc=$brc) failed: $first stopped, $second not started"
  stop_first
  exit 1
fi

src=0; ./scripts/molecule-run.sh "$second" || src=$?
frc=0; wait "$first_pid" || frc=$?
echo "=== beside make check and molecule $second: molecule $first whole${then:+, then make $then} (rc=$frc), its log:"
cat reports/molecule-first.log
if [ -n "$then" ]; then
  echo "=== make $then (after molecule $first), its log:"
  cat reports/then.log 2>/dev/null || echo "(it did not start)"
fi
echo "=== figures measured by the scenarios (reports/test-figures.log)"
cat reports/test-figures.log 2>/dev/null || echo "(none)"
[ "$src" -eq 0 ] && [ "$frc" -eq 0 ]

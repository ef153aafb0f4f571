#!/usr/bin/env bash
# test-phases.sh - `make test`'s schedule: everything CI runs, started as early as what it needs
# allows, so that both cores stay busy (one scenario alone leaves about half of them idle: one
# host's tasks run one after another; reports/cpu.log, written by .ci/run, shows how busy they were).
#   - from the start: `make check` (lint + pytest), the scenarios that start no SGLang server and
#     time nothing (BESIDE: the CUDA toolkit's apt path, the GPU host's preflight), and the FIRST
#     serving scenario whole: up to its converge (it builds the ml_env generation), then its
#     verifier at once, then THEN where one is named (CI names ci-demo: the README's `make demo`
#     on new hosts);
#   - once BESIDE is done and FIRST has converged (its generation complete, so that the SECOND
#     gets it as hard links instead of building its own): the SECOND serving scenario, whole, in
#     the foreground.
# Nothing stops early: a red part fails the run once every part has ended, so one run shows every
# failure. Timings are taken under each other's load: the scenarios record no speed baseline
# (molecule/shared/fleet.py), so no regression gate compares figures measured under different
# load; the absolute floors, probes and quality gate still judge every change. The logs of the
# parts in the background are shown once the SECOND is done; `make test-scenario` still runs one
# scenario alone.
# Usage (Makefile): test-phases.sh "BESIDE..." FIRST SECOND [THEN]
set -uo pipefail
cd "$(dirname "$0")/.."
beside=${1:?usage: $0 "BESIDE..." FIRST SECOND [THEN]} first=${2:?} second=${3:?} then=${4:-}
mkdir -p reports
converged=reports/.first-converged
rm -f reports/make-check.log reports/molecule-beside-check.log reports/molecule-first.log reports/then.log "$converged"

make --no-print-directory check > reports/make-check.log 2>&1 & check_pid=$!
# shellcheck disable=SC2086  # BESIDE is a list of scenario names
./scripts/molecule-run.sh $beside > reports/molecule-beside-check.log 2>&1 & beside_pid=$!
(
  ./scripts/molecule-run.sh --until converge "$first"
  rc=$?
  echo "$rc" > "$converged"
  [ "$rc" -eq 0 ] && { ./scripts/molecule-run.sh --from verify "$first" || rc=$?; }
  if [ -n "$then" ]; then
    # after the first scenario whatever it did, so that a red one still tells how the demo fared
    make --no-print-directory "$then" > reports/then.log 2>&1 || rc=1
  fi
  exit "$rc"
) > reports/molecule-first.log 2>&1 & first_pid=$!

brc=0; wait "$beside_pid" || brc=$?
while [ ! -e "$converged" ] && kill -0 "$first_pid" 2>/dev/null; do sleep 5; done
echo "=== molecule $beside done (rc=$brc), $first converged (rc=$(cat "$converged" 2>/dev/null || echo '?')): molecule $second starts"
src=0; ./scripts/molecule-run.sh "$second" || src=$?

rc=0; wait "$check_pid" || rc=$?
echo "=== make check (rc=$rc), its log:"
cat reports/make-check.log
echo "=== molecule $beside (rc=$brc), its log:"
cat reports/molecule-beside-check.log
frc=0; wait "$first_pid" || frc=$?
echo "=== molecule $first whole${then:+, then make $then} (rc=$frc), its log:"
cat reports/molecule-first.log
if [ -n "$then" ]; then
  echo "=== make $then (after molecule $first), its log:"
  cat reports/then.log 2>/dev/null || echo "(it did not start)"
fi
echo "=== figures measured by the scenarios (reports/test-figures.log)"
cat reports/test-figures.log 2>/dev/null || echo "(none)"
rm -f "$converged"
[ "$rc" -eq 0 ] && [ "$brc" -eq 0 ] && [ "$src" -eq 0 ] && [ "$frc" -eq 0 ]

#!/usr/bin/env bash
# molecule-run.sh [--until converge | --from verify] SCENARIO... - `molecule test -s` each scenario
# in turn, with its time after it ("=== molecule <s> took <n> s", read by scripts/ci-report.sh);
# stops at the first red one. Before each, its generation directory (.cache/ml-envs/<scenario>)
# gets the complete ml_env generations another scenario built (scripts/ml-envs-seed.sh).
# --until converge: destroy, syntax, create, prepare, converge only (the hosts stay up);
# --from verify: verify then destroy (the hosts destroyed whatever verify did) of a scenario
# brought up that way: `make test` runs default's verifier beside the rollout scenario.
# Used by `make molecule`, `make test-scenario` and `make test` (Makefile).
set -euo pipefail
cd "$(dirname "$0")/.."
part=all
case ${1:-} in
  --until) [ "${2:-}" = converge ] || { echo "usage: $0 [--until converge | --from verify] SCENARIO..."; exit 2; }; part=up; shift 2 ;;
  --from) [ "${2:-}" = verify ] || { echo "usage: $0 [--until converge | --from verify] SCENARIO..."; exit 2; }; part=verify; shift 2 ;;
esac
for s in "$@"; do
  ./scripts/ml-envs-seed.sh "$s" >/dev/null
  start=$(date +%s)
  case $part in
    all)
      echo "=== molecule test -s $s"
      .venv/bin/molecule test -s "$s"
      echo "=== molecule $s took $(( $(date +%s) - start )) s" ;;
    up)
      echo "=== molecule test -s $s (up to converge)"
      .venv/bin/molecule destroy -s "$s"
      .venv/bin/molecule syntax -s "$s"
      .venv/bin/molecule converge -s "$s" || { .venv/bin/molecule destroy -s "$s"; exit 1; }
      echo "=== molecule $s (up to converge) took $(( $(date +%s) - start )) s" ;;
    verify)
      echo "=== molecule test -s $s (verify)"
      rc=0; .venv/bin/molecule verify -s "$s" || rc=$?
      .venv/bin/molecule destroy -s "$s"
      [ "$rc" -eq 0 ] || exit "$rc"
      echo "=== molecule $s (verify) took $(( $(date +%s) - start )) s" ;;
  esac
done

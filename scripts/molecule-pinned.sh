#!/usr/bin/env bash
# molecule-pinned.sh SCENARIO... - `molecule test -s` of each scenario at the same time, each on a
# CPU core of its own: scenario i runs under `taskset -c i` (Molecule, Ansible and the tests on
# the controller) and molecule/shared/prepare.yml pins its containers to the same core
# (MOLECULE_CPUSET, `docker update --cpuset-cpus`). Each scenario then measures its speed gates
# on a core nothing else runs on, as it would on a machine of one core; none shares a core with
# another. Used by `make test` for the scenarios that serve (Makefile, docs/testing.md).
#
# The first scenario builds the ml_env generation the others reuse (.cache/ml-envs): the others
# start once its converge is done, or once it stopped. Each scenario's output goes to
# reports/molecule-<s>.log and is printed whole when it ends, with "=== molecule <s> took <n> s"
# (scripts/ci-report.sh); a line every minute says which are still running. More scenarios than
# cores: they run one after another (scripts/molecule-run.sh). Fails when any scenario failed.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p reports
if [ "$#" -lt 2 ] || [ "$#" -gt "$(nproc)" ]; then
  exec ./scripts/molecule-run.sh "$@"
fi

declare -A pid start rc
run() {  # run SCENARIO CORE
  local s=$1 core=$2
  echo "=== molecule test -s $s on core $core (its log: reports/molecule-$s.log)"
  start[$s]=$(date +%s)
  MOLECULE_CPUSET=$core taskset -c "$core" .venv/bin/molecule test -s "$s" > "reports/molecule-$s.log" 2>&1 &
  pid[$s]=$!
}
finish() {  # finish SCENARIO: wait for it, print its log and its time
  local s=$1
  wait "${pid[$s]}"; rc[$s]=$?
  echo "=== molecule test -s $s (its output, reports/molecule-$s.log)"
  cat "reports/molecule-$s.log"
  echo "=== molecule $s took $(( $(date +%s) - start[$s] )) s (rc=${rc[$s]})"
}
alive() {  # alive PID: the process runs (not exited, not a zombie waiting to be reaped)
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) && [ -n "$state" ] && [ "${state:0:1}" != Z ]
}
running() {  # the scenarios whose process still runs
  local s out=""
  for s in "${!pid[@]}"; do alive "${pid[$s]}" && out+=" $s"; done
  echo "$out"
}

first=$1
run "$first" 0
# the others once the first one's converge is done (its ml_env generation complete), or it stopped
until grep -q "\[$first > converge\] Executed" "reports/molecule-$first.log" 2>/dev/null \
      || ! alive "${pid[$first]}"; do
  sleep 5
done
core=1
for s in "${@:2}"; do
  run "$s" "$core"
  core=$((core + 1))
done
last=$(date +%s)
while [ -n "$(running)" ]; do
  sleep 5
  if [ $(( $(date +%s) - last )) -ge 60 ]; then
    last=$(date +%s)
    echo "=== still running:$(running) ($(date +%H:%M:%S))"
  fi
done
status=0
for s in "$@"; do
  finish "$s"
  [ "${rc[$s]}" -eq 0 ] || status=1
done
exit $status

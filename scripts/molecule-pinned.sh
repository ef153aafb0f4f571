#!/usr/bin/env bash
# molecule-pinned.sh SCENARIO... - `molecule test -s` of each scenario at the same time, each on a
# CPU core of its own: scenario i runs under `taskset -c i` (Molecule, Ansible and the tests on
# the controller) and molecule/shared/prepare.yml pins its containers to the same core
# (MOLECULE_CPUSET, `docker update --cpuset-cpus`). Each scenario then measures its speed gates
# on a core nothing else runs on, as it would on a machine of one core; none shares a core with
# another. Used by `make test` for the scenarios that serve (Makefile, docs/testing.md).
#
# The first scenario builds the ml_env generation the others reuse (.cache/ml-envs): the others
# start once a generation's record (ml-env-generation.json, written last) is newer than the
# first scenario's start, or once its converge is done (a generation already there is reused,
# not written again), or once it stopped. Each scenario's output goes to
# reports/molecule-<s>.log and is printed whole when it ends, with "=== molecule <s> took <n> s"
# (scripts/ci-report.sh); a line every minute says which are still running. More scenarios than
# cores: they run one after another (scripts/molecule-run.sh). Fails when any scenario failed.
#
# MOLECULE_PINNED_THEN (.ci/run: `make ci-demo`): a command run once the first scenario ended,
# on the core it leaves free (taskset, and LOCAL_HOSTS_CPUSET for the containers it creates),
# beside the scenarios still running; its output is printed when it ends (reports/pinned-then.log),
# and it fails the run like a scenario.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p reports
if [ "$#" -lt 2 ] || [ "$#" -gt "$(nproc)" ]; then
  ./scripts/molecule-run.sh "$@" || exit $?
  [ -z "${MOLECULE_PINNED_THEN:-}" ] || bash -c "$MOLECULE_PINNED_THEN"
  exit $?
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
stamp=reports/.molecule-pinned-start
touch "$stamp"
run "$first" 0
# the others once the first one built the ml_env generation, or its converge is done, or it stopped
until find .cache/ml-envs -mindepth 2 -maxdepth 2 -name ml-env-generation.json -newer "$stamp" 2>/dev/null | grep -q . \
      || grep -q "\[$first > converge\] Executed" "reports/molecule-$first.log" 2>/dev/null \
      || ! alive "${pid[$first]}"; do
  sleep 5
done
rm -f "$stamp"
core=1
for s in "${@:2}"; do
  run "$s" "$core"
  core=$((core + 1))
done
declare -A core_of
core=0
for s in "$@"; do core_of[$s]=$core; core=$((core + 1)); done
then_pid="" then_rc=0
last=$(date +%s)
while [ -n "$(running)" ] || { [ -n "$then_pid" ] && alive "$then_pid"; }; do
  sleep 5
  if [ -n "${MOLECULE_PINNED_THEN:-}" ] && [ -z "$then_pid" ]; then
    for s in "$@"; do
      if ! alive "${pid[$s]}"; then
        echo "=== $MOLECULE_PINNED_THEN on core ${core_of[$s]}, freed by $s (its log: reports/pinned-then.log)"
        LOCAL_HOSTS_CPUSET=${core_of[$s]} taskset -c "${core_of[$s]}" bash -c "$MOLECULE_PINNED_THEN" \
          > reports/pinned-then.log 2>&1 &
        then_pid=$!
        break
      fi
    done
  fi
  if [ $(( $(date +%s) - last )) -ge 60 ]; then
    last=$(date +%s)
    echo "=== still running:$(running)${then_pid:+ (and: $MOLECULE_PINNED_THEN)} ($(date +%H:%M:%S))"
  fi
done
if [ -n "${MOLECULE_PINNED_THEN:-}" ] && [ -z "$then_pid" ]; then  # every scenario ended at once
  echo "=== $MOLECULE_PINNED_THEN on core 0 (its log: reports/pinned-then.log)"
  LOCAL_HOSTS_CPUSET=0 taskset -c 0 bash -c "$MOLECULE_PINNED_THEN" > reports/pinned-then.log 2>&1 &
  then_pid=$!
fi
status=0
for s in "$@"; do
  finish "$s"
  [ "${rc[$s]}" -eq 0 ] || status=1
done
if [ -n "$then_pid" ]; then
  wait "$then_pid"; then_rc=$?
  echo "=== $MOLECULE_PINNED_THEN (its output, reports/pinned-then.log)"
  cat reports/pinned-then.log
  echo "=== $MOLECULE_PINNED_THEN: rc=$then_rc"
  [ "$then_rc" -eq 0 ] || status=1
fi
exit $status

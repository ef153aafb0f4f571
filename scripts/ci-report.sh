#!/usr/bin/env bash
# ci-report.sh LOG - the last lines of a CI run, where a truncated CI log still shows them:
# how long each Molecule scenario took, the failed tests, disk and memory, leftover containers.
set -uo pipefail
log=${1:?usage: ci-report.sh LOG}
root=$(cd "$(dirname "$0")/.." && pwd)
echo "=== ci report"
grep -E '^=== molecule .* took' "$log" || echo "(no Molecule scenario finished)"
grep -E '^=== make demo took' "$log" || echo "(make demo did not run: make test failed first, or it was stopped)"
grep -E '^=== molecule test -s' "$log" | tail -n 1 | sed 's/^=== /last started: /'
echo "--- the slowest Molecule tests (pytest --durations of each scenario's verifier)"
grep -E '^[0-9]+\.[0-9]+s (call|setup|teardown) +' "$log" | sort -rn | head -n 15 || true
grep -E '::[^ ]+ (FAILED|ERROR)|^(FAILED|ERROR) [^-]|CRITICAL|^make: \*\*\*' "$log" | tail -n 15 || true
echo "--- what the Molecule tests cost in CPU seconds (reports/test-cost.log, molecule/shared/cost.py)"
cost=$(dirname "$log")/test-cost.log
if [ -s "$cost" ]; then
  awk '{s = $1; c[s] += $6; k[s] += $9; n[s]++}
       END {for (s in n) printf "%s: %d tests, controller %d cpu-s, containers %d cpu-s\n", s, n[s], c[s], k[s]}' \
    "$cost" | sort
  sort -t' ' -k12,12rn "$cost" | head -n 15
else
  echo "(none)"
fi
echo "--- cores busy (reports/cpu.log: % of both, per 5 minutes from the start; idle time is room to schedule)"
awk '{busy = $3 + $4 + $5 + $8 + $9 + $10; total = busy + $6 + $7}
     NR > 1 {w = int(($1 - t0) / 300); b[w] += busy - pb; a[w] += total - pt; n = w}
     NR == 1 {t0 = $1}
     {pb = busy; pt = total}
     END {for (i = 0; i <= n; i++) if (a[i] > 0) printf "%d ", 100 * b[i] / a[i]; print ""}' \
  "$(dirname "$log")/cpu.log" 2>/dev/null || echo "(no samples)"
echo "--- disk"
df -h "$root" /var/lib/docker 2>/dev/null
du -sh "$root/.cache/wheelhouse" "$root/.cache/ml-envs" 2>/dev/null
echo "--- memory"
free -m
echo "--- containers"
docker ps -a --format '{{.Names}} {{.Status}}' 2>/dev/null || echo "(docker not answering)"

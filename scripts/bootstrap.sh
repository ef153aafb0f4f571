#!/usr/bin/env bash
# bootstrap.sh - the controller's tooling: .venv with requirements.txt, then the collections.
# Reinstalls only when requirements.txt changed (its hash is stamped into the venv).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=$ROOT/.venv
PYTHON=${PYTHON:-python3}
HASH=$(sha256sum "$ROOT/requirements.txt" | cut -c1-16)
if [ ! -f "$VENV/.req-$HASH" ]; then
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip >/dev/null
  "$VENV/bin/pip" install -q -r "$ROOT/requirements.txt"
  rm -f "$VENV"/.req-*
  touch "$VENV/.req-$HASH"
  echo "bootstrap: .venv ready"
else
  echo "bootstrap: .venv up to date"
fi
PY=$VENV/bin/python "$ROOT/scripts/collections.sh"

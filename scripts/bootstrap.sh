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
# promtool, from Debian's prometheus package: the monitoring role validates its files with it and
# its tests run it (tests/unit/test_sglang_monitoring_*.py fail without it). Where systemd runs,
# the package also starts a local prometheus service (port 9090).
if ! command -v promtool >/dev/null 2>&1; then
  echo "bootstrap: installing prometheus (promtool) from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends prometheus >/dev/null
fi
# nft, from Debian's nftables package: tests/integration/test_sglang_firewall_render.py checks the
# firewall role's rendered rulesets with `nft -c -f` (and fails without it). The package leaves its
# nftables.service disabled: installing it loads no ruleset on this machine (docs/firewall.md).
if ! command -v nft >/dev/null 2>&1 && [ ! -x /usr/sbin/nft ]; then
  echo "bootstrap: installing nftables (nft) from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends nftables >/dev/null
fi
# smg (roles/sglang_gateway) at the role's pinned version in .cache/smg-venv:
# tests/integration/test_smg_launcher.py starts the role's launcher under it (and fails without it).
SMG_VERSION=$(sed -n 's/^sglang_gateway_version: "\(.*\)"$/\1/p' "$ROOT/roles/sglang_gateway/defaults/main.yml")
SMG_VENV=$ROOT/.cache/smg-venv
if [ ! -f "$SMG_VENV/.smg-$SMG_VERSION" ]; then
  rm -rf "$SMG_VENV"
  "$PYTHON" -m venv "$SMG_VENV"
  "$SMG_VENV/bin/pip" install -q --disable-pip-version-check "smg==$SMG_VERSION"
  touch "$SMG_VENV/.smg-$SMG_VERSION"
  echo "bootstrap: .cache/smg-venv has smg $SMG_VERSION"
fi

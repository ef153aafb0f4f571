#!/usr/bin/env bash
# collections.sh - put the collections the project uses into ./collections (ansible.cfg's
# collections_path). Galaxy is unreachable here, so they are extracted from the wheel of PyPI's
# `ansible` package (pinned in requirements-collections.txt). Idempotent: skips when present.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}
DEST=$ROOT/collections
WANT="community/docker ansible/posix"
PIN=$(grep -E '^ansible==' "$ROOT/requirements-collections.txt")
STAMP="$DEST/.stamp-$PIN"
[ -f "$STAMP" ] && { echo "collections: present ($PIN)"; exit 0; }
DL=$(mktemp -d)
trap 'rm -rf "$DL"' EXIT
"$PY" -m pip download -q --no-deps -d "$DL" "$PIN"
rm -rf "$DEST/ansible_collections"
"$PY" - "$DL"/ansible-*.whl "$DEST" $WANT <<'PY'
import sys, zipfile
whl, dest, *want = sys.argv[1:]
prefixes = tuple(f"ansible_collections/{w}/" for w in want)
z = zipfile.ZipFile(whl)
names = [n for n in z.namelist() if n.startswith(prefixes)]
if not names:
    sys.exit(f"collections: none of {want} found in {whl}")
z.extractall(dest, names)
PY
rm -f "$DEST"/.stamp-*
touch "$STAMP"
echo "collections: extracted $WANT from $PIN"

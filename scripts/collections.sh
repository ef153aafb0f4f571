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
# This repository is the collection sglang.deploy (galaxy.yml). A link in ./collections makes the
# checkout itself the installed collection for ansible-playbook and Molecule (ansible.cfg
# collections_path), and a .pth file in the venv makes it importable by name
# (ansible_collections.sglang.deploy.plugins...) for pytest and scripts/, with no path set-up of
# their own. Both are rewritten on every run: a moved checkout gets them right again.
link_self() {
  mkdir -p "$DEST/ansible_collections/sglang"
  ln -sfn ../../.. "$DEST/ansible_collections/sglang/deploy"
  # relative to the venv's site-packages, so a venv reached through a link (a git worktree's)
  # imports that checkout's collection, not the one the venv was made in
  "$PY" - "$DEST" <<'PY'
import os, sys, sysconfig
site = sysconfig.get_paths()["purelib"]
with open(os.path.join(site, "sglang-deploy-collections.pth"), "w") as pth:
    pth.write(os.path.relpath(sys.argv[1], site) + "\n")
PY
}
[ -f "$STAMP" ] && { link_self; echo "collections: present ($PIN)"; exit 0; }
DL=$(mktemp -d)
trap 'rm -rf "$DL"' EXIT
"$PY" -m pip download -q --no-deps -d "$DL" "$PIN"
rm -rf "$DEST/ansible_collections/community" "$DEST/ansible_collections/ansible"
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
link_self
echo "collections: extracted $WANT from $PIN"

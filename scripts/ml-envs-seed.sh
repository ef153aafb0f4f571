#!/usr/bin/env bash
# ml-envs-seed.sh NAME - give .cache/ml-envs/NAME (the /root/ml-envs that scenario NAME's hosts,
# or the CI demo's, mount) every complete ml_env generation another directory of .cache/ml-envs
# holds, as hard links: no copy of the 6.6 GB, and no directory shared with hosts that another
# scenario, running at the same time, installs into or prunes. A generation keeps its name and
# its path inside the hosts (/root/ml-envs/<generation>), so its scripts and record stay valid;
# nothing writes into a complete generation (pip installs only into a new one; Python's byte
# code and the compile caches are written as new files or elsewhere), so the links never diverge.
# Prints the directory. Used by scripts/molecule-run.sh and `make ci-demo`.
set -euo pipefail
name=${1:?usage: ml-envs-seed.sh NAME}
cd "$(dirname "$0")/.."
root=.cache/ml-envs
mkdir -p "$root/$name"
for record in "$root"/*/*/ml-env-generation.json; do
  [ -e "$record" ] || continue
  gen=$(dirname "$record")
  dest="$root/$name/$(basename "$gen")"
  [ "$(dirname "$gen")" = "$root/$name" ] || [ -e "$dest" ] || {
    rm -rf "$dest.seeding"
    cp -al "$gen" "$dest.seeding"
    mv "$dest.seeding" "$dest"
    echo "ml-envs-seed: $dest linked from $gen" >&2
  }
done
echo "$PWD/$root/$name"

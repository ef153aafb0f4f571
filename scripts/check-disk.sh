#!/usr/bin/env bash
# check-disk.sh NEED_GIB - fail before anything is built when the filesystem of the project's
# .cache has less room than `make test` / `make demo` will fill, counting what .cache already
# holds. The big items: the wheelhouse (3.1 GiB), each ml_env generation of the local spec
# (6.6 GiB: torch's CUDA build carries 3.2 GiB of nvidia-* libraries), two of them at once in
# the default scenario's test_ml_env.py (or one per demo host, inside its container), plus container layers.
# Docker's data root is checked too when it lives on another filesystem (4 GiB there).
set -euo pipefail
need_gib=${1:?usage: check-disk.sh NEED_GIB}
root=$(cd "$(dirname "$0")/.." && pwd)
cache="$root/.cache"
mkdir -p "$cache"

gib() { echo $(( ($1 + 1048575) / 1048576 )); }  # KiB -> GiB, rounded up
free_kib() { df -Pk "$1" | awk 'NR==2 {print $4}'; }

have_kib=$(du -sk "$cache" 2>/dev/null | awk '{print $1}')
need_kib=$(( need_gib * 1048576 - have_kib ))
(( need_kib > 0 )) || need_kib=0
free=$(free_kib "$cache")
if (( free < need_kib )); then
  cat >&2 <<MSG
check-disk: $(gib "$free") GiB free on the filesystem of $cache, about $(gib "$need_kib") GiB needed
  (NEED_GIB=$need_gib GiB in all, of which .cache already holds $(gib "$have_kib") GiB).
  Rule: the wheelhouse, two ml_env generations and the container layers must fit, or pip
  fails half way with "No space left on device" and Docker stalls.
  Fix: free space on that filesystem (old clones of this repository, 'docker system prune',
  'make demo-down' for the demo hosts' 6.6 GiB layers each), then run the command again.
MSG
  exit 1
fi
echo "check-disk: $(gib "$free") GiB free for .cache (needs about $(gib "$need_kib") GiB more)"

docker_root=/var/lib/docker
if [ -d "$docker_root" ] && [ "$(df -P "$docker_root" | awk 'NR==2 {print $1}')" != "$(df -P "$cache" | awk 'NR==2 {print $1}')" ]; then
  dfree=$(free_kib "$docker_root")
  if (( dfree < 4 * 1048576 )); then
    echo "check-disk: $(gib "$dfree") GiB free under $docker_root, 4 GiB needed for the base image and container layers; free space there (docker system prune) and run again" >&2
    exit 1
  fi
fi

#!/usr/bin/env bash
# build-image.sh - build the Debian 12 + systemd base image for the local container hosts
# without a registry: debootstrap a minbase rootfs, `docker import` it, add STOPSIGNAL.
# The tag is a hash of this recipe (this file), so the image is built once and rebuilt only
# when the recipe changes. Prints the image reference on its last line.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPO=${IMAGE_REPO:-sglang-deploy/debian12-systemd}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# nftables: roles/sglang_firewall (molecule/default/tests/test_firewall.py loads its ruleset)
PACKAGES=systemd,systemd-sysv,dbus,iproute2,python3,python3-venv,python3-apt,sudo,ca-certificates,curl,procps,gnupg,nftables
TAG=$(printf '%s\n%s\n' "$PACKAGES" "$(sha256sum "$0" | cut -c1-64)" | sha256sum | cut -c1-12)
IMAGE="$REPO:$TAG"

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "build-image: $IMAGE already built" >&2
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/rootfs.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
  echo "build-image: debootstrap bookworm into $WORK (about 90 s)" >&2
  if ! debootstrap --variant=minbase --include="$PACKAGES" bookworm "$WORK/rootfs" "$MIRROR" \
      >"$WORK/debootstrap.log" 2>&1; then
    tail -n 30 "$WORK/debootstrap.log" >&2
    exit 1
  fi
  rm -rf "$WORK"/rootfs/var/cache/apt/archives/*.deb "$WORK"/rootfs/var/lib/apt/lists/* "$WORK/rootfs/etc/hostname"
  # No package lists, so the apt state must not claim a fresh cache: Ansible's apt module takes
  # the lists directory's mtime as the last `apt-get update` when no update stamp exists, and
  # with the build time there `cache_valid_time` skipped the update for an hour after every
  # build (no package found on a just-built host). The epoch says "never updated".
  rm -f "$WORK/rootfs/var/lib/apt/periodic/update-success-stamp"
  touch -d @0 "$WORK/rootfs/var/lib/apt/lists"
  : >"$WORK/rootfs/etc/machine-id"   # empty: systemd makes a fresh id per container
  # units that make no sense in a container and slow its boot
  for u in systemd-udevd.service systemd-udev-trigger.service systemd-modules-load.service \
           sys-kernel-debug.mount sys-kernel-tracing.mount getty.target console-getty.service; do
    ln -sf /dev/null "$WORK/rootfs/etc/systemd/system/$u"
  done
  tar -C "$WORK/rootfs" -c . | docker import -c 'ENV container=docker' \
    -c 'CMD ["/lib/systemd/systemd"]' - "$REPO:rootfs-$TAG" >/dev/null
  printf 'FROM %s\nSTOPSIGNAL SIGRTMIN+3\n' "$REPO:rootfs-$TAG" | docker build -q -t "$IMAGE" - >/dev/null
  docker rmi "$REPO:rootfs-$TAG" >/dev/null 2>&1 || true
fi
docker tag "$IMAGE" "$REPO:latest"
echo "$IMAGE"

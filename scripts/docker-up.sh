#!/usr/bin/env bash
# docker-up.sh - make sure a Docker engine is installed and running on this controller.
# Debian 12 machines of this kind have the docker CLI but no engine and no systemd as PID 1:
# install docker.io (and debootstrap, for the base image) from Debian, then start dockerd by hand.
# Idempotent: does nothing when `docker info` already answers.
set -euo pipefail
STATE_DIR=${STATE_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.cache}
mkdir -p "$STATE_DIR"

if docker info >/dev/null 2>&1; then
  echo "docker-up: engine already running ($(docker info --format '{{.ServerVersion}}'))"
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  echo "docker-up: installing docker.io and debootstrap from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q docker.io debootstrap >/dev/null
fi

if command -v systemctl >/dev/null 2>&1 && [ "$(cat /proc/1/comm)" = systemd ]; then
  systemctl start docker
else
  echo "docker-up: starting dockerd (no systemd as PID 1 here), log $STATE_DIR/dockerd.log"
  setsid nohup /usr/sbin/dockerd --storage-driver=overlay2 --mtu=1400 \
    >"$STATE_DIR/dockerd.log" 2>&1 </dev/null &
  echo $! >"$STATE_DIR/dockerd.pid"
fi
for _ in $(seq 1 120); do
  docker info >/dev/null 2>&1 && { echo "docker-up: engine $(docker info --format '{{.ServerVersion}}') ready"; exit 0; }
  sleep 0.5
done
echo "docker-up: dockerd did not come up; last log lines:" >&2
tail -n 30 "$STATE_DIR/dockerd.log" >&2 || true
exit 1

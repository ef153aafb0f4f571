"""Observations of a rolling deploy that the rollout scenario's tests assert on: starts in the
journal and the server's start log, the gateway's view of a rollout, the model revisions on a
host."""

from __future__ import annotations

import calendar
import json
import time

from ansible_collections.sglang.deploy.molecule.shared.fleet import sh


def starts_since(host, epoch):
    """How many times systemd started the unit since `epoch` (seconds, host clock)."""
    out = sh(host, f"journalctl -u sglang --since @{int(epoch)} --no-pager -o cat | grep -c '^Started ' || true")
    return int(out or 0)


def start_records(host):
    """The start log's records of the generation `host` runs now, oldest first, and that generation."""
    gen = sh(host, "basename $(readlink -f /root/ml-env)")
    records = [json.loads(line) for line in sh(host, "cat /var/lib/sglang-deploy/starts/sglang.jsonl").splitlines()]
    return gen, [r for r in records if r["generation"] == gen]


def journal_starts(host):
    """The host-clock seconds of each 'Started sglang.service' still in the journal."""
    out = sh(host, "journalctl -u sglang --no-pager -o short-unix | grep 'systemd\\[1\\]: Started sglang.service' || true")
    return [float(line.split()[0]) for line in out.splitlines()]


def time_of(record):
    """The host-clock seconds of a start record's `at` (UTC, whole seconds)."""
    return calendar.timegm(time.strptime(record["at"], "%Y-%m-%dT%H:%M:%SZ"))


def assert_gateway_served_throughout(gateway, final, floor):
    """Every host is back in the gateway, healthy; every request through it answered in full;
    the gateway never listed fewer than `floor` healthy workers."""
    assert final == {u: True for u in gateway.workers.values()}, f"not every host is back in the gateway: {final}"
    failed = gateway.failed()
    assert gateway.requests and gateway.long and not failed, (
        f"{len(failed)} of {len(gateway.requests) + len(gateway.long)} requests through the gateway failed "
        f"or came back short: {failed[:5]}")
    assert gateway.listings, "no listing of the gateway was recorded"
    assert gateway.fewest_healthy() >= floor, (
        f"the gateway listed only {gateway.fewest_healthy()} healthy worker(s) at one point; the floor is {floor}")


def revisions(host):
    return sorted(sh(host, "ls /data/models/tiny-qwen2").split())

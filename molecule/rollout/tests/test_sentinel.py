"""The serving sentinel (roles/sglang_watchdog; docs/operations.md, "Wrong answers"): a host that
starts answering wrong while it serves leaves every gateway by itself.

A host is deployed with the batched-decode fault of tests/faults/batched_decode on its server's
PYTHONPATH, switched off (SGLANG_TEST_FAULT_FILE names a file that does not exist): every gate
passes and its release records its quality reference. Then, with clients sending through both
gateways, the fault is switched on at run time, no restart: the file written, with a band of
decode batch sizes ("2-8"). The file lies in the unit's own /tmp (PrivateTmp=), so the restart
the watchdog issues clears it: the host must be out of both gateways within a sentinel interval
and an ask, the incident must name the prompt and a batch size within the band, and the host must
come back by itself, the incident saying the restart cleared it. Ends on the inventory's
configuration (conftest.py's baseline).
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from ansible_collections.sglang.deploy.molecule.shared.fleet import (ROOT, figure, local_vars, playbook, sh, unit_state, wait,
                                                                 watchdog_state)
from ansible_collections.sglang.deploy.molecule.shared.gateway import GatewayTraffic, wait_for_listing, worker_url

testinfra_hosts = ["molecule-rollout-1"]

HOSTS = ["molecule-rollout-1", "molecule-rollout-2", "molecule-rollout-3"]
HOST = HOSTS[1]
EVERY_HOST_HEALTHY = {worker_url(h): True for h in HOSTS}
FAULT_DIR = "/usr/local/lib/sglang-test-fault"
FAULT_FILE = "/tmp/sglang-test-fault"  # as the server sees it: in its unit's PrivateTmp=
BAND = (2, 8)
FAULT = {"sglang_server_env": dict(local_vars("sglang")["sglang_server_env"], PYTHONPATH=FAULT_DIR,
                                   SGLANG_TEST_FAULT_FILE=FAULT_FILE)}
# the local inventory's sentinel runs every 20 s (inventories/local/group_vars/all/watchdog.yml);
# a watchdog run every 5 s; two asks of a few seconds each on the shared CPU: out within the
# interval, a run's period and 35 s for the two asks and the removal
SENTINEL_S = int(local_vars("watchdog")["sglang_watchdog_sentinel_interval_sec"])
OUT_WITHIN_S = SENTINEL_S + 5 + 35
BACK_WITHIN_S = 180


def private_tmp(host):
    """The server unit's own /tmp as the host sees it (PrivateTmp=)."""
    return sh(host, "ls -d /tmp/systemd-private-*-sglang.service-*/tmp").split()[0]


def sentinel(host):
    return watchdog_state(host).get("sentinel") or {}


@pytest.fixture(name="fault_deployed")
def fixture_fault_deployed(baseline):
    """HOST deployed with the fault on its path and off; the inventory's configuration after."""
    sh(HOST, f"mkdir -p {FAULT_DIR}")
    subprocess.run(["docker", "cp", str(ROOT / "tests/faults/batched_decode/sitecustomize.py"),
                    f"{HOST}:{FAULT_DIR}/sitecustomize.py"], check=True)
    try:
        playbook("deploy.yml", FAULT, args=("-l", HOST))
        yield baseline
    finally:
        sh(HOST, f"rm -f /tmp/systemd-private-*-sglang.service-*/tmp/{FAULT_FILE.rsplit('/', 1)[1]}")
        baseline.ensure_baseline()
        sh(HOST, f"rm -rf {FAULT_DIR}")


def test_a_host_that_starts_answering_wrong_leaves_both_gateways_and_a_restart_brings_it_back(fault_deployed):
    assert f'SGLANG_TEST_FAULT_FILE="{FAULT_FILE}"' in sh(HOST, "cat /etc/sglang/sglang.env")
    config = json.loads(sh(HOST, "cat /etc/sglang-watchdog/config.json"))
    assert config["sentinel_interval"] == SENTINEL_S and config["sentinel_prompts"] >= 2
    before = sentinel(HOST)
    runs, wrong = before.get("runs_total", 0), before.get("wrong_total", 0)
    pid = unit_state(HOST)[0]
    with GatewayTraffic(HOSTS) as traffic:
        wait_for_listing(traffic, "every host healthy", lambda seen: seen == EVERY_HOST_HEALTHY)
        # no false alarm: the fault is off, the clients' traffic shares the sentinel's batches
        wait("two right sentinel runs under client traffic",
             lambda: sentinel(HOST).get("runs_total", 0) >= runs + 2, 3 * SENTINEL_S + 30, period=1)
        right = sentinel(HOST)
        assert right["wrong_total"] == wrong and right["last_ok"], right
        onset = time.monotonic()
        sh(HOST, f"echo {BAND[0]}-{BAND[1]} > {private_tmp(HOST)}/{FAULT_FILE.rsplit('/', 1)[1]}")
        out_s = wait("the wrong host out of both gateways", lambda: all(
            worker_url(HOST) not in listed for listed in traffic.listings_now().values()), OUT_WITHIN_S)
        left_at = time.monotonic()
        restart_s = wait("a new server process", lambda: unit_state(HOST)[0] not in (0, pid), 60)
        back_s = wait("the host back in both gateways", lambda: traffic.listing() == EVERY_HOST_HEALTHY,
                      BACK_WITHIN_S, period=1)
    state = watchdog_state(HOST)
    incident = json.loads(sh(HOST, f"cat {state['sentinel']['incident']}"))
    first = incident["wrong"]
    assert BAND[0] <= first["batch"] <= BAND[1], incident["summary"]
    assert first["prompt"] and first["expected"]["id"] != first["got"]["id"], first
    assert incident["release"] and incident["metrics"] and incident["journal"], sorted(incident)
    assert incident["after_restart"]["outcome"] == "cleared by the restart", incident.get("after_restart")
    assert not state["out"] and not state["quarantine"] and not state["given_up"], state
    assert state["sentinel"]["wrong_total"] == wrong + 1
    text = sh(HOST, "cat /var/lib/prometheus/node-exporter/sglang_watchdog.prom")
    assert f'sglang_watchdog_sentinel_wrong_total{{service="sglang"}} {wrong + 1}' in text
    # the clients' answers through the gateways between the onset and the removal
    window = [(t, ok) for t, ok, _ in traffic.requests if onset <= t <= left_at]
    wrong_answers = sum(1 for _, ok in window if not ok)
    figure(f"serving sentinel ({SENTINEL_S} s interval, {config['sentinel_prompts']} prompts), the batched-decode "
           f"fault switched on at run time for decode batches {BAND[0]}-{BAND[1]}: out of both gateways {out_s:.0f} s "
           f"after the onset, new process {out_s + restart_s:.0f} s, back in both gateways (the restart cleared it) "
           f"{out_s + restart_s + back_s:.0f} s; incident: {incident['summary']}; clients through the gateways "
           f"between onset and removal: {wrong_answers} of {len(window)} answers not right; before the onset "
           f"{right['runs_total'] - runs} sentinel runs under client traffic, 0 wrong, max |d logprob| "
           f"{(right.get('last_verdict') or {}).get('max_abs')}")

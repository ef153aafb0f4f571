"""The serving sentinel (roles/sglang_watchdog; docs/operations.md, "Wrong answers"): a host that
starts answering wrong while it serves leaves every gateway by itself.

HOST serves with the batched-decode fault of tests/faults/batched_decode on its server's
PYTHONPATH, switched off (SGLANG_TEST_FAULT_FILE names two files that do not exist): the scenario's
inventory puts it there (molecule/rollout/host_vars/molecule-rollout-2.yml, converge.yml), so
every gate passed and its release recorded its quality reference, and the test needs no deploy
before or after. With clients sending through both gateways, the fault is switched on at run
time, no restart: the file written, with a band of decode batch sizes ("2-8"). The file lies in
the unit's own /tmp (PrivateTmp=), so the restart the watchdog issues clears it: the host must be
out of both gateways within a sentinel interval and an ask, the incident must name the prompt and
a batch size within the band, and the host must come back by itself, the incident saying the
restart cleared it. A second test writes a file the restart does not clear: given up, out, alerted.
Each starts on any configuration deployed on purpose (conftest.py's known_good: no restore of the
inventory's flags first) and leaves every host on the unit it found.
"""

from __future__ import annotations

import json
import time

import pytest

from ansible_collections.sglang.deploy.molecule.shared.fleet import figure, ip_of, local_vars, sh, unit_state, wait, watchdog_state
from ansible_collections.sglang.deploy.molecule.shared.gateway import GATEWAYS, GatewayTraffic, wait_for_listing, worker_url
from ansible_collections.sglang.deploy.molecule.shared.prometheus import Prometheus, install_node_exporter, wait_for

testinfra_hosts = ["molecule-rollout-1"]

HOSTS = ["molecule-rollout-1", "molecule-rollout-2", "molecule-rollout-3"]
HOST = HOSTS[1]
EVERY_HOST_HEALTHY = {worker_url(h): True for h in HOSTS}
FAULT_DIR = "/usr/local/lib/sglang-test-fault"
FAULT_FILE = "/tmp/sglang-test-fault"  # as the server sees it: in its unit's PrivateTmp=
PERSISTENT_FILE = f"{FAULT_DIR}/on"  # outside PrivateTmp=: the restart does not clear it
BAND = (2, 8)
# the host's environment: the local inventory's, and the fault on its path, switched off
FAULT_ENV = dict(local_vars("sglang")["sglang_server_env"], PYTHONPATH=FAULT_DIR,
                 SGLANG_TEST_FAULT_FILE=f"{FAULT_FILE}:{PERSISTENT_FILE}")
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


@pytest.fixture(name="fault_off")
def fixture_fault_off(known_good):
    """Every host serving a configuration deployed on purpose (HOST's environment, with the fault
    on its path, comes from the inventory whatever flags were rolled last), the fault switched
    off; after: both fault files gone, the watchdog reset (a host it gave up on serves again) and
    every host back in both gateways, on the unit it had before (the watchdog only restarts)."""
    units = known_good.units()
    try:
        yield known_good
    finally:
        sh(HOST, f"rm -f /tmp/systemd-private-*-sglang.service-*/tmp/{FAULT_FILE.rsplit('/', 1)[1]} {PERSISTENT_FILE}")
        sh(HOST, "sglang-watchdog reset")
        with GatewayTraffic(HOSTS) as traffic:
            wait_for_listing(traffic, "every host back in both gateways", lambda seen: seen == EVERY_HOST_HEALTHY)
        assert known_good.units() == units


def test_a_host_that_starts_answering_wrong_leaves_both_gateways_and_a_restart_brings_it_back(fault_off):
    env = sh(HOST, "cat /etc/sglang/sglang.env")
    assert all(f'{name}="{value}"' in env for name, value in FAULT_ENV.items()), env
    assert sh(HOST, f"test -f {FAULT_DIR}/sitecustomize.py && echo yes") == "yes"
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
        out_s = wait("the wrong host out of both gateways", lambda: traffic.listed_nowhere(HOST), OUT_WITHIN_S)
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


def test_a_fault_that_survives_the_restart_leaves_the_host_out_given_up_and_alerted_with_one_restart(fault_off):
    """The fault switched on in a file the restart does not clear: wrong twice, out of both
    gateways, one restart; wrong twice again on the new server: given up (wrong_answers), the host
    stays out, SGLangWatchdogGaveUp and SGLangWrongAnswers fire in a real Prometheus (the host's
    node exporter, installed as in test_healing.py), and nothing restarts it again."""
    install_node_exporter(HOST)
    before = watchdog_state(HOST)
    restarts = before.get("restarts_total", 0)
    pid = unit_state(HOST)[0]
    monitoring = {"sglang_monitoring_node_exporter_targets": [{"target": f"{ip_of(HOST)}:9100", "host": HOST}]}
    with Prometheus(HOSTS + GATEWAYS, monitoring) as prom, GatewayTraffic(HOSTS) as traffic:
        wait_for_listing(traffic, "every host healthy", lambda seen: seen == EVERY_HOST_HEALTHY)
        wait_for("the watchdog's figures in Prometheus", lambda: prom.api(
            "query", query=f'sglang_watchdog_healthy{{host="{HOST}"}} == 1')["result"], 60)
        sh(HOST, f"echo {BAND[0]}-{BAND[1]} > {PERSISTENT_FILE}")
        out_s = wait("the wrong host out of both gateways", lambda: traffic.listed_nowhere(HOST), OUT_WITHIN_S)
        restart_s = wait("a new server process", lambda: unit_state(HOST)[0] not in (0, pid), 60)
        new_pid = unit_state(HOST)[0]
        gave_up_s = wait("given up: still wrong after the restart",
                         lambda: (watchdog_state(HOST).get("given_up") or {}).get("reason") == "wrong_answers",
                         BACK_WITHIN_S, period=1)
        _, firing_s = wait_for("SGLangWatchdogGaveUp firing", lambda: [
            a for a in prom.alerts("SGLangWatchdogGaveUp", host=HOST, reason="wrong_answers") if a["state"] == "firing"],
            60)
        assert [a for a in prom.alerts("SGLangWrongAnswers", host=HOST) if a["state"] == "firing"]
        # nothing loops: two more sentinel intervals, the same process, still out of both gateways
        time.sleep(2 * SENTINEL_S)  # what is watched is that nothing happens over this time
        assert unit_state(HOST)[0] == new_pid
        assert traffic.listed_nowhere(HOST)
    state = watchdog_state(HOST)
    assert state["out"] and state["given_up"]["reason"] == "wrong_answers", state
    # one restart, and the give-up is the sentinel's own (not the restart limit's)
    assert state["restarts_total"] == restarts + 1, state
    assert state["given_up"]["detail"].startswith("still wrong after the restart"), state["given_up"]
    text = sh(HOST, "cat /var/lib/prometheus/node-exporter/sglang_watchdog.prom")
    assert 'sglang_watchdog_given_up{' in text and 'reason="wrong_answers"' in text, text
    figure(f"serving sentinel, a fault that survives the restart (decode batches {BAND[0]}-{BAND[1]}): out of both "
           f"gateways {out_s:.0f} s after the onset, one restart {out_s + restart_s:.0f} s, given up (still wrong "
           f"after the restart) {out_s + restart_s + gave_up_s:.0f} s, SGLangWatchdogGaveUp firing {firing_s:.0f} s "
           f"later; {2 * SENTINEL_S} s after that still out, no second restart ({state['given_up']['detail'][:120]})")

"""The fleet heals itself between changes, with nobody running Ansible (roles/sglang_watchdog,
docs/operations.md "Healing"): each host's liveness watchdog (a timer, every 5 s on the local
inventory, a restart after 3 failed probes in a row while no token moved) takes a hung server out
of both gateways, restarts it and puts it back once it generates; a held host (a rollout's turn)
is left alone; a gateway that restarted and forgot its workers gets them back; a long generation
is not a hang. Starts from every host serving a configuration deployed on purpose (conftest.py:
`known_good`) and leaves every host serving and listed in both gateways.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.request

import pytest

from ansible_collections.sglang.deploy.molecule.shared.fleet import (ask, figure, ip_of, local_vars, sh, unit_state, unit_text, wait,
                                                                     watchdog_state)
from ansible_collections.sglang.deploy.molecule.shared.gateway import GATEWAYS, GatewayTraffic, wait_for_listing, worker_url
from ansible_collections.sglang.deploy.molecule.shared.prometheus import Prometheus, install_node_exporter, wait_for

testinfra_hosts = ["molecule-rollout-1"]

HOSTS = ["molecule-rollout-1", "molecule-rollout-2", "molecule-rollout-3"]
HUNG = HOSTS[2]
EVERY_HOST_HEALTHY = {worker_url(h): True for h in HOSTS}
# the local inventory's watchdog (inventories/local/group_vars/all/watchdog.yml): a run every 5 s,
# or as long as a run on a hung server takes (its probe's timeout, then /metrics' as long), 3
# failures, and before the first of them at most one sentinel ask that the hang left waiting for
# its timeout; removal from both gateways within 10 s more. A warm start takes about 20 s
# (docs/figures.md): back within 120 s
WATCHDOG = local_vars("watchdog")
OUT_WITHIN_S = (WATCHDOG["sglang_watchdog_sentinel_timeout_sec"] + WATCHDOG["sglang_watchdog_failure_threshold"]
                * (WATCHDOG["sglang_watchdog_interval_sec"] + 2 * WATCHDOG["sglang_watchdog_probe_timeout_sec"]) + 10)
BACK_WITHIN_S = 120


def main_pid(host):
    return unit_state(host)[0]


@pytest.mark.usefixtures("known_good")
def test_a_hung_server_leaves_both_gateways_is_restarted_and_rejoins_while_clients_are_served():
    """kill -STOP of the server's main process (HTTP and tokenizer: the unit stays `active
    (running)` and systemd restarts nothing). Requests through the gateways go on; only those
    sent before the host left the gateways may fail (in flight on the hung server). The
    watchdog's figures reach a real Prometheus through Debian's node exporter (installed on the
    host here, as playbooks/monitoring.yml does): SGLangWatchdogRestarted fires, then resolves
    once its window (shortened to 1m) has passed."""
    assert sh(HUNG, "systemctl is-active sglang-watchdog.timer") == "active"
    install_node_exporter(HUNG)
    before = watchdog_state(HUNG).get("restarts_total", 0)
    pid = main_pid(HUNG)
    monitoring = {"sglang_monitoring_node_exporter_targets": [{"target": f"{ip_of(HUNG)}:9100", "host": HUNG}],
                  "sglang_monitoring_watchdog_restart_window": "1m"}
    with Prometheus(HOSTS + GATEWAYS, monitoring) as prom, GatewayTraffic(HOSTS) as traffic:
        wait_for_listing(traffic, "every host healthy", lambda seen: seen == EVERY_HOST_HEALTHY)
        wait_for("the watchdog's figures in Prometheus", lambda: prom.api(
            "query", query=f'sglang_watchdog_healthy{{host="{HUNG}"}} == 1')["result"], 60)
        hung_at = time.monotonic()
        sh(HUNG, f"kill -STOP {pid}")
        out_s = wait("the hung host out of both gateways", lambda: traffic.listed_nowhere(HUNG), OUT_WITHIN_S)
        left_at = time.monotonic()
        restart_s = wait("a new server process", lambda: main_pid(HUNG) not in (0, pid), 60)
        # the alert fires for the window (1m) after the restart: watched from the restart on, not
        # once the host is back (a start that takes most of a minute on shared cores ends it)
        _, firing_s = wait_for("SGLangWatchdogRestarted firing", lambda: [
            a for a in prom.alerts("SGLangWatchdogRestarted", host=HUNG) if a["state"] == "firing"], 60)
        fired_s = out_s + restart_s + firing_s
        back_s = firing_s + wait("the host back in both gateways",
                                 lambda: traffic.listing() == EVERY_HOST_HEALTHY, BACK_WITHIN_S, period=1)
        _, resolved_s = wait_for("SGLangWatchdogRestarted resolved", lambda: not prom.alerts(
            "SGLangWatchdogRestarted", host=HUNG), 180)
    state = watchdog_state(HUNG)
    assert state["restarts_total"] == before + 1, state
    assert not state["out"] and not state["given_up"], state
    incident = "/var/lib/sglang-watchdog/incidents/" + sh(HUNG, "ls /var/lib/sglang-watchdog/incidents/ | tail -n 1")
    # what the operator reads afterwards: the hung process's own last lines, the kernel's Xid lines
    assert f"[{pid}]:" in sh(HUNG, f"cat {incident}/journal.txt"), sh(HUNG, f"tail -n 5 {incident}/journal.txt")
    assert {"journal.txt", "kernel-xid.txt", "state.json"} <= set(sh(HUNG, f"ls {incident}").split())
    failed = traffic.failed()
    sent_late = [(t, err) for t, ok, err in traffic.requests if not ok and t > left_at]
    cut_late = [(s, err) for s, _, _, err in traffic.long if err and s > left_at]
    assert not sent_late and not cut_late, f"requests sent after the hung host left the gateways failed: {sent_late + cut_late}"
    in_flight = [(round(t - hung_at, 1), err) for t, err in failed]
    figure(f"liveness watchdog (5 s runs, 3 failures), kill -STOP of the server: out of both gateways {out_s:.0f} s "
           f"after the hang, new process {out_s + restart_s:.0f} s, back in both gateways {out_s + restart_s + back_s:.0f} s; "
           f"SGLangWatchdogRestarted firing {fired_s:.0f} s after the hang, resolved {resolved_s:.0f} s later (window 1m); "
           f"through the gateways {len(traffic.requests)} questions and {len(traffic.long)} long generations, "
           f"{len(failed)} failed, all sent before the host left (in flight on the hung server): {in_flight[:5]}")


@pytest.mark.usefixtures("known_good")
def test_a_gateway_that_restarted_gets_every_worker_back_without_ansible():
    """smg keeps no worker across its restart (roles/sglang_gateway/README.md): each host's
    watchdog finds itself missing and registers again, with its key."""
    gateway = GATEWAYS[0]
    sh(gateway, "systemctl restart smg")
    with GatewayTraffic(HOSTS) as traffic:
        took = wait("every worker back in the restarted gateway", lambda: _listing_ok(traffic), 90, period=1)
    figure(f"a gateway restart (smg forgets its workers): every host listed healthy again {took:.0f} s later, "
           "registered by its own watchdog")


def _listing_ok(traffic):
    try:
        return traffic.listing() == EVERY_HOST_HEALTHY
    except OSError:
        return False


def _long_generations(host, took, busy):
    """Three waves of 8 generations of 1500 tokens at once on `host`: the server busy for several
    runs of its watchdog. Each one's seconds go to `took`, the three waves' to `busy`."""
    body = json.dumps({"model": "tiny-qwen2", "temperature": 0, "max_tokens": 1500, "ignore_eos": True,
                       "messages": [{"role": "user", "content": "Count slowly."}]}).encode()

    def generate():
        req = urllib.request.Request(f"http://{ip_of(host)}:30000/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        start = time.monotonic()
        with urllib.request.urlopen(req, timeout=300) as resp:
            resp.read()
        took.append(time.monotonic() - start)

    start = time.monotonic()
    for _ in range(3):
        threads = [threading.Thread(target=generate) for _ in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    busy.append(time.monotonic() - start)


@pytest.mark.usefixtures("known_good")
def test_a_held_host_is_left_alone_even_when_hung_and_a_long_generation_is_not_a_hang():
    """Two hosts at once. A rollout's turn holds the watchdog (roles/sglang_rollout, tasks_from:
    hold): a server stopped during it is neither restarted nor taken out by the watchdog. On
    another host, generations that keep the server busy for several watchdog runs: every probe is
    answered or sees tokens move, so nothing is counted, nothing restarted."""
    held, busy_host = HOSTS[1], HOSTS[0]
    pid, before = main_pid(held), watchdog_state(held).get("restarts_total", 0)
    busy_pid, busy_before = main_pid(busy_host), watchdog_state(busy_host).get("restarts_total", 0)
    since = sh(busy_host, "date +%s")
    took, waves = [], []
    generations = threading.Thread(target=_long_generations, args=(busy_host, took, waves))
    generations.start()
    sh(held, "sglang-watchdog hold --for 0 --reason test")
    try:
        sh(held, f"kill -STOP {pid}")
        time.sleep(30)  # six runs: twice the failures that restart an unheld host
        assert main_pid(held) == pid
        assert watchdog_state(held).get("restarts_total", 0) == before
        assert 'sglang_watchdog_held{service="sglang"} 1' in sh(held, "cat /var/lib/prometheus/node-exporter/sglang_watchdog.prom")
    finally:
        sh(held, f"kill -CONT {pid}")
        assert sh(held, "sglang-watchdog release") == "released"
        generations.join()
    busy = waves[0] if waves else 0.0
    # stopped 30 s, past the gateways' failure window (3 checks 10 s apart): smg keeps probing a
    # worker it lists unhealthy (roles/sglang_gateway/README.md), so it serves again by itself
    with GatewayTraffic(HOSTS) as traffic:
        resumed = time.monotonic()
        wait_for_listing(traffic, "every host healthy", lambda seen: seen == EVERY_HOST_HEALTHY, timeout=BACK_WITHIN_S)
    figure(f"a held host stopped 30 s (kill -STOP): not restarted by its watchdog; listed healthy in both gateways "
           f"{time.monotonic() - resumed:.0f} s after it resumed, without Ansible")
    assert len(took) == 24 and busy > 3 * 5, f"the generations did not keep the server busy for three runs: {busy:.1f} s"
    assert main_pid(busy_host) == busy_pid and watchdog_state(busy_host).get("restarts_total", 0) == busy_before
    journal = sh(busy_host, f"journalctl -u sglang-watchdog --since @{since} --no-pager -o cat")
    assert "probe failed" not in journal, journal[-2000:]
    figure(f"24 generations of 1500 tokens on one host, 8 at once, busy {busy:.0f} s: no watchdog probe counted a failure")


# the orphan case (docs/operations.md, "The server's supervisor"): a --dp-size 2 server under the
# real unit, through a runtime drop-in (its ExecStart with --dp-size 2, one core per replica as
# the canary sweep's "dp 2"), on a host whose watchdog is held so systemd alone acts
ORPHAN_HOST = HOSTS[0]
DP2_DROP_IN = "/run/systemd/system/sglang.service.d/orphan-test.conf"
DP2_ENV = "/run/sglang-orphan-test.env"


def _exec_start(host):
    """The unit's ExecStart= value, its continuation lines joined."""
    value, lines = None, sh(host, "systemctl cat sglang").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("ExecStart="):
            value, j = line[len("ExecStart="):], i
            while value.endswith("\\"):
                j += 1
                value = value[:-1] + " " + lines[j].strip()
            return value
    raise AssertionError("no ExecStart= in the sglang unit")


def _write(host, path, text):
    sh(host, f"mkdir -p {path.rsplit('/', 1)[0]} && echo {base64.b64encode(text.encode()).decode()} | base64 -d > {path}")


def _answers(host):
    try:
        return ask(ip_of(host), timeout=15) == "OK"
    except OSError:
        return False


def _restarts(host):
    return int(sh(host, "systemctl show sglang -p NRestarts --value"))


@pytest.mark.usefixtures("known_good")
def test_an_orphaned_rank_never_signals_pid_1():
    """The ranks of a --dp-size 2 server orphaned: their parent, SGLang's DP controller (which
    SGLang's subprocess watchdog calls scheduler_0), killed with SIGKILL. Both ranks are adopted
    and reaped by the unit's subreaper, not by PID 1; SGLang's watchdog ends the server, systemd
    (PID 1, untouched: the same process, running, no crash) restarts it once (Restart=on-failure,
    NRestarts + 1) and it serves again. The drop-in is removed before the kill, so the restart
    brings the host back on its own unit. (A rank alone killed is not this case: measured on
    SGLang 0.5.23, the DP controller keeps its zombie and nothing ends.)"""
    host = ORPHAN_HOST
    pid1_start = sh(host, "cut -d' ' -f22 /proc/1/stat")
    since = sh(host, "date +%s")
    unit_before = unit_text(host)
    sh(host, "sglang-watchdog hold --for 0 --reason orphan-test")
    try:
        _write(host, DP2_ENV, "SGLANG_CPU_OMP_THREADS_BIND=0|1\n")
        _write(host, DP2_DROP_IN, f"[Service]\nEnvironmentFile={DP2_ENV}\nExecStart=\nExecStart={_exec_start(host)} --dp-size 2\n")
        sh(host, "systemctl daemon-reload && systemctl restart sglang")
        wait("the --dp-size 2 server answering", lambda: _answers(host), 300, period=2)
        ranks = sh(host, "pgrep -f '^sglang::scheduler_DP'").split()
        controller = sh(host, "pgrep -f '^sglang::data_parallel_controller'")
        assert len(ranks) == 2 and all(sh(host, f"ps -o ppid= -p {r}") == controller for r in ranks), ranks
        # the next start is the host's own unit again; the running server is left as it is
        sh(host, f"rm -f {DP2_DROP_IN} {DP2_ENV} && systemctl daemon-reload")
        assert unit_text(host) == unit_before
        restarts, server = _restarts(host), main_pid(host)
        sh(host, f"kill -KILL {controller}")
        restart_s = wait("systemd restarting the server", lambda: _restarts(host) == restarts + 1, 180)
        assert main_pid(host) not in (0, server)
        back_s = wait("the restarted server answering", lambda: _answers(host), 300, period=2)
    finally:
        sh(host, f"rm -f {DP2_DROP_IN} {DP2_ENV} && systemctl daemon-reload")
        if sh(host, "pgrep -f '^sglang::data_parallel_controller' || true"):  # a failure left it serving dp 2
            sh(host, "systemctl restart sglang")
        sh(host, "sglang-watchdog release")
    # PID 1 is the same systemd, running, and was not crashed by a SIGQUIT
    assert sh(host, "cat /proc/1/comm") == "systemd" and sh(host, "cut -d' ' -f22 /proc/1/stat") == pid1_start
    assert sh(host, "systemctl is-system-running || true") in ("running", "degraded")
    pid1_journal = sh(host, f"journalctl _PID=1 --since @{since} --no-pager -o cat")
    assert "Caught <QUIT>" not in pid1_journal and "Freezing execution" not in pid1_journal
    journal = sh(host, f"journalctl -u sglang --since @{since} --no-pager -o cat")
    reaper = [line for line in journal.splitlines() if "sglang-subreaper:" in line]
    assert any(f"the server ({server}) ended" in line for line in reaper), journal[-3000:]
    for rank in ranks:  # adopted (only a parent reaps) by the subreaper, never by PID 1
        assert any(f"reaped orphan {rank} " in line for line in reaper), reaper
    assert _restarts(host) == restarts + 1 and sh(host, "systemctl is-active sglang") == "active"
    figure(f"orphan case: restarted in {restart_s:.0f} s, answering {back_s:.0f} s later; subreaper: "
           + " | ".join(line.split("sglang-subreaper: ", 1)[1] for line in reaper))

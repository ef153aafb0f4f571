"""Monitoring of the rollout's three hosts with a real Prometheus (Debian's package, started on
the controller for the test): the scrape jobs and alert rules are the ones that
playbooks/monitoring.yml writes in write-only mode, as an operator would copy them into an
existing Prometheus. Every SGLang target is up and has `sglang:` series; a stopped server fires
SGLangDown within the rule's `for:` (shortened here) and the alert resolves once the server is
back. Starts from every host serving a configuration deployed on purpose (conftest.py:
`known_good`), so it runs alone or in any order, and leaves every host serving.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import pytest
import yaml

from ansible_collections.sglang.deploy.molecule.shared.fleet import ask, figure, ip_of, playbook, scratch, sh  # noqa: E402
from ansible_collections.sglang.deploy.molecule.shared.gateway import GATEWAYS

testinfra_hosts = ["molecule-rollout-1"]

HOSTS = ["molecule-rollout-1", "molecule-rollout-2", "molecule-rollout-3"]
PROM = "127.0.0.1:19090"
DOWN_FOR_S = 10
INTERVAL = "2s"


def api(path, **params):
    url = f"http://{PROM}/api/v1/{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())["data"]


def wait_for(what, check, timeout):
    """Poll `check` every second until it returns a truthy value; returns (value, seconds)."""
    start = time.monotonic()
    while True:
        try:
            value = check()
        except OSError:
            value = None
        if value:
            return value, time.monotonic() - start
        assert time.monotonic() - start < timeout, f"{what}: not seen within {timeout} s"
        time.sleep(1)


def sglang_targets():
    active = api("targets")["activeTargets"]
    return [t for t in active if t["scrapePool"] == "sglang"]


def down_alerts(host):
    return [a for a in api("alerts")["alerts"]
            if a["labels"].get("alertname") == "SGLangDown" and a["labels"].get("host") == host]


@pytest.mark.usefixtures("known_good")
def test_prometheus_scrapes_the_fleet_and_alerts_on_a_stopped_server():
    assert shutil.which("prometheus"), "Debian's prometheus package is missing (scripts/bootstrap.sh installs it)"
    ips = {h: ip_of(h) for h in HOSTS}
    gateway_ips = {g: ip_of(g) for g in GATEWAYS}
    work = scratch("sglang-monitoring-")
    playbook("playbooks/monitoring.yml", {
        "sglang_monitoring_output_dir": str(work / "out"),
        # Prometheus runs on the controller: it reaches each container at its bridge address
        "sglang_monitoring_address": "{{ %s[inventory_hostname] }}" % json.dumps(dict(ips, **gateway_ips)),
        "sglang_monitoring_node_exporter": False,
        "sglang_monitoring_scrape_interval": INTERVAL,
        "sglang_monitoring_down_for": f"{DOWN_FOR_S}s",
    })
    scrape = yaml.safe_load((work / "out" / "sglang-scrape.yml").read_text())
    config = {"global": {"scrape_interval": INTERVAL, "evaluation_interval": INTERVAL},
              "rule_files": [str(work / "out" / "sglang-rules.yml")],
              "scrape_configs": scrape["scrape_configs"]}
    (work / "prometheus.yml").write_text(yaml.safe_dump(config))
    subprocess.run(["promtool", "check", "config", str(work / "prometheus.yml")], check=True,
                   capture_output=True)
    prom = subprocess.Popen(
        ["prometheus", f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'data'}",
         f"--web.listen-address={PROM}"],
        stdout=subprocess.DEVNULL, stderr=open(work / "prometheus.log", "w"))
    stopped = HOSTS[-1]
    try:
        targets, took = wait_for("every SGLang target up", lambda: (
            lambda ts: ts if len(ts) == len(HOSTS) and all(t["health"] == "up" for t in ts) else None)(
                sglang_targets()), 60)
        assert sorted(t["scrapeUrl"] for t in targets) == sorted(
            f"http://{ip}:30000/metrics" for ip in ips.values())
        series, _ = wait_for("sglang: series of every host", lambda: (
            lambda r: r if len(r) == len(HOSTS) else None)(
                api("query", query='count by (host) ({__name__=~"sglang:.+"})')["result"]), 30)
        figure(f"Prometheus {len(targets)} SGLang targets up in {took:.0f} s; sglang: series per host: "
               + ", ".join(f"{s['metric']['host']}={s['value'][1]}" for s in series))
        # both gateways (job smg, their --prometheus-port) are scraped too, each listing the 3 workers healthy
        gateway_targets = [t for t in api("targets")["activeTargets"] if t["scrapePool"] == "smg"]
        assert sorted(t["scrapeUrl"] for t in gateway_targets) == sorted(
            f"http://{ip}:29000/metrics" for ip in gateway_ips.values()), gateway_targets
        healthy, took = wait_for("smg_worker_health of the 3 workers in each gateway", lambda: (
            lambda r: r if len(r) == len(GATEWAYS) and all(float(x["value"][1]) >= len(HOSTS) for x in r) else None)(
                api("query", query='sum by (instance) (smg_worker_health{job="smg"})')["result"]), 30)
        figure(f"Prometheus scrapes both gateways (job smg): sum(smg_worker_health) by gateway "
               f"{', '.join(x['value'][1] for x in healthy)} within {took:.0f} s")

        sh(stopped, "systemctl stop sglang")
        stopped_at = time.monotonic()
        firing, took = wait_for("SGLangDown firing", lambda: [
            a for a in down_alerts(stopped) if a["state"] == "firing"], DOWN_FOR_S + 40)
        assert took >= DOWN_FOR_S - 1, f"SGLangDown fired after {took:.0f} s, before its for: of {DOWN_FOR_S} s"
        others = [a for h in HOSTS[:-1] for a in down_alerts(h)]
        assert not others, f"SGLangDown for a server that runs: {others}"
        fired_after = time.monotonic() - stopped_at

        sh(stopped, "systemctl start sglang")
        wait_for(f"{stopped} answering again", lambda: ask(ips[stopped], timeout=5) == "OK", 240)
        _, resolved_in = wait_for("SGLangDown resolved", lambda: not [
            a for a in down_alerts(stopped) if a["state"] == "firing"], 60)
        figure(f"SGLangDown (for: {DOWN_FOR_S}s, scrape and evaluation every {INTERVAL}) fired "
               f"{fired_after:.0f} s after the server stopped; resolved {resolved_in:.0f} s after it answered again")
    finally:
        prom.terminate()
        prom.wait(timeout=30)
        if sh(stopped, "systemctl is-active sglang || true") != "active":
            sh(stopped, "systemctl start sglang")
        shutil.rmtree(work, ignore_errors=True)
    for h in HOSTS:
        assert ask(ips[h]) == "OK"

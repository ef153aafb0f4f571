"""Monitoring of the rollout's three hosts with a real Prometheus (Debian's package, started on
the controller for the test: molecule/shared/prometheus.py): the scrape jobs and alert rules are
the ones that playbooks/monitoring.yml writes in write-only mode, as an operator would copy them
into an existing Prometheus. Every SGLang target is up and has `sglang:` series; a stopped server
fires SGLangDown within the rule's `for:` (shortened here) and the alert resolves once the server
is back. Starts from every host serving a configuration deployed on purpose (conftest.py:
`known_good`), so it runs alone or in any order, and leaves every host serving.
"""

from __future__ import annotations

import time

import pytest

from ansible_collections.sglang.deploy.molecule.shared.fleet import ask, figure, ip_of, sh
from ansible_collections.sglang.deploy.molecule.shared.gateway import GATEWAYS
from ansible_collections.sglang.deploy.molecule.shared.prometheus import INTERVAL, Prometheus, wait_for

testinfra_hosts = ["molecule-rollout-1"]

HOSTS = ["molecule-rollout-1", "molecule-rollout-2", "molecule-rollout-3"]
DOWN_FOR_S = 10


def sglang_targets(prom):
    active = prom.api("targets")["activeTargets"]
    return [t for t in active if t["scrapePool"] == "sglang"]


@pytest.mark.usefixtures("known_good")
def test_prometheus_scrapes_the_fleet_and_alerts_on_a_stopped_server():
    ips = {h: ip_of(h) for h in HOSTS}
    gateway_ips = {g: ip_of(g) for g in GATEWAYS}
    stopped = HOSTS[-1]
    with Prometheus(HOSTS + GATEWAYS, {"sglang_monitoring_down_for": f"{DOWN_FOR_S}s"}) as prom:
        try:
            targets, took = wait_for("every SGLang target up", lambda: (
                lambda ts: ts if len(ts) == len(HOSTS) and all(t["health"] == "up" for t in ts) else None)(
                    sglang_targets(prom)), 60)
            assert sorted(t["scrapeUrl"] for t in targets) == sorted(
                f"http://{ip}:30000/metrics" for ip in ips.values())
            series, _ = wait_for("sglang: series of every host", lambda: (
                lambda r: r if len(r) == len(HOSTS) else None)(
                    prom.api("query", query='count by (host) ({__name__=~"sglang:.+"})')["result"]), 30)
            figure(f"Prometheus {len(targets)} SGLang targets up in {took:.0f} s; sglang: series per host: "
                   + ", ".join(f"{s['metric']['host']}={s['value'][1]}" for s in series))
            # both gateways (job smg, their --prometheus-port) are scraped too, each listing the 3 workers healthy
            gateway_targets = [t for t in prom.api("targets")["activeTargets"] if t["scrapePool"] == "smg"]
            assert sorted(t["scrapeUrl"] for t in gateway_targets) == sorted(
                f"http://{ip}:29000/metrics" for ip in gateway_ips.values()), gateway_targets
            healthy, took = wait_for("smg_worker_health of the 3 workers in each gateway", lambda: (
                lambda r: r if len(r) == len(GATEWAYS) and all(float(x["value"][1]) >= len(HOSTS) for x in r) else None)(
                    prom.api("query", query='sum by (instance) (smg_worker_health{job="smg"})')["result"]), 30)
            figure(f"Prometheus scrapes both gateways (job smg): sum(smg_worker_health) by gateway "
                   f"{', '.join(x['value'][1] for x in healthy)} within {took:.0f} s")

            sh(stopped, "systemctl stop sglang")
            stopped_at = time.monotonic()
            firing, took = wait_for("SGLangDown firing", lambda: [
                a for a in prom.alerts("SGLangDown", host=stopped) if a["state"] == "firing"], DOWN_FOR_S + 40)
            assert took >= DOWN_FOR_S - 1, f"SGLangDown fired after {took:.0f} s, before its for: of {DOWN_FOR_S} s"
            others = [a for h in HOSTS[:-1] for a in prom.alerts("SGLangDown", host=h)]
            assert not others, f"SGLangDown for a server that runs: {others}"
            fired_after = time.monotonic() - stopped_at

            sh(stopped, "systemctl start sglang")
            wait_for(f"{stopped} answering again", lambda: ask(ips[stopped], timeout=5) == "OK", 240)
            _, resolved_in = wait_for("SGLangDown resolved", lambda: not [
                a for a in prom.alerts("SGLangDown", host=stopped) if a["state"] == "firing"], 60)
            figure(f"SGLangDown (for: {DOWN_FOR_S}s, scrape and evaluation every {INTERVAL}) fired "
                   f"{fired_after:.0f} s after the server stopped; resolved {resolved_in:.0f} s after it answered again")
        finally:
            if sh(stopped, "systemctl is-active sglang || true") != "active":
                sh(stopped, "systemctl start sglang")
    for h in HOSTS:
        assert ask(ips[h]) == "OK"

"""A real Prometheus (Debian's package) on the controller for the duration of a `with` block,
scraping the scenario's containers with the scrape jobs and alert rules that
playbooks/monitoring.yml writes in write-only mode, as an operator would copy them into an
existing Prometheus. Used by molecule/rollout/tests/test_rollout_monitoring.py and
test_healing.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import yaml

from ansible_collections.sglang.deploy.molecule.shared.fleet import ip_of, playbook, scratch, sh

PROM = "127.0.0.1:19090"
INTERVAL = "2s"


def install_node_exporter(host):
    """Debian's node exporter on `host`, as playbooks/monitoring.yml installs it (once: a host that
    has it keeps it), so that the watchdog's textfile figures reach Prometheus."""
    sh(host, "command -v prometheus-node-exporter || { apt-get update -qq && "
             "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus-node-exporter; }")


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


class Prometheus:
    """monitoring.yml's files for `hosts` (each container at its bridge address), then Prometheus
    on them; `extra` are more variables of the playbook (shortened `for:`, node exporter targets)."""

    def __init__(self, hosts, extra):
        assert shutil.which("prometheus"), "Debian's prometheus package is missing (scripts/bootstrap.sh installs it)"
        self.hosts, self.extra = list(hosts), dict(extra)
        self.work = scratch("sglang-monitoring-")
        self.proc = None

    def api(self, path, **params):
        url = f"http://{PROM}/api/v1/{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.loads(resp.read())["data"]

    def alerts(self, name, **labels):
        return [a for a in self.api("alerts")["alerts"] if a["labels"].get("alertname") == name
                and all(a["labels"].get(k) == v for k, v in labels.items())]

    def __enter__(self):
        ips = {h: ip_of(h) for h in self.hosts}
        playbook("playbooks/monitoring.yml", dict({
            "sglang_monitoring_output_dir": str(self.work / "out"),
            # Prometheus runs on the controller: it reaches each container at its bridge address
            "sglang_monitoring_address": "{{ %s[inventory_hostname] }}" % json.dumps(ips),
            "sglang_monitoring_node_exporter": False,
            "sglang_monitoring_scrape_interval": INTERVAL,
        }, **self.extra))
        scrape = yaml.safe_load((self.work / "out" / "sglang-scrape.yml").read_text())
        config = {"global": {"scrape_interval": INTERVAL, "evaluation_interval": INTERVAL},
                  "rule_files": [str(self.work / "out" / "sglang-rules.yml")],
                  "scrape_configs": scrape["scrape_configs"]}
        (self.work / "prometheus.yml").write_text(yaml.safe_dump(config))
        subprocess.run(["promtool", "check", "config", str(self.work / "prometheus.yml")], check=True,
                       capture_output=True)
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={self.work / 'prometheus.yml'}", f"--storage.tsdb.path={self.work / 'data'}",
             f"--web.listen-address={PROM}"],
            stdout=subprocess.DEVNULL, stderr=open(self.work / "prometheus.log", "w"))
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        shutil.rmtree(self.work, ignore_errors=True)

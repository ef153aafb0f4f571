"""plugins/module_utils/monitoring/config.py: scrape jobs and labels for
the SGLang hosts, the gateway hosts (smg), node and DCGM exporters; promtool accepts the result."""

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from sglang_monitoring_support import FLEET, GATEWAYS, config, hosts, run_promtool


def jobs(cfg):
    return {j["job_name"]: j for j in cfg["scrape_configs"]}


def test_sglang_job_maps_openmetrics_names_back_to_sglangs():
    # Prometheus 2.42 stored sglang_cache_hit_rate for the sample sglang:cache_hit_rate (OpenMetrics)
    job = config.sglang_job([], "/metrics")
    assert job["metric_relabel_configs"] == [{"source_labels": ["__name__"], "regex": "sglang_(.+)",
                                              "target_label": "__name__", "replacement": "sglang:$1"}]


def test_sglang_job_labels_each_host():
    fleet = [dict(FLEET[0], ml_env_generation="20250101-abc"), FLEET[1]]
    sglang = jobs(config.prometheus_config(fleet))["sglang"]
    assert sglang["metrics_path"] == "/metrics"
    first, second = sglang["static_configs"]
    assert first == {"targets": ["10.0.0.1:30000"],
                     "labels": {"host": "gpu-a", "flag_hash": FLEET[0]["flag_hash"],
                                "ml_env_generation": "20250101-abc", "model": "m"}}
    assert "ml_env_generation" not in second["labels"]  # unknown: left out, not empty


def test_gateway_node_and_dcgm_jobs():
    fleet = [dict(FLEET[0], dcgm=True, node_exporter=True), dict(FLEET[1], node_exporter=False)]
    cfg = config.prometheus_config(fleet, {"dcgm_targets": ["gpu-x:9400", {"target": "gpu-y", "host": "y"}],
                                           "node_exporter_targets": [{"target": "localhost:9100", "host": "mon"}],
                                           "gateways": GATEWAYS + [{"gateway": "gw-0", "address": "fd00::7", "port": 29001}]})
    by = jobs(cfg)
    assert by["smg"]["static_configs"] == [{"targets": ["[fd00::7]:29001"], "labels": {"gateway": "gw-0"}},
                                           {"targets": ["gw-1:29000"], "labels": {"gateway": "gw-1"}}]
    assert [s["targets"][0] for s in by["node"]["static_configs"]] == ["10.0.0.1:9100", "localhost:9100"]
    assert [(s["targets"][0], s["labels"]["host"]) for s in by["dcgm"]["static_configs"]] == [
        ("10.0.0.1:9400", "gpu-a"), ("gpu-x:9400", "gpu-x"), ("gpu-y:9400", "y")]
    assert "prometheus" not in by and "rule_files" not in cfg and "alerting" not in cfg


def test_jobs_without_targets_are_left_out():
    fleet = [dict(h, node_exporter=False) for h in FLEET]
    assert list(jobs(config.prometheus_config(fleet, {"gateways": []}))) == ["sglang"]


def test_install_mode_parts():
    cfg = config.prometheus_config(FLEET, {"self_target": "localhost:9090", "rule_files": ["/etc/prometheus/sglang-rules.yml"],
                                           "alertmanagers": ["am:9093"], "scrape_interval": "30s",
                                           "extra_scrape_configs": [{"job_name": "other", "static_configs": []}]})
    assert jobs(cfg)["prometheus"]["static_configs"] == [{"targets": ["localhost:9090"]}]
    assert cfg["scrape_configs"][-1]["job_name"] == "other"
    assert cfg["rule_files"] == ["/etc/prometheus/sglang-rules.yml"]
    assert cfg["alerting"] == {"alertmanagers": [{"static_configs": [{"targets": ["am:9093"]}]}]}
    assert cfg["global"]["scrape_interval"] == "30s"


def test_ipv6_host_address():
    entry = hosts.host_entry("h6", {"ansible_host": "fd00::2", "sglang_server_args": {}}, {})
    assert config.sglang_job([entry], "/metrics")["static_configs"][0]["targets"] == ["[fd00::2]:30000"]


def test_promtool_accepts_the_whole_configuration(tmp_path):
    rules_file = tmp_path / "sglang-rules.yml"
    rules_file.write_text("groups: []\n", encoding="utf-8")
    cfg = config.prometheus_config([dict(FLEET[0], dcgm=True), FLEET[1]],
                                   {"self_target": "localhost:9090", "rule_files": [str(rules_file)],
                                    "alertmanagers": ["am:9093"]})
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    rc, out = run_promtool("check", "config", str(path))
    assert rc == 0, out

"""plugins/module_utils/monitoring/hosts.py: each SGLang host's address,
labels and alert thresholds from its own variables; the flag hash is sglang_verify's."""

import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from sglang_monitoring_support import ROOT, hosts

from ansible_collections.sglang.deploy.plugins.module_utils.flags import model


def inventory_args(path):
    with open(os.path.join(ROOT, "inventories", path), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["sglang_server_args"]


@pytest.mark.parametrize("path", ["production/group_vars/blackwell/sglang.yml", "local/group_vars/all/sglang.yml"])
def test_flag_hash_is_sglang_verifys(path):
    args = inventory_args(path)
    assert hosts.flag_hash(args) == model.flag_hash(model.normalize_args(args))
    assert hosts.SECRET_FLAGS == model.SECRET_FLAGS


def test_flag_hash_leaves_secrets_out():
    args = {"port": 30000, "api-key": "one"}
    assert hosts.flag_hash(args) == hosts.flag_hash({"port": 30000, "api-key": "two"})
    assert hosts.flag_hash(args) == hosts.flag_hash({"port": 30000, "admin-api-key": "x"})
    assert hosts.flag_hash(args) != hosts.flag_hash({"port": 30001})


@pytest.mark.parametrize("args,override,cap", [
    ({"speculative-algorithm": "NEXTN"}, None, 48),
    ({"speculative-algorithm": "eagle3"}, None, 48),
    ({"speculative-algorithm": "NGRAM"}, None, 48),
    ({"speculative-algorithm": "NEXTN", "max-running-requests": 32}, None, 32),
    ({"max-running-requests": 64}, None, 64),
    ({"speculative-algorithm": "UNO"}, None, None),     # 0.5.23 sets no cap for UNO
    ({"speculative-algorithm": None}, None, None),
    ({}, None, None),                                    # the KV pool decides: /metrics cannot tell
    ({"speculative-algorithm": "NEXTN"}, 100, 100),
])
def test_running_cap(args, override, cap):
    assert hosts.running_cap(args, override) == cap


def test_production_hosts_thresholds_come_from_their_gates_and_flags():
    hv = {"sglang_server_args": inventory_args("production/group_vars/blackwell/sglang.yml"),
          "sglang_verify_max_ttft_ms": 1500, "sglang_verify_min_decode_tps": 71.6,
          "sglang_monitoring_min_spec_accept_length": 1.3, "ansible_user": "root"}
    entry = hosts.host_entry("gpu-node-01.example.invalid", hv, {"sglang_monitoring_node_exporter": True})
    assert entry["address"] == "gpu-node-01.example.invalid" and entry["port"] == 30000
    assert entry["ttft_p99_max_s"] == 1.5
    assert entry["itl_p99_max_s"] == pytest.approx(1 / 71.6, abs=1e-6)
    assert entry["running_cap"] == 48 and entry["min_spec_accept_length"] == 1.3
    assert entry["model"] == "qwen3.5-397b" and entry["node_exporter"] and not entry["dcgm"]
    assert "router_url" not in entry  # the gateway hosts are read on their own (sglang_monitoring_gateways)


def test_host_values_win_over_the_fleet_defaults_and_null_switches_off():
    defaults = {"sglang_monitoring_ttft_p99_max_ms": 900, "sglang_monitoring_dcgm": True,
                "sglang_monitoring_min_spec_accept_length": 1.5}
    hv = {"sglang_server_args": {"speculative-algorithm": "EAGLE"}, "sglang_verify_max_ttft_ms": 1500,
          "sglang_monitoring_dcgm": False, "sglang_monitoring_min_spec_accept_length": None,
          "sglang_monitoring_itl_p99_max_ms": 40}
    entry = hosts.host_entry("h", hv, defaults)
    assert entry["ttft_p99_max_s"] == 0.9           # the fleet's TTFT limit beats the gate
    assert entry["itl_p99_max_s"] == 0.04
    assert entry["dcgm"] is False
    assert entry["min_spec_accept_length"] is None  # host says null: no rule


@pytest.mark.parametrize("value,want", [("false", False), ("no", False), ("true", True), (False, False), (1, True)])
def test_exporter_switches_read_strings_as_ansible_does(value, want):
    # `-e sglang_monitoring_node_exporter=false` arrives as the string "false"
    entry = hosts.host_entry("h", {"sglang_server_args": {}, "sglang_monitoring_node_exporter": value,
                                   "sglang_monitoring_dcgm": value}, {})
    assert entry["node_exporter"] is want and entry["dcgm"] is want


def test_no_speculation_no_accept_length_rule_and_no_gate_no_latency_rule():
    entry = hosts.host_entry("h", {"sglang_server_args": {}}, {"sglang_monitoring_min_spec_accept_length": 1.3})
    assert entry["min_spec_accept_length"] is None
    assert entry["ttft_p99_max_s"] is None and entry["itl_p99_max_s"] is None
    assert entry["port"] == 30000 and entry["flag_hash"] == hosts.flag_hash({})


def test_address():
    hv = {"ansible_host": "10.0.0.5", "sglang_server_args": {"port": 31000}}
    entry = hosts.host_entry("h", hv, {})
    assert (entry["address"], entry["port"]) == ("10.0.0.5", 31000)
    hv.update(sglang_monitoring_address="172.17.0.3")
    assert hosts.host_entry("h", hv, {})["address"] == "172.17.0.3"


def test_gateways_address_and_metrics_port():
    hv = {"gw-b": {"ansible_host": "10.0.0.9", "sglang_gateway_metrics_port": "29100"},
          "gw-a": {},
          "gw-c": {"ansible_host": "10.0.0.8", "sglang_monitoring_address": "172.17.0.8"}}
    assert hosts.gateways(["gw-b", "gw-a", "gw-c"], hv, 29000) == [
        {"gateway": "gw-a", "address": "gw-a", "port": 29000},
        {"gateway": "gw-b", "address": "10.0.0.9", "port": 29100},
        {"gateway": "gw-c", "address": "172.17.0.8", "port": 29000}]
    assert hosts.gateways([], hv) == []
    with pytest.raises(AnsibleFilterError, match="gw-x: sglang_gateway_metrics_port 'x'"):
        hosts.gateways(["gw-x"], {"gw-x": {"sglang_gateway_metrics_port": "x"}})


def test_expected_args_override_is_what_sglang_verify_hashes():
    hv = {"sglang_server_args": {"port": 1}, "sglang_verify_expected_args": {"port": 2}}
    assert hosts.host_entry("h", hv, {})["flag_hash"] == model.flag_hash({"port": 2})


@pytest.mark.parametrize("hv,generation", [
    ({"ml_env_active_generation": "g-new", "ansible_local": {"ml_env": {"active": "g-old"}}}, "g-new"),
    ({"ansible_local": {"ml_env": {"active": "g-1"}}}, "g-1"),
    ({"ansible_facts": {"local": {"ml_env": {"active": "g-2"}}}}, "g-2"),
    ({"ansible_local": {}}, ""),
    ({}, ""),
])
def test_ml_env_generation(hv, generation):
    assert hosts.ml_env_generation(hv) == generation


def test_hosts_sorted_and_bad_values_named():
    hostvars = {"b": {"sglang_server_args": {}}, "a": {"sglang_server_args": {}}}
    assert [h["host"] for h in hosts.hosts(["b", "a"], hostvars)] == ["a", "b"]
    with pytest.raises(AnsibleFilterError, match="h: sglang_server_args must be a mapping"):
        hosts.host_entry("h", {"sglang_server_args": "port=1"}, {})
    with pytest.raises(AnsibleFilterError, match="h: the TTFT p99 limit is 'fast'"):
        hosts.host_entry("h", {"sglang_server_args": {}, "sglang_verify_max_ttft_ms": "fast"}, {})


def test_flags_are_read_through_the_flag_model():
    """"--port" renders --port in the unit: Prometheus must scrape that port, not 30000."""
    hv = {"ansible_host": "10.0.0.5", "sglang_server_args": {
        "--port": 31000, "--served-model-name": "m", "speculative_algorithm": "EAGLE", "enable-metrics": False}}
    entry = hosts.host_entry("h", hv, {})
    assert (entry["port"], entry["model"], entry["running_cap"]) == (31000, "m", 48)
    assert entry["flag_hash"] == model.flag_hash(model.normalize_args(hv["sglang_server_args"]))
    # this run's normalised flags (roles/sglang_flags, tasks_from: model) where the host has them
    hv["sglang_flags_normalized"] = {"port": 32000}
    assert hosts.host_entry("h", hv, {})["port"] == 32000
    with pytest.raises(AnsibleFilterError, match="h: sglang_server_args: '--port' and 'port' are the same flag --port; keep one"):
        hosts.host_entry("h", {"sglang_server_args": {"port": 1, "--port": 2}}, {})

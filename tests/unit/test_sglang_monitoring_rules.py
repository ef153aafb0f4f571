"""The alert rules of roles/sglang_monitoring under `promtool test rules` (tests/prometheus/*.yml,
synthetic series) and `promtool check rules`; every alert has a promtool test."""

import glob
import os
import shutil

import pytest
import yaml

from sglang_monitoring_support import FLEET, GPU_FLEET, OPTIONS, ROOT, RULE_OPTIONS, rules, run_promtool

TESTS = sorted(glob.glob(os.path.join(ROOT, "tests", "prometheus", "*.yml")))


@pytest.fixture(name="rule_dir")
def fixture_rule_dir(tmp_path):
    with open(tmp_path / "sglang-rules.yml", "w", encoding="utf-8") as handle:
        yaml.safe_dump(rules.alert_rules(GPU_FLEET, RULE_OPTIONS), handle, sort_keys=False, width=1000)
    return tmp_path


def test_rendered_rules_pass_promtool_check(rule_dir):
    rc, out = run_promtool("check", "rules", str(rule_dir / "sglang-rules.yml"))
    assert rc == 0, out


@pytest.mark.parametrize("test_file", TESTS, ids=os.path.basename)
def test_promtool_test_rules(rule_dir, test_file):
    shutil.copy(test_file, rule_dir)
    rc, out = run_promtool("test", "rules", os.path.basename(test_file), cwd=str(rule_dir))
    assert rc == 0, out


def test_every_alert_has_a_promtool_test():
    tested = set()
    for path in TESTS:
        with open(path, encoding="utf-8") as handle:
            for case in yaml.safe_load(handle)["tests"]:
                tested.update(t["alertname"] for t in case.get("alert_rule_test", []) if t.get("exp_alerts"))
    alerts = {r["alert"] for g in rules.alert_rules(GPU_FLEET, RULE_OPTIONS)["groups"] for r in g["rules"]}
    assert alerts - tested == set(), "alerts without a firing promtool test"
    assert len(alerts) == 21


def test_the_gpu_group_needs_a_host_whose_dcgm_exporter_is_scraped():
    assert "gpu" not in [g["name"] for g in rules.alert_rules(FLEET, OPTIONS)["groups"]]
    (group,) = [g for g in rules.alert_rules(GPU_FLEET, OPTIONS)["groups"] if g["name"] == "gpu"]
    assert [r["alert"] for r in group["rules"]] == ["GPUXidError"]
    assert group["rules"][0]["expr"] == 'max by (host, instance, gpu) (DCGM_FI_DEV_XID_ERRORS{job="dcgm"}) > 0'


def test_one_rule_per_distinct_threshold():
    by_alert = {}
    for group in rules.alert_rules(FLEET, OPTIONS)["groups"]:
        for rule in group["rules"]:
            by_alert.setdefault(rule["alert"], []).append(rule["expr"])
    assert len(by_alert["SGLangTTFTP99High"]) == 2      # 1.5 s and 0.5 s
    assert len(by_alert["SGLangRunningRequestsNearCap"]) == 2
    assert len(by_alert["SGLangSpecAcceptLengthLow"]) == 1  # only gpu-a speculates
    assert len(by_alert["SGLangGatewayDown"]) == 1  # one rule for every gateway host
    assert any('host="gpu-a"' in e and e.endswith("> 1.5") for e in by_alert["SGLangTTFTP99High"])
    assert any(e.endswith(">= 43.2") for e in by_alert["SGLangRunningRequestsNearCap"])


def test_hosts_sharing_a_threshold_share_one_rule_with_escaped_names():
    fleet = [dict(FLEET[0], host="gpu-1.example"), dict(FLEET[0], host="gpu-2.example")]
    exprs = [r["expr"] for g in rules.alert_rules(fleet)["groups"] for r in g["rules"]
             if r["alert"] == "SGLangTTFTP99High"]
    assert len(exprs) == 1
    assert 'host=~"gpu-1\\\\.example|gpu-2\\\\.example"' in exprs[0]


def test_no_threshold_no_rule_and_no_gateway_no_gateway_group():
    bare = [dict(FLEET[1], ttft_p99_max_s=None, itl_p99_max_s=None, running_cap=None)]
    out = rules.alert_rules(bare, {"gateways": [], "watchdog": False})
    assert [g["name"] for g in out["groups"]] == ["sglang"]
    names = {r["alert"] for r in out["groups"][0]["rules"]}
    assert names == {"SGLangDown", "SGLangHealthFailing", "SGLangNoThroughputWhileQueued",
                     "SGLangKVCacheNearlyFull", "SGLangRestartLoop"}


def test_options_change_windows_and_thresholds():
    out = rules.alert_rules(FLEET, {"down_for": "20m", "restart_window": "1h", "kv_usage_max": 0.9,
                                    "running_cap_ratio": 1, "restart_max": None})
    by_alert = {r["alert"]: r for g in out["groups"] for r in g["rules"]}
    assert by_alert["SGLangDown"]["for"] == "20m"
    assert "[1h]" in by_alert["SGLangRestartLoop"]["expr"] and by_alert["SGLangRestartLoop"]["expr"].endswith("> 2")
    assert by_alert["SGLangKVCacheNearlyFull"]["expr"].endswith("> 0.9")
    assert "for" not in by_alert["SGLangRestartLoop"]


def test_gateway_rules_read_smg_names_and_the_error_threshold():
    out = rules.alert_rules(FLEET, dict(OPTIONS, gateway_error_ratio_max=0.2, gateway_error_window="10m"))
    (group,) = [g for g in out["groups"] if g["name"] == "smg"]
    by_alert = {r["alert"]: r for r in group["rules"]}
    assert set(by_alert) == {"SGLangGatewayDown", "SGLangGatewayNoHealthyWorker", "SGLangGatewayWorkerUnhealthy",
                             "SGLangGatewayCircuitOpen", "SGLangGatewayErrorRate"}
    assert by_alert["SGLangGatewayErrorRate"]["expr"] == (
        '(sum by (gateway, instance) (rate(smg_router_request_errors_total{job="smg"}[10m])) / '
        'sum by (gateway, instance) (rate(smg_router_requests_total{job="smg"}[10m]))) > 0.2')
    assert by_alert["SGLangGatewayCircuitOpen"]["expr"] == 'smg_worker_cb_state{job="smg"} == 1'


WATCHDOG_ALERTS = ["SGLangWatchdogRestarted", "SGLangWatchdogGaveUp", "SGLangWrongAnswers",
                   "SGLangWorkerOutOfGateway", "SGLangWatchdogNotRunning"]


def test_the_watchdog_group_is_there_by_default_and_goes_with_the_option():
    groups = {g["name"]: g for g in rules.alert_rules(FLEET, OPTIONS)["groups"]}
    assert [r["alert"] for r in groups["watchdog"]["rules"]] == WATCHDOG_ALERTS
    for off in (False, "false", "False"):
        assert "watchdog" not in [g["name"] for g in rules.alert_rules(FLEET, dict(OPTIONS, watchdog=off))["groups"]]


def test_watchdog_rules_read_the_textfile_through_job_node_and_take_their_options():
    out = rules.alert_rules(FLEET, {"watchdog_restart_window": "1h", "out_of_gateway_for": "25m",
                                    "watchdog_stale_after": "600"})
    (group,) = [g for g in out["groups"] if g["name"] == "watchdog"]
    by_alert = {r["alert"]: r for r in group["rules"]}
    assert by_alert["SGLangWatchdogRestarted"]["expr"] == 'increase(sglang_watchdog_restarts_total{job="node"}[1h]) > 0'
    assert "for" not in by_alert["SGLangWatchdogRestarted"] and "1h" in by_alert["SGLangWatchdogRestarted"][
        "annotations"]["description"]
    assert by_alert["SGLangWatchdogGaveUp"]["expr"] == 'sglang_watchdog_given_up{job="node"} == 1'
    assert by_alert["SGLangWatchdogGaveUp"]["labels"] == {"severity": "critical"}
    assert by_alert["SGLangWrongAnswers"]["expr"] == (
        'increase(sglang_watchdog_sentinel_wrong_total{job="node"}[1h]) > 0')
    assert by_alert["SGLangWrongAnswers"]["labels"] == {"severity": "critical"}
    assert by_alert["SGLangWorkerOutOfGateway"]["for"] == "25m"
    assert "min by (host, instance, service) (sglang_watchdog_listed{job=\"node\"}) == 0" in by_alert[
        "SGLangWorkerOutOfGateway"]["expr"]
    assert by_alert["SGLangWatchdogNotRunning"]["expr"] == (
        'time() - max by (host, instance, service) (sglang_watchdog_last_run_timestamp_seconds{job="node"}) > 600')
    defaults = {r["alert"]: r for g in rules.alert_rules(FLEET)["groups"] for r in g["rules"]}
    assert defaults["SGLangWorkerOutOfGateway"]["for"] == "15m"
    assert defaults["SGLangWatchdogNotRunning"]["expr"].endswith("> 300")
    assert "[30m]" in defaults["SGLangWatchdogRestarted"]["expr"]


def _floor_rules(floor):
    out = rules.alert_rules(FLEET, dict(OPTIONS, gateway_floor=floor))
    return [r for g in out["groups"] for r in g["rules"] if r["alert"] == "SGLangGatewayHealthyWorkersAtFloor"]


@pytest.mark.parametrize("floor", [0, "0", "0%", None, ""])
def test_no_rollout_floor_no_floor_rule(floor):
    assert _floor_rules(floor) == []


def test_the_floor_rule_counts_a_gateways_healthy_workers_against_an_int_or_a_share():
    (rule,) = _floor_rules("2")
    assert rule["expr"] == 'count by (gateway, instance) (smg_worker_health{job="smg"} == 1) <= 2'
    assert rule["for"] == "15m" and rule["labels"] == {"severity": "critical"}
    (rule,) = _floor_rules("75%")  # rounded up, as the rollout resolves it
    assert rule["expr"] == ('count by (gateway, instance) (smg_worker_health{job="smg"} == 1) <= on (gateway, '
                            'instance) ceil(count by (gateway, instance) (smg_worker_health{job="smg"}) * 75 / 100)')
    assert "75% of the workers it lists" in rule["annotations"]["description"]
    no_gateway = rules.alert_rules(FLEET, {"gateways": [], "gateway_floor": 1})
    assert "smg" not in [g["name"] for g in no_gateway["groups"]]  # the floor needs a gateway, as the rollout's


def test_a_malformed_floor_is_refused_with_the_rollouts_rule():
    with pytest.raises(ValueError, match="sglang_rollout_min_serving"):
        _floor_rules("lots")


def test_rules_with_a_share_floor_pass_promtool_check(tmp_path):
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules.alert_rules(GPU_FLEET, dict(OPTIONS, gateway_floor="50%")), width=1000))
    rc, out = run_promtool("check", "rules", str(path))
    assert rc == 0, out


def test_missing_promtool_fails_and_says_how_to_install_it(monkeypatch):
    import sglang_monitoring_support as support  # pylint: disable=import-outside-toplevel
    monkeypatch.setattr(support.shutil, "which", lambda name: None)
    monkeypatch.setattr(support.os.path, "exists", lambda path: False)
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y prometheus"):
        support.promtool()

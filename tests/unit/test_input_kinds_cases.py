"""Every input that passed every check before the roles' inputs had kinds, refused by the kind of its role's
option (roles/<role>/meta/input_kinds.yml; plugins/module_utils/inputs/) through the check each
role's entry points and the lint run: a line naming the host, the variable (and the part of it),
the rule and the fix, and never a secret's value. tests/integration/test_input_kinds_playbooks.py
runs a sample through deploy.yml with --skip-tags sglang_flags_lint and with --tags of each phase."""

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.inputs import catalogue as C

HOST = "gpu-node-07.example.invalid"
ADDRESS = "10.1.2.7"
SECRET = "s3cr3t-" + "p" * 20

# id -> (role, the host's variables, the variable (and part) and rule the refusal names)
CASES = {
    # gpu_admit
    "admit-env-name-injection": ("gpu_admit", {"gpu_admit_env": {"X;touch F;Y": "1"}},
                                 "gpu_admit_env['X;touch F;Y']", "input-env-name"),
    "admit-env-ld-preload": ("gpu_admit", {"gpu_admit_env": {"LD_PRELOAD": "/opt/x.so"}},
                             "gpu_admit_env['LD_PRELOAD']", "input-env-loader"),
    "admit-env-credential": ("gpu_admit", {"gpu_admit_env": {"HF_TOKEN": SECRET}}, "gpu_admit_env['HF_TOKEN']",
                             "input-env-credential"),
    "admit-state-tmp": ("gpu_admit", {"gpu_admit_state_dir": "/tmp/admit"}, "gpu_admit_state_dir", "input-user-tree"),
    "admit-state-var-tmp": ("gpu_admit", {"gpu_admit_state_dir": "/var/tmp/admit"}, "gpu_admit_state_dir",
                            "input-user-tree"),
    "admit-state-home": ("gpu_admit", {"gpu_admit_state_dir": "/home/alice/admit"}, "gpu_admit_state_dir",
                         "input-user-tree"),
    "admit-unit-help": ("gpu_admit", {"gpu_admit_server_unit": "--help"}, "gpu_admit_server_unit", "input-unit-name"),
    "admit-unit-not-the-servers": ("gpu_admit", {"gpu_admit_server_unit": "sglang-old",
                                                 "sglang_server_service_name": "sglang"},
                                   "gpu_admit_server_unit", "input-server-unit"),
    "admit-python-tmp": ("gpu_admit", {"gpu_admit_python": "/tmp/py/bin/python"}, "gpu_admit_python",
                         "input-user-tree"),
    "admit-repeat-zero": ("gpu_admit", {"gpu_admit_repeat": 0}, "gpu_admit_repeat", "input-range"),
    # the watchdog
    "watchdog-service-newline": ("sglang_watchdog", {"sglang_watchdog_service": "sglang\nExecStartPre=/tmp/x"},
                                 "sglang_watchdog_service", "input-control-char"),
    "watchdog-service-ssh": ("sglang_watchdog", {"sglang_watchdog_service": "ssh"}, "sglang_watchdog_service",
                             "input-unit-reserved"),
    "watchdog-service-not-the-servers": ("sglang_watchdog", {"sglang_watchdog_service": "other",
                                                             "sglang_server_service_name": "sglang"},
                                         "sglang_watchdog_service", "input-server-unit"),
    "watchdog-state-etc": ("sglang_watchdog", {"sglang_watchdog_state_dir": "/etc"}, "sglang_watchdog_state_dir",
                           "input-system-dir"),
    "watchdog-state-root": ("sglang_watchdog", {"sglang_watchdog_state_dir": "/"}, "sglang_watchdog_state_dir",
                            "input-system-dir"),
    "watchdog-state-tmp": ("sglang_watchdog", {"sglang_watchdog_state_dir": "/tmp"}, "sglang_watchdog_state_dir",
                           "input-system-dir"),
    "watchdog-py-spy-home": ("sglang_watchdog", {"sglang_watchdog_py_spy": "/home/alice/py-spy"},
                             "sglang_watchdog_py_spy", "input-user-tree"),
    "watchdog-probe-elsewhere": ("sglang_watchdog", {"sglang_watchdog_probe_base": "http://10.9.9.9:30000"},
                                 "sglang_watchdog_probe_base", "input-url-host"),
    "watchdog-failure-threshold-0": ("sglang_watchdog", {"sglang_watchdog_failure_threshold": 0},
                                     "sglang_watchdog_failure_threshold", "input-range"),
    "watchdog-restart-limit-0": ("sglang_watchdog", {"sglang_watchdog_restart_limit": 0},
                                 "sglang_watchdog_restart_limit", "input-range"),
    "watchdog-probe-timeout-0": ("sglang_watchdog", {"sglang_watchdog_probe_timeout_sec": 0},
                                 "sglang_watchdog_probe_timeout_sec", "input-range"),
    "watchdog-interval-0": ("sglang_watchdog", {"sglang_watchdog_interval_sec": 0}, "sglang_watchdog_interval_sec",
                            "input-range"),
    # the gateway
    "gateway-venv-command": ("sglang_gateway", {"sglang_gateway_venv": "/bin/sh -c id>/tmp/x #"},
                             "sglang_gateway_venv", "input-path"),
    "gateway-db-password": ("sglang_gateway", {"sglang_gateway_extra_args": {
        "postgres-db-url": f"postgres://smg:{SECRET}@db:5432/smg"}},
        "sglang_gateway_extra_args['postgres-db-url']", "input-url-credential"),
    "gateway-outside-workers": ("sglang_gateway", {"sglang_gateway_extra_args": {"worker-urls": ["http://10.9.9.9:1"]}},
                                "sglang_gateway_extra_args['worker-urls']", "input-unsafe-option"),
    "gateway-private-media": ("sglang_gateway", {"sglang_gateway_extra_args": {"mm-allow-private-media-hosts": True}},
                              "sglang_gateway_extra_args['mm-allow-private-media-hosts']", "input-unsafe-option"),
    "gateway-worker-url-other-port": ("sglang_gateway", {"sglang_gateway_worker_url": f"http://{ADDRESS}:22",
                                                         "sglang_server_args": {"model-path": "/m"}},
                                      "sglang_gateway_worker_url", "input-url-port"),
    "gateway-url-credential": ("sglang_gateway", {"sglang_gateway_urls": [f"http://admin:{SECRET}@gw:30080"]},
                               "sglang_gateway_urls[0]", "input-url-credential"),
    # the server
    "server-custom-logit-processor": ("sglang_server", {"sglang_server_args": {
        "model-path": "/m", "enable-custom-logit-processor": True}},
        "sglang_server_args['enable-custom-logit-processor']", "input-unsafe-flag"),
    "server-abbreviated-host": ("sglang_server", {"sglang_server_args": {"model-path": "/m", "host": "127.0.0.1",
                                                                         "hos": "0.0.0.0"}},
                                "sglang_server_args['hos']", "flag-abbreviation"),
    "server-abbreviated-port": ("sglang_server", {"sglang_server_args": {"model-path": "/m", "po": 31000}},
                                "sglang_server_args['po']", "flag-abbreviation"),
    "server-upper-case-key": ("sglang_server", {"sglang_server_args": {"model-path": "/m", "API-KEY": SECRET}},
                              "sglang_server_args['API-KEY']", "input-key-flag"),
    "server-tp-zero": ("sglang_server", {"sglang_server_args": {"model-path": "/m", "tp-size": 0}},
                       "sglang_server_args['tp-size']", "input-parallel-size"),
    "server-unit-rescue": ("sglang_server", {"sglang_server_service_name": "rescue"}, "sglang_server_service_name",
                           "input-unit-reserved"),
    "server-unit-autovt": ("sglang_server", {"sglang_server_service_name": "autovt@tty1"},
                           "sglang_server_service_name", "input-unit-reserved"),
    "server-pythonpath-home": ("sglang_server", {"sglang_server_env": {"PYTHONPATH": "/home/alice/lib"}},
                               "sglang_server_env['PYTHONPATH']", "input-env-loader"),
    "server-python-tmp": ("sglang_server", {"sglang_server_python": "/tmp/venv/bin/python"}, "sglang_server_python",
                          "input-user-tree"),
    # the firewall
    "firewall-port-ssh": ("sglang_firewall", {"sglang_firewall_enabled": True, "sglang_firewall_port": 22,
                                              "sglang_server_args": {"model-path": "/m", "port": 30000}},
                          "sglang_firewall_port", "input-firewall-port"),
    "firewall-ruleset-tmp": ("sglang_firewall", {"sglang_firewall_ruleset_path": "/tmp/sglang.nft"},
                             "sglang_firewall_ruleset_path", "input-path-root"),
    "firewall-ruleset-var-tmp": ("sglang_firewall", {"sglang_firewall_ruleset_path": "/var/tmp/x/sglang.nft"},
                                 "sglang_firewall_ruleset_path", "input-path-root"),
    "firewall-ruleset-home": ("sglang_firewall", {"sglang_firewall_ruleset_path": "/home/alice/sglang.nft"},
                              "sglang_firewall_ruleset_path", "input-path-root"),
    # elsewhere
    "monitoring-output-tmp": ("sglang_monitoring", {"sglang_monitoring_output_dir": "/tmp"},
                              "sglang_monitoring_output_dir", "input-system-dir"),
    "verify-tolerance-typo": ("sglang_verify", {"sglang_verify_quality_tolerance": {
        "mean_abs_dlogprob": 0.02, "max_abs_dlogprob": 0.15, "min_top_1": 0.97}},
        "sglang_verify_quality_tolerance['min_top_1']", "input-unknown-key"),
    "verify-load-tolerance-typo": ("sglang_verify", {"sglang_verify_quality_load_tolerance": {
        "max_abs_logprob": 0.05, "divergence_margin": 0.05}},
        "sglang_verify_quality_load_tolerance['max_abs_logprob']", "input-unknown-key"),
    "sweep-concurrency-zero": ("sglang_sweep", {"sweep_concurrency": [0, 4]}, "sweep_concurrency[0]", "input-range"),
    "rollout-serial-zero": ("sglang_rollout", {"sglang_rollout_serial": 0}, "sglang_rollout_serial", "input-range"),
    "model-files-endpoint-ftp": ("model_files", {"model_files_endpoint": "ftp://mirror/hf"}, "model_files_endpoint",
                                 "input-url"),
    "ml-env-pip-option": ("ml_env", {"ml_env_packages": ["--extra-index-url=http://evil/simple"]},
                          "ml_env_packages[0]", "input-requirement"),
}


def refusals(role, values):
    ctx = C.Ctx(HOST, (HOST, ADDRESS), values)
    return C.role_lines(HOST, C.load_kinds(role), ctx)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_issues_inputs_are_refused_naming_host_variable_rule_and_fix(name):
    role, values, variable, rule = CASES[name]
    lines = refusals(role, values)
    head = f"{HOST}: {variable} [{rule}] "
    assert any(x.startswith(head) and " Fix: " in x for x in lines), (head, lines)
    assert all(SECRET not in x for x in lines)


@pytest.mark.parametrize("role,values", [
    ("sglang_watchdog", {"sglang_watchdog_probe_base": "http://127.0.0.1:30000"}),
    ("sglang_watchdog", {"sglang_watchdog_probe_base": f"http://{ADDRESS}:30000"}),
    ("sglang_watchdog", {"sglang_watchdog_probe_base": "http://[::1]:30000"}),
    ("sglang_watchdog", {"sglang_watchdog_probe_base": "http://10.20.0.7:30000",
                         "sglang_flags_normalized": {"host": "10.20.0.7"}}),
    ("sglang_gateway", {"sglang_gateway_worker_url": "http://gpu-07.data.example:30000",
                        "sglang_server_args": {"model-path": "/m"}}),
    ("sglang_gateway", {"sglang_gateway_worker_url": f"http://{ADDRESS}:30000",
                        "sglang_server_args": {"model-path": "/m"}}),
    ("sglang_gateway", {"sglang_gateway_worker_url": f"http://{ADDRESS}:31000",
                        "sglang_flags_normalized": {"port": 31000}}),
    ("sglang_firewall", {"sglang_firewall_enabled": True, "sglang_firewall_port": 31000,
                         "sglang_server_args": {"model-path": "/m", "port": 31000}}),
    ("sglang_firewall", {"sglang_firewall_enabled": False, "sglang_firewall_port": 22,
                         "sglang_server_args": {"model-path": "/m"}}),
    ("gpu_admit", {"gpu_admit_server_unit": "llm", "sglang_server_service_name": "llm"}),
    ("gpu_admit", {"gpu_admit_env": {"NCCL_IB_DISABLE": "1", "NCCL_P2P_LEVEL": "SYS"}}),
    ("sglang_server", {"sglang_server_env": {"HF_TOKEN": SECRET, "PYTHONPATH": "/opt/site/lib"}}),
    ("sglang_verify", {"sglang_verify_quality_tolerance": {"mean_abs_dlogprob": 0.02, "min_top1": 0.97}}),
])
def test_what_works_passes(role, values):
    assert refusals(role, values) == []


def test_on_the_controller_as_its_own_user_a_home_is_that_users():
    """playbooks/verify_endpoint.yml verifies from the controller (connection local, the playbook's
    user): its reports and python may be in that user's home; as root on a host they may not."""
    kinds = C.load_kinds("sglang_verify")
    values = {"sglang_verify_quality_candidate": "/home/alice/sglang-deploy/reports/endpoints/e/candidate.json",
              "sglang_verify_bench_python": "/home/alice/venv/bin/python"}
    as_root = C.role_lines(HOST, kinds, C.Ctx(HOST, (HOST,), values))
    assert sorted([line.split(" [")[0], line.split(" [")[1].split(" ")[0]] for line in as_root) == [
        [f"{HOST}: sglang_verify_bench_python", "input-user-tree]"],
        [f"{HOST}: sglang_verify_quality_candidate", "input-user-tree]"]]
    assert C.role_lines(HOST, kinds, C.Ctx(HOST, (HOST,), values, as_user=True)) == []

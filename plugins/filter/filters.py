"""Every filter of the collection (sglang.deploy.<name>), as Ansible finds it: a name and the
function of plugins/module_utils that it is, where the code and its documentation are. Nothing
else lives here (tests/unit/test_collection_layout.py)."""

from ansible_collections.sglang.deploy.plugins.module_utils.firewall import sources
from ansible_collections.sglang.deploy.plugins.module_utils.flags import (
    catalog,
    checkpoint,
    deploy,
    env,
    exposure,
    inputs as flags_inputs,
    render,
    report,
    requirements,
    rules as flags_rules,
    sandbox,
    server_guard,
    sm,
)
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import cuda_toolkit, topology_env
from ansible_collections.sglang.deploy.plugins.module_utils.ml_env import lock
from ansible_collections.sglang.deploy.plugins.module_utils.model_files import lint
from ansible_collections.sglang.deploy.plugins.module_utils.monitoring import (
    config,
    hosts,
    rules as monitoring_rules,
)
from ansible_collections.sglang.deploy.plugins.module_utils.release import guard as release_guard
from ansible_collections.sglang.deploy.plugins.module_utils.rollout import urls
from ansible_collections.sglang.deploy.plugins.module_utils.sweep import order, redact
from ansible_collections.sglang.deploy.plugins.module_utils.verify import endpoint, registry as verify_registry
from ansible_collections.sglang.deploy.plugins.module_utils.watchdog import install


class FilterModule:
    def filters(self):
        return {
            # a restored release judged as a new one is (roles/sglang_release, tasks/restore.yml)
            "sglang_release_restore_refusals": release_guard.sglang_release_restore_refusals,
            # the flag model's rendering and the lint (roles/sglang_flags)
            "sglang_argv": render.sglang_argv,
            "sglang_env_lines": render.sglang_env_lines,
            "sglang_exec_lines": render.sglang_exec_lines,
            "sglang_flags_catalog_extend": catalog.sglang_flags_catalog_extend,
            "sglang_flags_catalog_of": catalog.sglang_flags_catalog_of,
            "sglang_flags_check": flags_rules.sglang_flags_check,
            "sglang_flags_checkpoint_findings": checkpoint.sglang_flags_checkpoint_findings,
            "sglang_flags_checkpoint_model_path": checkpoint.sglang_flags_checkpoint_model_path,
            "sglang_flags_collect": report.sglang_flags_collect,
            "sglang_flags_deploy_findings": deploy.sglang_flags_deploy_findings,
            "sglang_flags_env_dict": env.sglang_flags_env_dict,
            "sglang_flags_expand": flags_inputs.sglang_flags_expand,
            "sglang_flags_format": report.sglang_flags_format,
            "sglang_flags_host_rules": flags_rules.sglang_flags_host_rules,
            "sglang_flags_inputs": flags_inputs.sglang_flags_inputs,
            "sglang_flags_key_findings": exposure.sglang_flags_key_findings,
            "sglang_flags_normalize_sm": sm.sglang_flags_normalize_sm,
            "sglang_flags_package_names": requirements.sglang_flags_package_names,
            "sglang_flags_report": report.sglang_flags_report,
            "sglang_flags_sandbox_active": sandbox.sglang_flags_sandbox_active,
            "sglang_flags_sandbox_findings": sandbox.sglang_flags_sandbox_findings,
            "sglang_flags_version_from_spec": requirements.sglang_flags_version_from_spec,
            "sglang_key_problem": exposure.sglang_key_problem,
            "sglang_normalize_args": render.sglang_normalize_args,
            "systemd_quote": render.systemd_quote,
            # the server's render guard (roles/sglang_server)
            "sglang_server_refusals": server_guard.sglang_server_refusals,
            # roles/sglang_firewall
            "sglang_firewall_findings": sources.sglang_firewall_findings,
            "sglang_firewall_sets": sources.sglang_firewall_sets,
            "sglang_firewall_sources": sources.sglang_firewall_sources,
            # roles/sglang_gateway
            # deploy.yml's rollout, roles/sglang_gateway's URLs
            "sglang_gateway_urls": urls.gateway_urls,
            "sglang_rollout_worker_urls": urls.worker_urls,
            # roles/sglang_monitoring
            "sglang_monitoring_alert_rules": monitoring_rules.alert_rules,
            "sglang_monitoring_gateways": hosts.gateways,
            "sglang_monitoring_hosts": hosts.hosts,
            "sglang_monitoring_prometheus_config": config.prometheus_config,
            # roles/sglang_sweep
            "sglang_sweep_order_axes": order.order_axes,
            "sglang_sweep_secrets": redact.sweep_secrets,
            # roles/sglang_watchdog
            "sglang_watchdog_stale": install.sglang_watchdog_stale,
            # roles/sglang_verify: what a verification measures, from the gates that judge it
            "sglang_verify_checks": verify_registry.checks,
            # playbooks/verify_endpoint.yml
            "sglang_endpoint_base_url": endpoint.sglang_endpoint_base_url,
            "sglang_endpoint_id": endpoint.sglang_endpoint_id,
            "sglang_endpoint_launch_flags": endpoint.sglang_endpoint_launch_flags,
            # roles/cuda_toolkit; the GPU order of a server and of a sweep candidate
            "cuda_toolkit_config_errors": cuda_toolkit.config_errors,
            "cuda_toolkit_driver_problem": cuda_toolkit.driver_problem,
            "cuda_toolkit_nvcc_version": cuda_toolkit.nvcc_version,
            "cuda_toolkit_repo_distro": cuda_toolkit.repo_distro,
            "gpu_topology_candidate_env": topology_env.gpu_topology_candidate_env,
            "gpu_topology_env": topology_env.gpu_topology_env,
            # roles/ml_env
            "ml_env_cuda_runtime_check": lock.ml_env_cuda_runtime_check,
            "ml_env_lock_requirements": lock.ml_env_lock_requirements,
            # roles/model_files
            "model_files_lint_findings": lint.model_files_lint_findings,
        }

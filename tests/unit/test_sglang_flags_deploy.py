"""The deploy-scope rules of roles/sglang_flags/vars/main.yml, judged by
plugins/module_utils/flags/deploy.py on the host's ml_env spec and gateway settings: each one
fires, has a near miss, and the shipped inventories pass."""

import os

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_flags")
from ansible_collections.sglang.deploy.plugins.module_utils.flags import deploy as D  # noqa: E402  pylint: disable=wrong-import-position
with open(os.path.join(ROLE, "vars", "main.yml"), encoding="utf-8") as fh:
    RULES = yaml.safe_load(fh)["sglang_flags_rules"]
DEPLOY_IDS = {r["id"] for r in RULES if r.get("scope") == "deploy"}

SPEC = {"ml_env_index_url": "https://pypi.org/simple",
        "ml_env_extra_index_urls": ["https://download.pytorch.org/whl/cu130", "https://flashinfer.ai/whl/cu130"],
        "ml_env_packages": ["torch==2.14.1", "flashinfer-python==0.7.2", "flashinfer-cubin==0.7.2", "sglang==0.5.23"]}
CUDNN = {"fp4-gemm-backend": "flashinfer_cudnn"}
# the production profile's NVFP4 MoE (modelopt_fp4, flashinfer_cutlass); judged on SM120 (rules_of)
NVFP4 = {"quantization": "modelopt_fp4", "moe-runner-backend": "flashinfer_cutlass"}

# rule -> (inputs, args) that fire it, (inputs, args) of a near miss
CASES = {
    "flashinfer-cubin-index": (
        (SPEC, {}),
        (dict(SPEC, ml_env_extra_index_urls=SPEC["ml_env_extra_index_urls"] + ["https://flashinfer.ai/whl/"]), {})),
    "fp4-gemm-cudnn-version": (
        ({"ml_env_packages": ["torch==2.14.1", "nvidia-cudnn-cu13==9.8.0.87"]}, CUDNN),
        ({"ml_env_packages": ["torch==2.14.1"], "ml_env_min_versions": {"nvidia_cudnn_cu13": "9.10.2"}}, CUDNN)),
    "rollout-serial": (({"sglang_rollout_serial": "150%"}, {}), ({"sglang_rollout_serial": [1, "10%", "25%"]}, {})),
    "rollout-min-serving": (({"sglang_rollout_min_serving": -1}, {}), ({"sglang_rollout_min_serving": "75%"}, {})),
    "gateway-client-key": (
        ({"sglang_gateway_hosts": ["gw-1"], "sglang_gateway_client_key": "other"}, {}),
        ({"sglang_gateway_hosts": ["gw-1"], "sglang_gateway_client_key": "same"}, {})),
    "sm120-nvfp4-moe-flashinfer": (
        ({"ml_env_packages": ["flashinfer-python==0.6.5", "sglang==0.5.23"]}, NVFP4),
        (SPEC, NVFP4)),
    # the jit-cache shim and its SM120 provider (tests/unit/test_flashinfer_kernels.py has the boundaries)
    "flashinfer-kernel-version": (
        (dict(SPEC, ml_env_packages_nodeps=["flashinfer-jit-cache==0.7.1+cu130"]), {}),
        (dict(SPEC, ml_env_packages_nodeps=["flashinfer-jit-cache==0.7.2+cu130",
                                            "flashinfer-jit-cache-sm120f==0.7.2+cu130"]), {})),
    "flashinfer-jit-cache-provider": (
        (dict(SPEC, ml_env_packages_nodeps=["flashinfer-jit-cache==0.7.2+cu130"]), {}),
        (dict(SPEC, ml_env_packages_nodeps=["flashinfer-jit-cache==0.7.2+cu130",
                                            "flashinfer-jit-cache-sm120f==0.7.2+cu130"]), {})),
    "flashinfer-jit-cache-all-providers": (
        (dict(SPEC, ml_env_packages=SPEC["ml_env_packages"] + ["flashinfer-jit-cache==0.7.2"]), {}),
        (dict(SPEC, ml_env_packages=["flashinfer-python==0.6.18.post1", "flashinfer-jit-cache==0.6.18.post1"]), {})),
}


def rules_of(inputs, args=None, waive=None, sm="12.0"):
    return {f["rule"]: f for f in D.sglang_flags_deploy_findings(inputs, RULES, args, waive, sm=sm)}


def test_every_deploy_rule_has_a_case():
    assert DEPLOY_IDS == set(CASES)


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_deploy_rule_fires(rule_id):
    (inputs, args), _ = CASES[rule_id]
    f = rules_of(inputs, args)[rule_id]
    rule = next(r for r in RULES if r["id"] == rule_id)
    assert f["severity"] == rule["severity"] and f["status"] == "violation"
    assert f["source"].startswith(("docs/sglang-versions.md#", "docs/rollout-growth.md#"))
    assert "{" not in f["message"] + f["fix"]


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_deploy_rule_near_miss(rule_id):
    _, (inputs, args) = CASES[rule_id]
    assert rule_id not in rules_of(inputs, args)


def test_cubin_rule_names_the_requirement_and_spares_old_pypi_versions():
    f = rules_of(SPEC)["flashinfer-cubin-index"]
    assert "flashinfer-cubin==0.7.2" in f["message"] and "https://flashinfer.ai/whl" in f["fix"]
    assert rules_of(dict(SPEC, ml_env_packages=["flashinfer-cubin==0.6.13"])) == {}
    assert "flashinfer-cubin-index" in rules_of(dict(SPEC, ml_env_packages=["flashinfer-cubin"]))
    assert rules_of(dict(SPEC, ml_env_find_links=["https://flashinfer.ai/whl"])) == {}


def test_cudnn_rule_accepts_an_exact_pin_and_ignores_other_backends():
    assert rules_of({"ml_env_packages": ["nvidia-cudnn-cu13==9.24.0.43"]}, CUDNN) == {}
    f = rules_of({"ml_env_packages": ["torch==2.14.1"]}, CUDNN)["fp4-gemm-cudnn-version"]
    assert "unpinned" in f["message"]
    assert rules_of({"ml_env_packages": []}, {"fp4-gemm-backend": "flashinfer_cutlass"}) == {}
    assert "fp4-gemm-cudnn-version" in rules_of({"ml_env_min_versions": {"nvidia-cudnn-cu13": "9.8"}}, CUDNN)


def test_gateway_rule_names_the_gateway_and_the_fix():
    assert rules_of({"sglang_gateway_hosts": ["gw-1"], "sglang_gateway_client_key": ""}) == {}
    assert rules_of({"sglang_gateway_hosts": [], "sglang_gateway_client_key": ""}) == {}
    f = rules_of({"sglang_gateway_hosts": ["gw-1", "gw-2"], "sglang_gateway_client_key": "other"})["gateway-client-key"]
    assert f["value"] == "gw-1, gw-2" and f["severity"] == "error"
    assert "forwards the client's Authorization header" in f["message"] and "401" in f["message"]
    assert "sglang_server_api_key" in f["fix"] and "empty" in f["fix"]


def test_a_waived_deploy_rule_is_a_warning():
    f = rules_of(SPEC, waive=["flashinfer-cubin-index"])["flashinfer-cubin-index"]
    assert f["severity"] == "warning" and f["status"] == "waived"


@pytest.mark.parametrize("inventory,group", [("production", "blackwell"), ("local", "all")])
def test_shipped_inventories_pass_the_deploy_rules(inventory, group):
    merged = {}
    for g in ("all", group):
        directory = os.path.join(ROOT, "inventories", inventory, "group_vars", g)
        for name in sorted(os.listdir(directory)):
            with open(os.path.join(directory, name), encoding="utf-8") as fh:
                merged.update(yaml.safe_load(fh) or {})
    inputs = {k: merged.get(k) for k in D.DEPLOY_INPUTS}
    assert D.sglang_flags_deploy_findings(inputs, RULES, merged.get("sglang_server_args"),
                                          sm=merged.get("gpu_host_expected_sm", "")) == []


@pytest.mark.parametrize("inputs,args,sm,why", [
    ({"ml_env_packages": ["flashinfer-python==0.6.6"]}, {"quantization": "modelopt_fp4"}, "12.0",
     "flashinfer-python==0.6.6"),
    ({"ml_env_packages": ["flashinfer-python==0.7.2"], "cuda_toolkit_version": "12.9"},
     dict(NVFP4, **{"moe-runner-backend": "auto"}), "sm_120", "cuda_toolkit_version 12.9"),
])
def test_nvfp4_moe_rule_names_what_keeps_the_sm120_fix_out(inputs, args, sm, why):
    f = rules_of(inputs, args, sm=sm)["sm120-nvfp4-moe-flashinfer"]
    assert f["severity"] == "error" and f["value"] == why
    assert "FlashInfer issue 2723" in f["message"] and "PR 2725" in f["message"] and ">= 0.6.7" in f["message"]
    assert "compute_120f" in f["message"] and "CUDA" in f["fix"]
    assert f["flag"] == ("ml_env_packages" if why.startswith("flashinfer") else "cuda_toolkit_version")


@pytest.mark.parametrize("inputs,args,sm", [
    ({"ml_env_packages": ["flashinfer-python==0.6.5"]}, NVFP4, "10.0"),          # not SM120
    ({"ml_env_packages": ["flashinfer-python==0.6.5"]}, NVFP4, ""),              # SM unknown
    ({"ml_env_packages": ["flashinfer-python==0.6.5"]}, dict(NVFP4, **{"moe-runner-backend": "triton"}), "12.0"),
    ({"ml_env_packages": ["flashinfer-python==0.6.5"]}, {"quantization": "fp8"}, "12.0"),
    ({"ml_env_packages": ["flashinfer-python>=0.6"]}, NVFP4, "12.0"),            # no exact pin: SGLang's pin
    ({"ml_env_packages": ["flashinfer-python==0.6.7"], "cuda_toolkit_version": "13.0"}, NVFP4, "12.0"),
])
def test_nvfp4_moe_rule_near_misses(inputs, args, sm):
    assert "sm120-nvfp4-moe-flashinfer" not in rules_of(inputs, args, sm=sm)

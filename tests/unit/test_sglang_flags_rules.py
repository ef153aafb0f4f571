"""The rules table (roles/sglang_flags/vars/main.yml) as evaluated by
plugins/module_utils/flags/rules.py: every offline rule fires and has a near
miss, the host rules are the ones files/sglang_preflight.py implements, and the hand-tuned command
of the production profile is rejected on 0.5.23 while the corrected one and the profile pass.
The evaluator's own behaviour is in test_sglang_flags_evaluator.py, the filters beside it in
test_sglang_flags_filters.py."""

import os

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.flags import rules as F
import yaml
from sglang_flags_rules_support import (HOST_RULE_IDS, MINIMAL, ROLE, ROOT, RULES, TUNED_ARGS, TUNED_ENV, by_rule,
                                        check, errors)

RULE_IDS = [r["id"] for r in RULES]
DEPLOY_RULE_IDS = {r["id"] for r in RULES if r.get("scope") == "deploy"}  # test_sglang_flags_deploy.py

# The hand-tuned launch (TUNED_ARGS, TUNED_ENV) corrected for 0.5.23.
FIXED_ARGS = {k: v for k, v in TUNED_ARGS.items() if k != "mamba-scheduler-strategy"}
FIXED_ARGS.update({"mamba-radix-cache-strategy": "extra_buffer", "speculative-num-steps": 1,
                   "flashinfer-autotune-skip-ops": ["trtllm::fused_moe::gemm1", "trtllm::fused_moe::gemm2"],
                   # says that NCCL runs: SGLang's custom all-reduce refuses 8 PCIe-only GPUs
                   "disable-custom-all-reduce": True})
FIXED_ENV = {k: v for k, v in TUNED_ENV.items() if k != "SGLANG_ENABLE_SPEC_V2"}

QWEN35 = {"model-path": "/data/models/Qwen3.5-397B-A17B-NVFP4"}  # a hybrid Gated-DeltaNet model
# the production host's GPU (RTX PRO 6000 Blackwell) and checkpoint, as tasks/evaluate.yml passes them
PRODUCTION_MEMORY = {"gpu_memory_mib": 97887, "model_weight_bytes": 230_000_000_000}


# ---------------------------------------------------------------------------------------------
# one case per offline rule: (args, env, extra kwargs) that fire it, and a near miss that must not
# ---------------------------------------------------------------------------------------------
CASES = {
    "sm120-moe-flashinfer-trtllm": (
        dict(MINIMAL, **{"moe-runner-backend": "flashinfer_trtllm"}), {}, {},
        dict(MINIMAL, **{"moe-runner-backend": "flashinfer_cutlass"}), {}, {}),
    "sm120-moe-flashinfer-cutedsl": (
        dict(MINIMAL, **{"speculative-moe-runner-backend": "flashinfer_cutedsl"}), {}, {},
        dict(MINIMAL, **{"moe-runner-backend": "flashinfer_cutedsl"}), {}, {"sm": "10.0"}),
    "sm120-attention-fa3": (
        dict(MINIMAL, **{"decode-attention-backend": "fa3"}), {}, {"version": "0.5.23"},
        dict(MINIMAL, **{"attention-backend": "fa3"}), {}, {"sm": "9.0"}),
    "sm120-attention-fa4-before-0.5.19": (
        dict(MINIMAL, **{"decode-attention-backend": "fa4"}), {}, {"version": "0.5.18"},
        dict(MINIMAL, **{"attention-backend": "fa4"}), {}, {"version": "0.5.19"}),
    "sm120-hybrid-gdn-attention-backend": (
        dict(QWEN35, **{"prefill-attention-backend": "fa4"}), {}, {},
        dict(QWEN35, **{"attention-backend": "flashinfer"}), {}, {}),
    "sm120-trtllm-mha-prefill-before-0.5.19": (
        dict(MINIMAL, **{"attention-backend": "trtllm_mha"}), {}, {"version": "0.5.17"},
        dict(MINIMAL, **{"attention-backend": "trtllm_mha"}), {}, {"version": "0.5.19"}),
    "sm120-trtllm-mha-fp8-kv": (
        dict(MINIMAL, **{"prefill-attention-backend": "trtllm_mha", "kv-cache-dtype": "fp8_e4m3"}), {}, {},
        dict(MINIMAL, **{"attention-backend": "trtllm_mha", "kv-cache-dtype": "bf16"}), {}, {}),
    "sm120-trtllm-mha-fp8-kv-from-checkpoint": (
        dict(MINIMAL, **{"attention-backend": "trtllm_mha", "quantization": "modelopt_fp4"}), {}, {"version": "0.5.19"},
        dict(MINIMAL, **{"attention-backend": "trtllm_mha", "quantization": "modelopt_fp4",
                         "kv-cache-dtype": "bf16"}), {}, {}),
    "sm120-nvfp4-moe-runner-auto": (
        dict(MINIMAL, **{"quantization": "modelopt_mixed", "moe-runner-backend": "auto"}), {}, {},
        dict(MINIMAL, **{"quantization": "modelopt_mixed", "moe-runner-backend": "flashinfer_cutlass"}), {}, {}),
    "sm120-fused-moe-autotune": (
        dict(MINIMAL, **{"quantization": "modelopt_fp4", "flashinfer-autotune-skip-ops": ["trtllm::fused_moe::gemm1"]}),
        {}, {},
        dict(MINIMAL, **{"quantization": "modelopt_fp4", "disable-flashinfer-autotune": True}), {}, {}),
    "sm120-fp4-gemm-cutlass": (
        dict(MINIMAL, **{"fp4-gemm-backend": "flashinfer_cutlass"}), {}, {},
        dict(MINIMAL, **{"fp4-gemm-backend": "flashinfer_cudnn"}), {}, {}),
    "sm120-fp4-gemm-default": (
        dict(MINIMAL, **{"quantization": "modelopt_fp4"}), {}, {},
        dict(MINIMAL, **{"quantization": "modelopt_fp4", "fp4-gemm-backend": "flashinfer_cudnn"}), {}, {}),
    "sm120-flashinfer-allreduce-fusion": (
        dict(MINIMAL, **{"flashinfer-allreduce-fusion-backend": "trtllm"}), {}, {},
        dict(MINIMAL, **{"flashinfer-allreduce-fusion-backend": "trtllm"}), {}, {"sm": "10.0"}),
    "sm120-qwen35-expert-parallel": (
        dict(QWEN35, **{"expert-parallel-size": 8}), {}, {},
        dict(QWEN35, **{"ep-size": 1}), {}, {}),
    "qwen35-397b-nextn-context-262144": (
        dict(QWEN35, **{"speculative-algorithm": "NEXTN", "context-length": 262144}), {}, {"sm": "9.0"},
        dict(QWEN35, **{"speculative-algorithm": "NEXTN", "context-length": 131072}), {}, {}),
    "qwen35-397b-nextn-context-default": (
        dict(QWEN35, **{"speculative-algorithm": "eagle"}), {}, {},
        dict(QWEN35, **{"speculative-algorithm": "NGRAM"}), {}, {}),
    "hybrid-gdn-speculative-adaptive": (
        {"model-path": "/data/models/Qwen3-Next-80B-A3B", "speculative-adaptive": True}, {}, {"sm": "9.0"},
        dict(MINIMAL, **{"speculative-adaptive": True}), {}, {}),
    "sm120-torch-symm-mem": (
        dict(MINIMAL, **{"enable-torch-symm-mem": True}), {}, {},
        dict(MINIMAL, **{"enable-torch-symm-mem": False}), {}, {}),
    # the December rules (PCIe-only SM120 hosts): their version boundaries and messages are in test_sglang_flags_rules_field.py
    "sm120-custom-all-reduce-pcie": (
        dict(MINIMAL, **{"tp-size": 8}), {}, {},
        dict(MINIMAL, **{"tp-size": 8, "disable-custom-all-reduce": True}), {}, {}),
    "hybrid-gdn-mamba-no-buffer": (
        dict(QWEN35, **{"mamba-radix-cache-strategy": "no_buffer", "disable-overlap-schedule": True}), {}, {},
        dict(QWEN35, **{"mamba-radix-cache-strategy": "extra_buffer_lazy"}), {}, {}),
    "sm120-gdn-flashinfer-prefill-state-dtype": (
        dict(QWEN35, **{"linear-attn-prefill-backend": "flashinfer", "mamba-ssm-dtype": "bfloat16"}), {}, {},
        dict(QWEN35, **{"linear-attn-prefill-backend": "flashinfer", "mamba-ssm-dtype": "float32"}), {}, {}),
    "sm120-gdn-flashinfer-prefill-decode": (
        dict(QWEN35, **{"linear-attn-prefill-backend": "flashinfer", "linear-attn-backend": "flashinfer"}), {}, {},
        dict(QWEN35, **{"linear-attn-prefill-backend": "flashinfer", "linear-attn-decode-backend": "triton"}), {}, {}),
    "sm120-gdn-flashinfer-prefill-chunk": (
        dict(QWEN35, **{"linear-attn-prefill-backend": "flashinfer", "chunked-prefill-size": 16384}), {}, {},
        dict(QWEN35, **{"linear-attn-prefill-backend": "flashinfer", "chunked-prefill-size": 8192}), {}, {}),
    "sm120-gdn-flashinfer-prefill-chunk-default": (
        dict(QWEN35, **{"linear-attn-prefill-backend": "flashinfer"}), {}, {},
        dict(QWEN35, **{"linear-attn-prefill-backend": "flashinfer"}), {}, {"sm": "10.0"}),
    "hybrid-gdn-deterministic-inference": (
        dict(QWEN35, **{"enable-deterministic-inference": True}), {}, {},
        dict(MINIMAL, **{"enable-deterministic-inference": True}), {}, {}),
    "mamba-extra-buffer-lazy-spec-before-0.5.17": (
        dict(MINIMAL, **{"speculative-algorithm": "NEXTN", "mamba-radix-cache-strategy": "extra_buffer_lazy"}), {},
        {"version": "0.5.16"},
        dict(MINIMAL, **{"speculative-algorithm": "NEXTN", "mamba-radix-cache-strategy": "extra_buffer_lazy"}), {},
        {"version": "0.5.17"}),
    "mamba-extra-buffer-lazy-dflash-0.5.17": (
        dict(MINIMAL, **{"speculative-algorithm": "DFLASH", "mamba-radix-cache-strategy": "extra_buffer_lazy"}), {},
        {"version": "0.5.17"},
        dict(MINIMAL, **{"speculative-algorithm": "DFLASH", "mamba-radix-cache-strategy": "extra_buffer_lazy"}), {},
        {"version": "0.5.19"}),
    "removed-mamba-scheduler-strategy": (
        dict(MINIMAL, **{"mamba-scheduler-strategy": "extra_buffer"}), {}, {"version": "0.5.20"},
        dict(MINIMAL, **{"mamba-scheduler-strategy": "extra_buffer"}), {}, {"version": "0.5.19"}),
    "deprecated-mamba-scheduler-strategy": (
        dict(MINIMAL, **{"mamba-scheduler-strategy": "extra_buffer"}), {}, {"version": "0.5.14"},
        dict(MINIMAL, **{"mamba-scheduler-strategy": "extra_buffer"}), {}, {"version": "0.5.13"}),
    "mamba-radix-cache-strategy-before-0.5.14": (
        dict(MINIMAL, **{"mamba-radix-cache-strategy": "extra_buffer"}), {}, {"version": "0.5.14rc1"},
        dict(MINIMAL, **{"mamba-radix-cache-strategy": "extra_buffer"}), {}, {"version": "0.5.14"}),
    "removed-env-spec-v2": (
        MINIMAL, {"SGLANG_ENABLE_SPEC_V2": "1"}, {"version": "0.5.14"},
        MINIMAL, {"SGLANG_ENABLE_SPEC_V2": "1"}, {"version": "0.5.13.post1"}),
    "env-pcie-ipc-allreduce-before-0.5.21": (
        MINIMAL, {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": 1}, {"version": "0.5.21.dev0+g123"},
        MINIMAL, {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": 1}, {"version": "0.5.21"}),
    "deprecated-disable-cuda-graph": (
        dict(MINIMAL, **{"disable-cuda-graph": True}), {}, {"version": "0.5.17"},
        dict(MINIMAL, **{"disable-cuda-graph": True}), {}, {"version": "0.5.13"}),
    "deprecated-enable-dp-attention": (
        dict(MINIMAL, **{"enable-dp-attention": True}), {}, {"version": "0.5.22"},
        dict(MINIMAL, **{"enable-dp-attention": True}), {}, {"version": "0.5.21"}),
    "deprecated-enable-flashinfer-allreduce-fusion": (
        dict(MINIMAL, **{"enable_flashinfer_allreduce_fusion": True}), {}, {"version": "0.5.17"},
        dict(MINIMAL, **{"enable_flashinfer_allreduce_fusion": True}), {}, {"version": "0.5.13"}),
    "mamba-extra-buffer-spec-before-0.5.16": (
        dict(MINIMAL, **{"speculative-algorithm": "NEXTN", "mamba-radix-cache-strategy": "extra_buffer"}), {},
        {"version": "0.5.15.post1"},
        dict(MINIMAL, **{"speculative-algorithm": "NEXTN", "mamba-radix-cache-strategy": "extra_buffer"}), {},
        {"version": "0.5.16"}),
    "pcie-ipc-allreduce-deterministic": (
        dict(MINIMAL, **{"enable-deterministic-inference": True}), {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1"}, {},
        dict(MINIMAL, **{"enable-deterministic-inference": True}), {}, {}),
    "pcie-ipc-allreduce-world-size": (
        dict(MINIMAL, **{"tp-size": 6}), {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1"}, {},
        dict(MINIMAL, **{"tp-size": 8}), {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1"}, {}),
    "pcie-ipc-allreduce-dtype": (
        dict(MINIMAL, **{"dtype": "float16"}), {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1"}, {},
        dict(MINIMAL, **{"dtype": "bfloat16"}), {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1"}, {}),
    "spec-draft-without-num-steps": (
        dict(MINIMAL, **{"speculative-algorithm": "nextn", "speculative-eagle-topk": 1}), {}, {},
        dict(MINIMAL, **{"speculative-algorithm": "NGRAM", "speculative-num-draft-tokens": 2}), {}, {}),
    "spec-knobs-without-algorithm": (
        dict(MINIMAL, **{"speculative-num-draft-tokens": 2}), {}, {},
        dict(MINIMAL, **{"speculative-algorithm": "EAGLE", "speculative-num-steps": 2}), {}, {}),
    "mscclpp-not-installed": (
        dict(MINIMAL, **{"enable-mscclpp": True}), {}, {},
        dict(MINIMAL, **{"enable-mscclpp": True}), {}, {"packages": ["mscclpp==0.7.0"]}),
    "tp-exceeds-gpu-count": (
        dict(MINIMAL, **{"tp-size": 8, "pp-size": 2}), {}, {},
        dict(MINIMAL, **{"tp-size": 8, "pp-size": 2, "nnodes": 2}), {}, {}),
    # the parallel layout's other rules: test_sglang_flags_rules_topology.py
    "group-too-small-for-model": (
        dict(MINIMAL, **{"tp-size": 2, "dp-size": 4}), {}, {"memory": PRODUCTION_MEMORY},
        dict(MINIMAL, **{"tp-size": 4, "dp-size": 2}), {}, {"memory": PRODUCTION_MEMORY}),
    "dp-size-with-attn-dp": (
        dict(MINIMAL, **{"tp-size": 4, "dp-size": 2, "attn-dp-size": 2}), {}, {},
        dict(MINIMAL, **{"tp-size": 8, "attn-dp-size": 2}), {}, {}),
    "attn-dp-not-dividing-tp": (
        dict(MINIMAL, **{"tp-size": 8, "attn-dp-size": 3}), {}, {},
        dict(MINIMAL, **{"tp-size": 8, "dp-size": 4, "enable-dp-attention": True}), {}, {}),
    "pp-with-speculative-decoding": (
        dict(MINIMAL, **{"tp-size": 4, "pp-size": 2, "speculative-algorithm": "NEXTN"}), {}, {},
        dict(MINIMAL, **{"tp-size": 4, "pp-size": 2, "speculative-algorithm": "NEXTN"}),
        {"SGLANG_ENABLE_PP_SPEC": "1"}, {}),
    "pp-with-non-eagle-speculative": (
        dict(MINIMAL, **{"tp-size": 4, "pp-size": 2, "speculative-algorithm": "NGRAM"}), {}, {},
        dict(MINIMAL, **{"tp-size": 4, "pp-size": 2, "speculative-algorithm": "EAGLE"}), {}, {}),
    "model-path-missing": (
        {"tp": 8}, {}, {},
        {"model": "/data/m"}, {}, {}),
}


def test_every_offline_rule_has_a_case():
    offline = [i for i in RULE_IDS if i not in HOST_RULE_IDS | DEPLOY_RULE_IDS]
    assert sorted(offline) == sorted(CASES), "add a case to CASES for each new rule (and only rules)"


def test_host_rules_are_the_ones_the_script_implements():
    with open(os.path.join(ROLE, "files", "sglang_preflight.py"), encoding="utf-8") as fh:
        script = fh.read()
    assert HOST_RULE_IDS == {"host-model-path-missing", "host-mscclpp-not-importable",
                             "host-tp-exceeds-gpu-count", "host-quantization-mismatch",
                             "host-trtllm-mha-fp8-kv-checkpoint", "host-cpu-ranks-exceed-numa-nodes",
                             "host-cpu-omp-bind-groups"}
    # the checkpoint's two are plugins/module_utils/flags/checkpoint.py's (test_sglang_flags_checkpoint.py)
    for rid in HOST_RULE_IDS - {"host-quantization-mismatch", "host-trtllm-mha-fp8-kv-checkpoint"}:
        assert f'"{rid}"' in script
    # and the offline check never evaluates them
    assert not HOST_RULE_IDS & {f["rule"] for f in check({"tp": 64})}


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_fires(rule_id):
    args, env, kw, *_ = CASES[rule_id]
    found = by_rule(check(args, env, **kw))
    assert rule_id in found, found
    f = found[rule_id]
    rule = next(r for r in RULES if r["id"] == rule_id)
    assert f["severity"] == rule["severity"]
    assert f["status"] == "violation"
    assert f["fix"] and f["source"] and f["message"]
    assert "{" not in f["message"] and "{" not in f["fix"], "unfilled placeholder"


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_near_miss_does_not_fire(rule_id):
    *_, args, env, kw = CASES[rule_id]
    assert rule_id not in by_rule(check(args, env, **kw))


def test_rules_table_shape():
    F.sglang_flags_validate_rules(RULES)
    assert len(set(RULE_IDS)) == len(RULE_IDS)
    for rule in RULES:
        assert rule["source"].strip(), rule["id"]


# ---------------------------------------------------------------------------------------------
# the hand-tuned command
# ---------------------------------------------------------------------------------------------
def test_hand_tuned_command_is_rejected_on_0_5_23_naming_the_rename():
    found = check(TUNED_ARGS, TUNED_ENV)
    # and the autotuned fused-MoE GEMMs found corrupt on SM120 since (FlashInfer issue 4841)
    assert errors(found) == {"removed-mamba-scheduler-strategy", "spec-draft-without-num-steps",
                             "sm120-fused-moe-autotune"}
    rename = by_rule(found)["removed-mamba-scheduler-strategy"]
    assert rename["flag"] == "mamba-scheduler-strategy"
    assert "--mamba-radix-cache-strategy" in rename["message"]
    assert "mamba-radix-cache-strategy" in rename["fix"]
    assert "0.5.23" in rename["message"]
    assert by_rule(found)["removed-env-spec-v2"]["severity"] == "warning"
    steps = by_rule(found)["spec-draft-without-num-steps"]
    assert "speculative-num-steps 1" in steps["fix"]


def test_hand_tuned_command_on_0_5_14_only_warns_about_the_alias():
    found = check(TUNED_ARGS, TUNED_ENV, version="0.5.14")
    assert "removed-mamba-scheduler-strategy" not in by_rule(found)
    assert by_rule(found)["deprecated-mamba-scheduler-strategy"]["severity"] == "warning"


def test_corrected_command_is_accepted():
    # only the warning on the model's default context length (262144, SGLang issue 34239)
    found = check(FIXED_ARGS, FIXED_ENV)
    assert [(f["rule"], f["severity"]) for f in found] == [("qwen35-397b-nextn-context-default", "warning")]
    assert check(dict(FIXED_ARGS, **{"context-length": 131072}), FIXED_ENV) == []


def test_production_profile_is_accepted_on_0_5_23_sm120():
    path = os.path.join(ROOT, "inventories", "production", "group_vars", "blackwell", "sglang.yml")
    with open(path, encoding="utf-8") as fh:
        profile = yaml.safe_load(fh)
    assert profile["gpu_host_expected_sm"] == "12.0"
    found = check(profile["sglang_server_args"], profile["sglang_server_env"])
    assert found == []  # the context length is decided (131072: docs/blackwell-profile.md)
    # the PCIe levers are opt-in
    for lever in ("sglang_server_pcie_ipc_allreduce", "sglang_server_nccl_ib_disable",
                  "sglang_server_nccl_p2p_level_sys"):
        assert profile[lever] is False
    assert not profile["sglang_server_args"]["enable-mscclpp"]


def test_every_violation_is_listed_not_just_the_first():
    args = dict(TUNED_ARGS, **{"moe-runner-backend": "flashinfer_trtllm", "attention-backend": "fa3",
                              "enable-mscclpp": True, "tp": 16})
    assert errors(check(args, TUNED_ENV)) == {
        "removed-mamba-scheduler-strategy", "spec-draft-without-num-steps",
        "sm120-moe-flashinfer-trtllm", "sm120-hybrid-gdn-attention-backend", "sm120-attention-fa3",
        "mscclpp-not-installed", "tp-exceeds-gpu-count",
    }


"""Rules of the table about SM120 (RTX PRO 6000 Blackwell) judged the way playbooks/lint.yml judges
a host (input checks and catalog of the declared version, then the rules table; the
``lint`` helper of sglang_flags_rules_support.py), on every SGLang version that has a catalog."""

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.flags.report import sglang_flags_report
from sglang_flags_rules_support import MINIMAL, by_rule, check, errors, lint

VERSIONS = ["0.5.17", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"]
ATTENTION_FLAGS = ["attention-backend", "prefill-attention-backend", "decode-attention-backend", "mm-attention-backend"]


HOST = "gpu-node-02.example.invalid"
QWEN35 = "/data/models/Qwen3.5-397B-A17B-NVFP4"
SKIP = ["trtllm::fused_moe::gemm1", "trtllm::fused_moe::gemm2"]
PRODUCTION_SPEC = {"ml_env_packages": ["flashinfer-python==0.7.2", "sglang==0.5.23"], "cuda_toolkit_version": "13.0"}


def rules_of(found, severity="error"):
    return {f["rule"] for f in found if f["severity"] == severity}


def line(found, label, rule, severity="error"):
    """The report line of ``label [rule]`` for HOST, as playbooks/lint.yml prints it."""
    lines = [x for x in sglang_flags_report({HOST: found})[severity + "s"] if x.startswith(f"{HOST}: {label} [{rule}] ")]
    assert len(lines) == 1, (label, rule, found)
    assert " Fix: " in lines[0] and f"(source: docs/sglang-versions.md#" in lines[0], lines[0]
    return lines[0]


# --- fa3 and fa4 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("flag", ATTENTION_FLAGS)
def test_fa3_is_refused_on_sm120_in_every_cataloged_version(version, flag):
    found = lint(dict(MINIMAL, **{flag: "fa3"}), version=version)
    assert rules_of(found) == {"sm120-attention-fa3"}, found
    f = next(f for f in found if f["rule"] == "sm120-attention-fa3")
    assert f["flag"] == flag and "SM>=80 and SM<=90" in f["message"]
    assert f["source"] == "docs/sglang-versions.md#sm120-attention-fa3"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("flag", ATTENTION_FLAGS)
def test_fa4_is_refused_on_sm120_only_before_0_5_19(version, flag):
    found = lint(dict(MINIMAL, **{flag: "fa4"}), version=version)
    expected = {"sm120-attention-fa4-before-0.5.19"} if version == "0.5.17" else set()
    assert rules_of(found) == expected, found


def test_fa3_and_fa4_pass_off_sm120():
    assert rules_of(lint(dict(MINIMAL, **{"attention-backend": "fa3"}), sm="9.0")) == set()
    assert rules_of(lint(dict(MINIMAL, **{"attention-backend": "fa4"}), version="0.5.17", sm="10.0")) == set()


# --- each rule fires, rendered with host, flag, rule, source and fix, and has a near miss

@pytest.mark.parametrize("flag", ["ep-size", "ep", "expert-parallel-size"])
def test_expert_parallelism_with_qwen35_on_sm120_is_refused(flag):
    text = line(lint({"model-path": QWEN35, "tp-size": 8, flag: 8}), f"--{flag}", "sm120-qwen35-expert-parallel")
    assert "SGLang issue 21132" in text and "Fix: remove --" in text
    assert rules_of(lint({"model-path": QWEN35, "tp-size": 8, flag: 1})) == set()
    assert rules_of(lint({"model-path": "/data/models/Llama-3-70B", "tp-size": 8, flag: 8})) == set()
    assert rules_of(lint({"model-path": QWEN35, "tp-size": 8, flag: 8}, sm="9.0")) == set()


@pytest.mark.parametrize("context", [262144, 300000])
def test_nextn_at_the_262144_boundary_on_qwen35_397b_is_refused(context):
    args = {"model-path": QWEN35, "speculative-algorithm": "NEXTN", "context-length": context}
    text = line(lint(args), "--context-length", "qwen35-397b-nextn-context-262144")
    assert "SGLang issue 34239" in text and "e.g. 131072" in text
    found = lint(dict(args, **{"context-length": 131072}))
    assert rules_of(found) == set() and rules_of(found, "warning") == set()
    assert rules_of(lint({"model-path": QWEN35, "context-length": context})) == set()  # no speculation


def test_nextn_on_qwen35_397b_with_the_models_default_context_warns():
    found = lint({"model-path": QWEN35, "speculative-algorithm": "NEXTN"})
    assert rules_of(found) == set()
    text = line(found, "--speculative-algorithm", "qwen35-397b-nextn-context-default", "warning")
    assert "max_position_embeddings" in text and "262144" in text and "sglang_flags_waive" in text


def test_adaptive_speculation_on_a_hybrid_gdn_model_is_refused():
    args = {"model-path": QWEN35, "speculative-algorithm": "NEXTN", "context-length": 131072,
            "speculative-adaptive": True}
    text = line(lint(args), "--speculative-adaptive", "hybrid-gdn-speculative-adaptive")
    assert "SGLang issue 23330" in text and "speculative-num-steps" in text
    assert rules_of(lint(dict(args, **{"speculative-adaptive": False}))) == set()


@pytest.mark.parametrize("flag,value", [("enable-flashinfer-allreduce-fusion", True),
                                        ("flashinfer-allreduce-fusion-backend", "auto")])
def test_flashinfer_allreduce_fusion_on_sm120_warns_and_the_deprecation_agrees(flag, value):
    found = lint(dict(MINIMAL, **{flag: value}))
    assert rules_of(found) == set()
    text = line(found, f"--{flag}", "sm120-flashinfer-allreduce-fusion", "warning")
    assert "PR 32330" in text and "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE" in text
    if flag.startswith("enable"):
        deprecated = line(found, f"--{flag}", "deprecated-enable-flashinfer-allreduce-fusion", "warning")
        assert "sm120-flashinfer-allreduce-fusion" in deprecated
    assert "sm120-flashinfer-allreduce-fusion" not in rules_of(lint(dict(MINIMAL, **{flag: value}), sm="9.0"),
                                                               "warning")


def test_nvfp4_moe_with_a_flashinfer_before_its_sm120_fix_is_refused():
    args = {"model-path": QWEN35, "quantization": "modelopt_fp4", "moe-runner-backend": "flashinfer_cutlass",
            "fp4-gemm-backend": "flashinfer_cudnn", "context-length": 131072, "flashinfer-autotune-skip-ops": SKIP}
    old = {"ml_env_packages": ["flashinfer-python==0.6.5", "sglang==0.5.23"], "ml_env_min_versions":
           {"nvidia-cudnn-cu13": "9.10.2"}}
    text = line(lint(args, deploy=old), "ml_env_packages", "sm120-nvfp4-moe-flashinfer")
    assert "flashinfer-python==0.6.5" in text and "FlashInfer issue 2723" in text and "compute_120f" in text
    good = dict(PRODUCTION_SPEC, ml_env_min_versions={"nvidia-cudnn-cu13": "9.10.2"})
    assert rules_of(lint(args, deploy=good)) == set()


def test_fp4_gemm_rules_name_the_flashinfer_issues_and_versions():
    found = lint(dict(MINIMAL, **{"fp4-gemm-backend": "flashinfer_cutlass"}))
    text = line(found, "--fp4-gemm-backend", "sm120-fp4-gemm-cutlass")
    assert "FlashInfer issue 2577" in text and "0.6.3" in text and "#3398" in text and "0.6.12" in text
    text = line(lint(dict(MINIMAL, **{"quantization": "modelopt_fp4"})), "--quantization",
                "sm120-fp4-gemm-default", "warning")
    assert "FlashInfer issue 2577" in text


# --- SGLang PR 39807 (open): NVFP4 MoE and trtllm_mha on SM120 ------------------------------------

GOOD_SPEC = dict(PRODUCTION_SPEC, ml_env_min_versions={"nvidia-cudnn-cu13": "9.10.2"})


def warnings_of(args, **kw):
    """The warnings of a host whose ml_env spec is the production one (no deploy warning)."""
    return rules_of(lint(args, deploy=GOOD_SPEC, **kw), "warning")


NVFP4 = {"model-path": QWEN35, "fp4-gemm-backend": "flashinfer_cudnn", "context-length": 131072,
         "flashinfer-autotune-skip-ops": SKIP}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("quantization", ["modelopt_fp4", "modelopt_mixed"])
@pytest.mark.parametrize("moe", [None, "auto"])
def test_nvfp4_moe_left_to_auto_on_sm120_is_refused_in_every_cataloged_version(version, quantization, moe):
    args = dict(NVFP4, quantization=quantization)
    if moe:
        args["moe-runner-backend"] = moe
    found = lint(args, version=version)
    assert rules_of(found) == {"sm120-nvfp4-moe-runner-auto"}, found
    text = line(found, "--quantization", "sm120-nvfp4-moe-runner-auto")
    assert "SGLang PR 39807" in text and "NotImplementedError" in text and f"--quantization {quantization}" in text
    assert "Fix: set moe-runner-backend flashinfer_cutlass" in text
    assert rules_of(lint(dict(args, **{"moe-runner-backend": "flashinfer_cutlass"}), version=version)) == set()
    assert rules_of(lint(args, version=version, sm="10.0")) == set()  # SM100: the TRT-LLM MoE is its own


def test_trtllm_mha_with_the_checkpoints_kv_cache_dtype_warns_from_0_5_19():
    args = dict(NVFP4, **{"quantization": "modelopt_fp4", "moe-runner-backend": "flashinfer_cutlass",
                          "attention-backend": "trtllm_mha"})
    for version in ("0.5.19", "0.5.23"):
        found = lint(args, version=version)
        assert rules_of(found) == set(), found
        text = line(found, "--attention-backend", "sm120-trtllm-mha-fp8-kv-from-checkpoint", "warning")
        assert "kv_cache_quant_algo" in text and "SGLang PR 39807" in text and "CUDA-graph capture" in text
        assert "kv-cache-dtype bf16" in text
        same = lint(dict(args, **{"kv-cache-dtype": "auto"}), version=version)
        assert "sm120-trtllm-mha-fp8-kv-from-checkpoint" in rules_of(same, "warning")
        assert warnings_of(args, version=version) == {"sm120-trtllm-mha-fp8-kv-from-checkpoint"}
    # below the boundary trtllm_mha prefill is refused on SM120 altogether
    old = lint(args, version="0.5.17")
    assert rules_of(old) == {"sm120-trtllm-mha-prefill-before-0.5.19"}
    assert "sm120-trtllm-mha-fp8-kv-from-checkpoint" not in rules_of(old, "warning")
    # an explicit bf16 KV cache, a decode-only trtllm_mha, no ModelOpt checkpoint: nothing to say
    for near in ({"kv-cache-dtype": "bf16"}, {"attention-backend": "triton", "decode-attention-backend": "trtllm_mha"}):
        assert warnings_of(dict(args, **near)) == set()
    unquantized = {k: v for k, v in args.items() if k != "quantization"}
    assert warnings_of(unquantized) == set()
    # an explicit fp8_e4m3 stays the resolver's refusal (the existing rule), not this warning
    assert rules_of(lint(dict(args, **{"kv-cache-dtype": "fp8_e4m3"}))) == {"sm120-trtllm-mha-fp8-kv"}


# --- FlashInfer issue 4841 / SGLang issue 34629: autotuned fused-MoE tactics --------------------

@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("skip", [None, ["trtllm::fused_moe::gemm1"], ["fp4_gemm"]])
def test_autotuned_fused_moe_gemms_on_sm120_are_refused(version, skip):
    args = dict(NVFP4, **{"quantization": "modelopt_fp4", "moe-runner-backend": "flashinfer_cutlass"})
    args.pop("flashinfer-autotune-skip-ops")
    if skip:
        args["flashinfer-autotune-skip-ops"] = skip
    found = lint(args, version=version)
    assert rules_of(found) == {"sm120-fused-moe-autotune"}, found
    text = line(found, "--flashinfer-autotune-skip-ops", "sm120-fused-moe-autotune")
    assert "FlashInfer issue 4841" in text and "SGLang issue 34629" in text and "trtllm::fused_moe::gemm2" in text
    assert "Fix: set flashinfer-autotune-skip-ops [trtllm::fused_moe::gemm1, trtllm::fused_moe::gemm2]" in text
    # the near misses: both GEMMs skipped (with others), autotuning off, deterministic inference
    # (SGLang does not autotune then), another MoE runner, another GPU
    for near in ({"flashinfer-autotune-skip-ops": SKIP + ["fp4_gemm"]}, {"disable-flashinfer-autotune": True},
                 {"enable-deterministic-inference": True}, {"moe-runner-backend": "triton"}):
        assert "sm120-fused-moe-autotune" not in rules_of(lint(dict(args, **near), version=version)), near
    assert rules_of(lint(args, version=version, sm="10.0")) == set()


def test_autotuned_fused_moe_rule_starts_with_the_oldest_catalog_that_has_the_flag():
    args = {"model-path": QWEN35, "quantization": "modelopt_fp4", "moe-runner-backend": "flashinfer_cutlass"}
    assert "sm120-fused-moe-autotune" in errors(check(args, version="0.5.17"))
    assert "sm120-fused-moe-autotune" not in by_rule(check(args, version="0.5.16"))

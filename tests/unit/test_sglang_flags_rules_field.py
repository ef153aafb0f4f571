"""The December rules for PCIe-only SM120 hosts: what each says, where its version
boundary lies, and what the production profile and its sweep make of them. The fire/near-miss
pair of each is in test_sglang_flags_rules.py (CASES); the deploy rules of FlashInfer's kernel
packages in test_flashinfer_kernels.py; the facts `make drift` reads again in
test_sglang_drift_watch.py."""

import os

import pytest
import yaml
from sglang_flags_rules_support import MINIMAL, ROOT, by_rule, check, lint

QWEN35 = {"model-path": "/data/models/Qwen3.5-397B-A17B-NVFP4"}
CATALOG_VERSIONS = ("0.5.17", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")


def production():
    base = os.path.join(ROOT, "inventories", "production", "group_vars", "blackwell")
    with open(os.path.join(base, "sglang.yml"), encoding="utf-8") as fh:
        prof = yaml.safe_load(fh)
    args = {k: v for k, v in prof["sglang_server_args"].items()}
    args["model-path"] = "/data/models/Qwen3.5-397B-A17B-NVFP4/0123"
    return args


# --- all-reduce on PCIe-only GPUs --------------------------------------------------------------

@pytest.mark.parametrize("version", CATALOG_VERSIONS)
def test_custom_all_reduce_on_more_than_two_pcie_gpus_says_nccl_runs_in_every_version(version):
    found = by_rule(check(dict(MINIMAL, **{"tp-size": 4}), version=version))
    hit = found["sm120-custom-all-reduce-pcie"]
    assert hit["severity"] == "warning"
    for part in ("--tp-size 4", "refuses more than two PCIe-only GPUs", "runs on NCCL",
                 "disable_custom_all_reduce false"):
        assert part in hit["message"]
    assert "disable-custom-all-reduce: true" in hit["fix"]


def test_two_gpus_and_an_nvlink_sm_keep_the_custom_all_reduce():
    assert "sm120-custom-all-reduce-pcie" not in by_rule(check(dict(MINIMAL, **{"tp-size": 2})))
    assert "sm120-custom-all-reduce-pcie" not in by_rule(check(dict(MINIMAL, **{"tp-size": 8}), sm="9.0"))


@pytest.mark.parametrize("version", CATALOG_VERSIONS)
def test_torch_symm_mem_on_sm120_names_the_missing_sizes_and_the_open_pr(version):
    hit = by_rule(check(dict(MINIMAL, **{"enable-torch-symm-mem": True}), version=version))["sm120-torch-symm-mem"]
    for part in ("Device capability 12 not supported", "no multicast", "SGLang PR 30364", "vLLM"):
        assert part in hit["message"]
    assert "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE=1" in hit["fix"]
    assert "sm120-torch-symm-mem" not in by_rule(check(dict(MINIMAL, **{"enable-torch-symm-mem": True}), sm="10.0"))


def test_the_production_profile_says_what_runs_its_all_reduce():
    args = production()
    assert args["disable-custom-all-reduce"] is True and args["tp-size"] == 8
    found = by_rule(lint(args))
    assert "sm120-custom-all-reduce-pcie" not in found and "sm120-torch-symm-mem" not in found
    with open(os.path.join(ROOT, "inventories", "production", "group_vars", "blackwell", "verify.yml"),
              encoding="utf-8") as fh:
        assert yaml.safe_load(fh)["sglang_verify_expect_resolved"]["disable_custom_all_reduce"] is True


# --- hybrid models' cache strategy -------------------------------------------------------------

def test_extra_buffer_lazy_with_speculation_is_refused_before_0_5_17_only():
    args = dict(QWEN35, **{"speculative-algorithm": "NEXTN", "speculative-num-steps": 1,
                           "mamba-radix-cache-strategy": "extra_buffer_lazy"})
    hit = by_rule(check(args, version="0.5.16"))["mamba-extra-buffer-lazy-spec-before-0.5.17"]
    assert hit["severity"] == "error" and "extra_buffer_lazy unsupported with spec." in hit["message"]
    assert "PR 30437" in hit["message"] and ">= 0.5.17" in hit["fix"]
    for version in ("0.5.17", "0.5.23"):
        found = by_rule(check(args, version=version))
        assert "mamba-extra-buffer-lazy-spec-before-0.5.17" not in found
        assert "mamba-extra-buffer-lazy-dflash-0.5.17" not in found
    # without speculation the lazy strategy was fine before 0.5.17 too
    assert "mamba-extra-buffer-lazy-spec-before-0.5.17" not in by_rule(
        check(dict(QWEN35, **{"mamba-radix-cache-strategy": "extra_buffer_lazy"}), version="0.5.16"))


def test_extra_buffer_lazy_with_dflash_is_refused_in_0_5_17_and_not_from_0_5_19():
    args = dict(MINIMAL, **{"speculative-algorithm": "DFLASH", "mamba-radix-cache-strategy": "extra_buffer_lazy"})
    assert "mamba-extra-buffer-lazy-dflash-0.5.17" in by_rule(check(args, version="0.5.17"))
    assert "mamba-extra-buffer-lazy-dflash-0.5.17" not in by_rule(check(args, version="0.5.19"))


def test_no_buffer_on_a_hybrid_model_warns_that_prefixes_are_not_reused():
    hit = by_rule(check(dict(QWEN35, **{"mamba-radix-cache-strategy": "no_buffer"})))["hybrid-gdn-mamba-no-buffer"]
    assert hit["severity"] == "warning"
    for part in ("prefill in full", "dynamo PR 10999", "disable-overlap-schedule"):
        assert part in hit["message"]
    assert "hybrid-gdn-mamba-no-buffer" not in by_rule(check(dict(MINIMAL, **{"mamba-radix-cache-strategy": "no_buffer"})))


# --- FlashInfer's Gated-DeltaNet prefill on SM120 (SGLang PR 36357, open) ------------------------

GDN_CANDIDATE = {"linear-attn-prefill-backend": "flashinfer", "mamba-ssm-dtype": "float32",
                 "chunked-prefill-size": 8192}


def test_the_sweep_candidates_conditions_pass_and_each_break_is_named():
    base = dict(QWEN35, **GDN_CANDIDATE)
    assert not {r for r in by_rule(check(base)) if r.startswith("sm120-gdn-flashinfer")}
    cases = {"mamba-ssm-dtype": ("bfloat16", "sm120-gdn-flashinfer-prefill-state-dtype", "error"),
             "linear-attn-decode-backend": ("flashinfer", "sm120-gdn-flashinfer-prefill-decode", "error"),
             "chunked-prefill-size": (16384, "sm120-gdn-flashinfer-prefill-chunk", "warning")}
    for flag, (value, rule, severity) in cases.items():
        hit = by_rule(check(dict(base, **{flag: value})))[rule]
        assert hit["severity"] == severity
        assert "SGLang PR 36357" in hit["message"] or "SGLang issue 36532" in hit["message"]
    unset = {k: v for k, v in base.items() if k != "chunked-prefill-size"}
    assert by_rule(check(unset))["sm120-gdn-flashinfer-prefill-chunk-default"]["severity"] == "warning"


@pytest.mark.parametrize("version", CATALOG_VERSIONS)
def test_the_gdn_prefill_rules_hold_in_every_catalog_and_only_on_sm120(version):
    args = dict(QWEN35, **{"linear-attn-prefill-backend": "flashinfer", "mamba-ssm-dtype": "bfloat16"})
    assert "sm120-gdn-flashinfer-prefill-state-dtype" in by_rule(check(args, version=version))
    assert "sm120-gdn-flashinfer-prefill-state-dtype" not in by_rule(check(args, version=version, sm="10.0"))


# --- deterministic inference ---------------------------------------------------------------------

def test_deterministic_inference_on_the_model_points_at_the_quality_gate():
    hit = by_rule(check(dict(QWEN35, **{"enable-deterministic-inference": True})))["hybrid-gdn-deterministic-inference"]
    assert hit["severity"] == "warning" and "SGLang issue 31261" in hit["message"]
    assert hit["source"] == "docs/quality-gate.md#why-not-a-deterministic-mode"

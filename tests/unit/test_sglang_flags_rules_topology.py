"""The parallel layout rules (roles/sglang_flags/vars/main.yml, docs/blackwell-profile.md,
Topology) on the production host: 8 RTX PRO 6000 Blackwell (97887 MiB each) and the
Qwen3.5-397B-A17B-NVFP4 checkpoint's stated weight size. GPUs are counted as SGLang 0.5.23 does
(dp x tp x pp, attention DP inside tp), a tp x pp group must hold the weights with room for the
KV cache, and the combinations SGLang 0.5.23 refuses at start are refused before it."""

import os

import pytest
import yaml
from ansible_collections.sglang.deploy.plugins.module_utils.flags import gpus as G
from ansible_collections.sglang.deploy.plugins.module_utils.flags import memory as M
from sglang_flags_rules_support import MINIMAL, ROOT, by_rule, check, errors

BLACKWELL_DIR = os.path.join(ROOT, "inventories", "production", "group_vars", "blackwell")
TOPOLOGY_RULES = {"tp-exceeds-gpu-count", "group-too-small-for-model", "dp-size-with-attn-dp",
                  "attn-dp-not-dividing-tp", "pp-with-speculative-decoding", "pp-with-non-eagle-speculative"}


def _yaml(name):
    with open(os.path.join(BLACKWELL_DIR, name), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


CHECKPOINT = _yaml("checkpoint.yml")
PROFILE = _yaml("sglang.yml")
WEIGHT = CHECKPOINT["blackwell_checkpoints"][CHECKPOINT["blackwell_checkpoint"]]["weight_bytes"]
MEMORY = {"gpu_memory_mib": 97887, "model_weight_bytes": WEIGHT, "min_kv_cache_gib": 4}
NEXTN = {"speculative-algorithm": "NEXTN", "speculative-num-steps": 1, "speculative-eagle-topk": 1,
         "speculative-num-draft-tokens": 2}


def layout_errors(args, env=None, **kw):
    kw.setdefault("memory", MEMORY)
    return errors(check(dict(MINIMAL, **args), env, **kw)) & TOPOLOGY_RULES


def test_the_checkpoint_states_a_little_over_200_gb():
    assert 200e9 < WEIGHT < 250e9
    assert "sglang_flags_model_weight_bytes" in CHECKPOINT


@pytest.mark.parametrize("args", [
    {"tp-size": 8},
    {"tp-size": 8, "dp-size": 1},
    {"tp-size": 4, "dp-size": 2},
    {"tp-size": 4, "pp-size": 2},                 # no speculative decoding
    {"tp-size": 8, "attn-dp-size": 8},            # attention DP inside tp: 8 GPUs
    {"tp-size": 8, "dp-size": 4, "enable-dp-attention": True},  # read as attn-dp-size 4
    {"tp-size": 4, "dp-size": 2, **NEXTN},
])
def test_layouts_that_run_on_8_gpus_are_accepted(args):
    assert layout_errors(args) == set()


def test_the_production_profile_is_accepted_with_its_memory_figures():
    args = PROFILE["sglang_server_args"]
    assert check(args, PROFILE["sglang_server_env"], memory=MEMORY) == []


def test_tp4_dp4_is_refused_for_the_gpu_count_naming_the_figure_and_the_fix():
    found = by_rule(check(dict(MINIMAL, **{"tp-size": 4, "dp-size": 4}), memory=MEMORY))
    assert set(found) & TOPOLOGY_RULES == {"tp-exceeds-gpu-count"}
    f = found["tp-exceeds-gpu-count"]
    assert f["severity"] == "error" and f["flag"] == "tp-size"
    assert "tp-size 4 x pp-size 1 x dp-size 4 = 16 GPUs" in f["message"]
    assert "the host has 8" in f["message"]
    assert "tp-size 4 with dp-size 2" in f["fix"]


def test_dp_attention_does_not_multiply_tp():
    assert G.gpus_needed({"tp-size": 8, "dp-size": 8, "enable-dp-attention": True}) == 8
    assert G.gpus_needed({"tp-size": 8, "attn-dp-size": 8}) == 8
    assert G.gpus_needed({"tp-size": 8, "dp-size": 2}) == 16
    assert G.gpus_needed({"tp-size": 8, "pp-size": 2, "nnodes": 2}) == 8
    assert layout_errors({"tp-size": 8, "dp-size": 2}) == {"tp-exceeds-gpu-count"}


def test_tp2_dp4_is_refused_for_memory_naming_the_figures():
    found = by_rule(check(dict(MINIMAL, **{"tp-size": 2, "dp-size": 4}), memory=MEMORY))
    assert set(found) & TOPOLOGY_RULES == {"group-too-small-for-model"}  # 2 x 4 = 8 GPUs: the count fits
    f = found["group-too-small-for-model"]
    assert f["severity"] == "error" and f["flag"] == "tp-size" and f["value"] == 2
    assert "tp-size 2 x pp-size 1 = 2 GPUs cannot hold the model" in f["message"]
    assert "214.2 GiB of weights" in f["message"] and "107.1 GiB a GPU" in f["message"]
    assert "97887 MiB" in f["message"] and "0.895" in f["message"]
    assert "at least 4 GPUs" in f["fix"]


def test_memory_fraction_given_is_the_one_judged():
    # tp 4: 53.5 GiB a GPU; 0.6 of 95.6 GiB leaves 57.4, less than 53.5 + 4
    assert layout_errors({"tp-size": 4, "dp-size": 2, "mem-fraction-static": 0.6}) == {"group-too-small-for-model"}
    assert layout_errors({"tp-size": 4, "dp-size": 2, "mem-fraction-static": 0.7}) == set()
    # pp shards the weights too
    assert "group-too-small-for-model" not in layout_errors({"tp-size": 2, "pp-size": 2, "dp-size": 2})


def test_default_fraction_is_sglangs_largest():
    assert M.mem_fraction({}, 97887)[0] == 0.895  # (97887 - 10240) / 97887
    assert M.mem_fraction({}, 24576)[0] == round((24576 - 3584 - 128) / 24576, 3)


def test_memory_is_judged_only_with_a_stated_weight_and_warns_without_the_gpu():
    assert "group-too-small-for-model" not in by_rule(check(dict(MINIMAL, **{"tp-size": 2})))
    f = by_rule(check(dict(MINIMAL, **{"tp-size": 2}), memory={"model_weight_bytes": WEIGHT}))
    assert f["group-too-small-for-model"]["severity"] == "warning"
    assert f["group-too-small-for-model"]["status"] == "unknown-gpu-memory"


def test_pp_with_nextn_is_refused_as_sglang_0_5_23_does():
    found = by_rule(check(dict(MINIMAL, **{"tp-size": 4, "pp-size": 2}, **NEXTN), memory=MEMORY))
    assert set(found) & TOPOLOGY_RULES == {"pp-with-speculative-decoding"}
    f = found["pp-with-speculative-decoding"]
    assert f["value"] == "NEXTN" and "pp-size 2" in f["message"]
    assert "check_pipeline_parallel_compat" in f["message"] and "pp-size 1" in f["fix"]
    # a prefill node, or SGLANG_ENABLE_PP_SPEC, is what SGLang accepts
    assert layout_errors({"tp-size": 4, "pp-size": 2, "disaggregation-mode": "prefill", **NEXTN}) == set()
    assert layout_errors({"tp-size": 4, "pp-size": 2, **NEXTN}, {"SGLANG_ENABLE_PP_SPEC": "1"}) == set()
    assert layout_errors({"tp-size": 4, "pp-size": 2, **NEXTN},
                         {"SGLANG_ENABLE_PP_SPEC": "0"}) == {"pp-with-speculative-decoding"}


def test_pp_with_a_non_eagle_algorithm_is_refused_even_with_the_switch():
    assert layout_errors({"tp-size": 4, "pp-size": 2, "speculative-algorithm": "EAGLE3"},
                         {"SGLANG_ENABLE_PP_SPEC": "1"}) == {"pp-with-non-eagle-speculative"}


def test_dp_replicas_with_attention_dp_are_refused():
    assert layout_errors({"tp-size": 4, "dp-size": 2, "attn-dp-size": 4}) == {"dp-size-with-attn-dp"}
    # the deprecated switch with attn-dp-size given keeps dp-size as replicas: refused too
    assert "dp-size-with-attn-dp" in layout_errors(
        {"tp-size": 4, "dp-size": 2, "attn-dp-size": 2, "enable-dp-attention": True})


def test_attention_dp_must_divide_tp():
    f = by_rule(check(dict(MINIMAL, **{"tp-size": 8, "dp-size": 3, "enable-dp-attention": True}),
                      memory=MEMORY))["attn-dp-not-dividing-tp"]
    assert f["flag"] == "dp-size" and f["value"] == 3 and "tp-size 8" in f["message"]


def test_the_rules_point_at_the_topology_section():
    with open(os.path.join(ROOT, "docs", "blackwell-profile.md"), encoding="utf-8") as fh:
        text = fh.read()
    assert "\n### Topology\n" in text
    from sglang_flags_rules_support import RULES
    for rule in RULES:
        if rule["id"] in TOPOLOGY_RULES:
            assert rule["source"] == "docs/blackwell-profile.md#topology"
            assert f"`{rule['id']}`" in text

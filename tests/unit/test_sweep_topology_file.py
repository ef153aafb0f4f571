"""sweeps/blackwell-topology.yml judged offline on the production host: each candidate is the
profile's flags overlaid by its own (plugins/module_utils/sweep/plan.py's expand, as the
sweep plans it), then the input checks with the 0.5.23 catalog and the rules table with the host's
facts (8 RTX PRO 6000 Blackwell, 97887 MiB each, SM120) and the checkpoint's stated weight size,
the way tests/unit/test_sglang_flags_rules_topology.py judges a layout. tp 8 and tp 4 x dp 2
pass; tp 4 x pp 2 is refused with the profile's NEXTN and accepted with speculative decoding off
(as the file's comments say); tp 2 x dp 4 is refused because a pair cannot hold the model."""

import os
import re

import pytest
import yaml

from ansible_collections.sglang.deploy.plugins.module_utils.flags import catalog as C
from ansible_collections.sglang.deploy.plugins.module_utils.flags import inputs as I
from ansible_collections.sglang.deploy.plugins.module_utils.sweep import objective
from ansible_collections.sglang.deploy.plugins.module_utils.sweep import plan
from sglang_flags_rules_support import RULES, ROOT, by_rule, check

VERSION = "0.5.23"
TOPOLOGY_RULES = {"tp-exceeds-gpu-count", "group-too-small-for-model", "dp-size-with-attn-dp",
                  "attn-dp-not-dividing-tp", "pp-with-speculative-decoding", "pp-with-non-eagle-speculative"}


def _yaml(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


SWEEP = _yaml("sweeps", "blackwell-topology.yml")
BLACKWELL = os.path.join("inventories", "production", "group_vars", "blackwell")
PROFILE = _yaml(BLACKWELL, "sglang.yml")
CHECKPOINT = _yaml(BLACKWELL, "checkpoint.yml")
DEFAULTS = _yaml("roles", "sglang_flags", "defaults", "main.yml")
# what tasks/evaluate.yml passes the rules without gathered facts: the GPU's known size by the
# profile's expected name, the chosen checkpoint's weight size, the KV reserve
MEMORY = {
    "gpu_memory_mib": DEFAULTS["sglang_flags_gpu_memory_by_name"][PROFILE["gpu_host_expected_gpu_name"]],
    "model_weight_bytes": CHECKPOINT["blackwell_checkpoints"][CHECKPOINT["blackwell_checkpoint"]]["weight_bytes"],
    "min_kv_cache_gib": DEFAULTS["sglang_flags_min_kv_cache_gib"],
}
HOST = dict(sm=PROFILE["gpu_host_expected_sm"], version=VERSION, gpu_count=PROFILE["gpu_host_expected_gpu_count"])


def candidates():
    return plan.expand(PROFILE["sglang_server_args"], PROFILE.get("sglang_server_env"), SWEEP.get("sweep_base"),
                       SWEEP.get("sweep_axes"), SWEEP.get("sweep_candidates"))


def findings(cand):
    """Every finding of one candidate: the input checks, then the rules on the flags as argparse
    reads them (tasks/evaluate.yml's order)."""
    catalog = C.sglang_flags_catalog_of(VERSION)
    found = I.sglang_flags_inputs(cand["args"], env=cand["env"], catalog=catalog, rules=RULES, version=VERSION)
    return found + check(I.sglang_flags_expand(cand["args"], catalog), cand["env"], memory=MEMORY, **HOST)


def refused(cand):
    return sorted({f["rule"] for f in findings(cand) if f["severity"] == "error"})


VERDICTS = {
    "baseline": [],
    "tp 4 x dp 2": [],
    "tp 4 x pp 2 with NEXTN (refused)": ["pp-with-speculative-decoding"],
    "tp 4 x pp 2, no speculative decoding": [],
    "tp 2 x dp 4 (refused)": ["group-too-small-for-model"],
}


def test_the_host_is_the_production_one():
    assert HOST["gpu_count"] == 8 and HOST["sm"] == "12.0"
    assert PROFILE["gpu_host_expected_gpu_name"] == "RTX PRO 6000 Blackwell" and MEMORY["gpu_memory_mib"] == 97887
    assert 200e9 < MEMORY["model_weight_bytes"] < 250e9


def test_the_file_uses_only_the_documented_variables():
    spec = _yaml("roles", "sglang_sweep", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(SWEEP) <= set(spec)
    assert SWEEP["sweep_name"] == "blackwell-topology"


def test_each_candidate_gets_the_verdict_its_comment_states():
    cands = candidates()
    assert [c["label"] for c in cands] == list(VERDICTS)
    assert dict((c["label"], refused(c)) for c in cands) == VERDICTS


@pytest.mark.parametrize("label, layout", [
    ("baseline", {"tp-size": 8}),
    ("tp 4 x dp 2", {"tp-size": 4, "dp-size": 2}),
    ("tp 4 x pp 2 with NEXTN (refused)", {"tp-size": 4, "pp-size": 2}),
    ("tp 4 x pp 2, no speculative decoding", {"tp-size": 4, "pp-size": 2}),
    ("tp 2 x dp 4 (refused)", {"tp-size": 2, "dp-size": 4}),
])
def test_each_candidate_is_the_profile_with_its_layout(label, layout):
    cand = dict((c["label"], c) for c in candidates())[label]
    for flag, value in layout.items():
        assert cand["args"][flag] == value
    for flag in {"dp-size", "pp-size"} - set(layout):
        assert flag not in cand["args"]
    # the rest of the production profile travels with every candidate
    assert cand["args"]["moe-runner-backend"] == "flashinfer_cutlass"
    assert cand["args"]["quantization"] == "modelopt_fp4"
    spec = "speculative-algorithm" in cand["args"]
    assert spec == (label != "tp 4 x pp 2, no speculative decoding")
    if not spec:
        assert not any(flag.startswith("speculative-") for flag in cand["args"])


def test_the_refusals_name_the_figure_and_the_fix():
    cands = dict((c["label"], c) for c in candidates())
    small = by_rule(findings(cands["tp 2 x dp 4 (refused)"]))["group-too-small-for-model"]
    assert "tp-size 2 x pp-size 1 = 2 GPUs cannot hold the model" in small["message"]
    assert "107.1 GiB a GPU" in small["message"] and "at least 4 GPUs" in small["fix"]
    pp = by_rule(findings(cands["tp 4 x pp 2 with NEXTN (refused)"]))["pp-with-speculative-decoding"]
    assert pp["value"] == "NEXTN" and "pp-size 2" in pp["message"]
    # the switch SGLang reads would let it start: the file refuses it on purpose
    with_switch = dict(cands["tp 4 x pp 2 with NEXTN (refused)"], env={"SGLANG_ENABLE_PP_SPEC": "1"})
    assert not {f["rule"] for f in findings(with_switch) if f["severity"] == "error"} & TOPOLOGY_RULES


def test_the_started_candidates_fit_the_time_budget():
    started = [label for label, rules in VERDICTS.items() if not rules]
    assert len(started) == 3
    assert len(started) * SWEEP["sweep_candidate_timeout"] <= SWEEP["sweep_time_budget"]


def test_the_objective_and_the_commented_throughput_objective_are_accepted_by_the_plan():
    """The file ranks single_stream; the throughput objective its comments show, uncommented,
    is one the plan accepts against the file's sweep_concurrency, with the limits the comment
    derives from the profile's verify gates."""
    assert objective.resolve(SWEEP["sweep_objective"], SWEEP.get("sweep_objective_concurrency"),
                             SWEEP.get("sweep_latency_target"), SWEEP["sweep_concurrency"]) == {
        "name": "single_stream", "concurrency": 32, "latency_target": {}}
    with open(os.path.join(ROOT, "sweeps", "blackwell-topology.yml"), encoding="utf-8") as fh:
        shown = [m.group(1) for m in re.finditer(r"^#\s+((?:sweep_objective|sweep_latency_target)\w*:.*)$",
                                                 fh.read(), re.M)]
    example = yaml.safe_load("\n".join(shown))
    assert set(example) == {"sweep_objective", "sweep_objective_concurrency", "sweep_latency_target"}
    resolved = objective.resolve(example["sweep_objective"], example["sweep_objective_concurrency"],
                                 example["sweep_latency_target"], SWEEP["sweep_concurrency"])
    assert resolved["name"] == "throughput" and resolved["concurrency"] == max(SWEEP["sweep_concurrency"])
    verify = _yaml(BLACKWELL, "verify.yml")
    assert resolved["latency_target"] == {"ttft_p99_ms": verify["sglang_verify_max_ttft_ms"],
                                          "itl_median_ms": round(1000 / verify["sglang_verify_min_decode_tps"])}

"""The host rule host-quantization-mismatch (plugins/module_utils/flags/checkpoint.py): before a
restart, tasks/host_validate.yml reads the checkpoint's config.json and hf_quant_config.json at the
argv's --model-path and refuses a --quantization flag that does not match what they declare.
The files are the fixtures of tests/fixtures/flags/quant, passed as the slurp loop returns them."""

import base64
import os

import pytest
import yaml
from sglang_flags_rules_support import ROLE, ROOT, RULES
from ansible_collections.sglang.deploy.plugins.module_utils.flags import checkpoint as K
from ansible_collections.sglang.deploy.plugins.module_utils.flags.report import sglang_flags_format

QUANT = os.path.join(ROOT, "tests", "fixtures", "flags", "quant")
HOST = "gpu-node-02.example.invalid"


def slurped(name):
    """The results of host_validate.yml's slurp loop over the two files of fixture ``name``."""
    out = []
    for item in ("config.json", "hf_quant_config.json"):
        path = os.path.join(QUANT, name, item)
        if os.path.exists(path):
            with open(path, "rb") as fh:
                out.append({"item": item, "content": base64.b64encode(fh.read()).decode(), "encoding": "base64"})
        else:
            out.append({"item": item, "failed": True, "msg": f"file not found: {path}"})
    return out


def argv(quantization=None, model="/data/models/Qwen3.5-397B-A17B-NVFP4-V2/abc"):
    out = ["--model-path", model, "--tp-size", "8"]
    if quantization:
        out += ["--quantization", quantization]
    return out


def texts(name):
    files = K._slurped(slurped(name))
    return files.get("config.json", ""), files.get("hf_quant_config.json", "")


@pytest.mark.parametrize("name,declared,where", [
    ("nvfp4-v1", "modelopt NVFP4", "hf_quant_config.json quantization.quant_algo"),
    ("mixed-v2", "modelopt MIXED_PRECISION", "hf_quant_config.json quantization.quant_algo"),
    ("config-only", "modelopt NVFP4", "config.json quantization_config.quant_algo"),
    ("unquantized", None, None),
])
def test_the_checkpoints_own_quantization_is_read(name, declared, where):
    assert K.checkpoint_quantization(*texts(name)) == (declared, where)


def test_broken_files_read_as_no_quantization():
    assert K.checkpoint_quantization("{not json", '["a list"]') == (None, None)
    assert K.checkpoint_quantization('{"quantization_config": {"quant_method": "fp8"}}') == (
        "fp8", "config.json quantization_config.quant_method")


@pytest.mark.parametrize("name,flag,fits", [
    ("nvfp4-v1", "modelopt_fp4", None),
    ("nvfp4-v1", "modelopt", None),
    ("nvfp4-v1", None, None),  # unset: SGLang takes the checkpoint's own
    ("nvfp4-v1", "modelopt_mixed", ("modelopt_fp4", "modelopt")),
    ("mixed-v2", "modelopt_mixed", None),
    ("mixed-v2", "modelopt_fp4", ("modelopt_mixed", "modelopt")),
    ("config-only", "modelopt_fp8", ("modelopt_fp4", "modelopt")),
    ("unquantized", "modelopt_fp4", ("none (leave quantization unset)",)),
    ("unquantized", "fp8", None),  # online quantization: SGLang's to judge
])
def test_a_flag_that_does_not_fit_the_checkpoint_is_named(name, flag, fits):
    declared, _ = K.checkpoint_quantization(*texts(name))
    assert K.quantization_fits(declared, flag) == fits


def test_other_methods_and_unknown_algorithms_are_left_to_sglang():
    assert K.quantization_fits("awq", "modelopt_fp4") is None
    assert K.quantization_fits("modelopt W4A8_AWQ", "modelopt_fp4") is None


def test_the_model_path_and_flag_are_read_from_the_argv_as_sglang_parses_it():
    assert K.sglang_flags_checkpoint_model_path(["--model-path", "/m", "--tp", "8"]) == "/m"
    assert K.sglang_flags_checkpoint_model_path(["--model=/n"]) == "/n"
    assert K.sglang_flags_checkpoint_model_path(["--tp", "8"]) == ""
    assert K._argv_value(["--quantization=modelopt_fp4"], ("--quantization",)) == "modelopt_fp4"


def test_the_error_names_host_both_values_the_file_and_the_fix():
    found = K.sglang_flags_checkpoint_findings(argv("modelopt_fp4"), slurped("mixed-v2"), RULES)
    assert [(f["rule"], f["severity"], f["flag"]) for f in found] == [
        ("host-quantization-mismatch", "error", "quantization")]
    (text,) = sglang_flags_format(found, HOST)
    assert text.startswith(f"{HOST}: --quantization [host-quantization-mismatch] --quantization modelopt_fp4 ")
    assert "at /data/models/Qwen3.5-397B-A17B-NVFP4-V2/abc" in text
    assert "hf_quant_config.json quantization.quant_algo says modelopt MIXED_PRECISION" in text
    assert "Fix: set quantization to modelopt_mixed or modelopt" in text
    assert "(source: docs/sglang-versions.md#host-quantization-mismatch)" in text


def test_a_matching_flag_a_missing_config_and_a_waiver_do_not_fail():
    assert K.sglang_flags_checkpoint_findings(argv("modelopt_mixed"), slurped("mixed-v2"), RULES) == []
    assert K.sglang_flags_checkpoint_findings(argv("modelopt_fp4"), slurped("nvfp4-v1"), RULES) == []
    assert K.sglang_flags_checkpoint_findings(argv(), slurped("mixed-v2"), RULES) == []
    assert K.sglang_flags_checkpoint_findings(argv("modelopt_fp4"), slurped("no-such-model"), RULES) == []
    assert K.sglang_flags_checkpoint_findings(argv("modelopt_fp4"), [], RULES) == []
    waived = K.sglang_flags_checkpoint_findings(argv("modelopt_fp4"), slurped("mixed-v2"), RULES,
                                                ["host-quantization-mismatch"])
    assert [(f["severity"], f["status"]) for f in waived] == [("warning", "waived")]


def test_host_validate_reads_the_files_and_refuses_before_sglang_is_asked():
    with open(os.path.join(ROLE, "tasks", "host_validate.yml"), encoding="utf-8") as fh:
        text = fh.read()
    tasks = next(t for t in yaml.safe_load(text) if "block" in t)["block"]
    names = [t["name"] for t in tasks]
    read = names.index("Read the checkpoint's quantization config at the model path")
    refuse = names.index("Refuse flags that do not fit the checkpoint (nothing was written or restarted)")
    run = next(i for i, n in enumerate(names) if n.startswith("Run SGLang's parser"))
    assert read < refuse < run
    assert tasks[read]["loop"] == ["config.json", "hf_quant_config.json"]
    assert "sglang_flags_checkpoint_findings" in str(tasks[refuse])


# --- host-trtllm-mha-fp8-kv-checkpoint (SGLang PR 39807): the checkpoint's FP8 KV cache -------------

def mha(*extra):
    return argv("modelopt_fp4", "/data/models/Qwen3.5-397B-A17B-NVFP4/abc") + list(extra)


def kv_rules(found):
    return [(f["rule"], f["severity"], f["flag"]) for f in found]


def test_the_checkpoints_kv_cache_quantization_is_read():
    assert K.checkpoint_kv_cache(*texts("nvfp4-v1")) == "FP8"
    assert K.checkpoint_kv_cache(*texts("config-only")) == ""
    assert K.checkpoint_kv_cache('{"quantization_config": {"kv_cache_quant_algo": "FP8"}}') == "FP8"


@pytest.mark.parametrize("extra,flag", [
    (["--attention-backend", "trtllm_mha"], "attention-backend"),
    (["--attention-backend", "triton", "--prefill-attention-backend", "trtllm_mha"], "prefill-attention-backend"),
    (["--attention-backend=trtllm_mha", "--kv-cache-dtype", "auto"], "attention-backend"),
])
def test_trtllm_mha_prefill_on_a_checkpoint_with_an_fp8_kv_cache_is_refused_on_sm120(extra, flag):
    found = K.sglang_flags_checkpoint_findings(mha(*extra), slurped("nvfp4-v1"), RULES, sm="12.0")
    assert kv_rules(found) == [("host-trtllm-mha-fp8-kv-checkpoint", "error", flag)]
    (text,) = sglang_flags_format(found, HOST)
    assert f"--{flag} trtllm_mha with --kv-cache-dtype auto (or unset) on SM 12.0" in text
    assert "declares kv_cache_quant_algo FP8" in text and "SGLang PR 39807" in text
    assert "Fix: set kv-cache-dtype bf16 explicitly" in text


@pytest.mark.parametrize("extra,sm,name", [
    (["--attention-backend", "trtllm_mha", "--kv-cache-dtype", "bf16"], "12.0", "nvfp4-v1"),   # asked for bf16
    (["--attention-backend", "trtllm_mha", "--prefill-attention-backend", "triton"], "12.0", "nvfp4-v1"),
    (["--attention-backend", "triton", "--decode-attention-backend", "trtllm_mha"], "12.0", "nvfp4-v1"),
    (["--attention-backend", "trtllm_mha"], "10.0", "nvfp4-v1"),                                # SM100 has the kernel
    (["--attention-backend", "trtllm_mha"], "", "nvfp4-v1"),                                    # SM unknown
    (["--attention-backend", "trtllm_mha"], "12.0", "config-only"),                              # no FP8 KV declared
])
def test_the_near_misses_of_the_fp8_kv_cache_rule_pass(extra, sm, name):
    assert K.sglang_flags_checkpoint_findings(mha(*extra), slurped(name), RULES, sm=sm) == []

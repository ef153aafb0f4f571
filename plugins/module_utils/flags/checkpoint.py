"""The host rules about the checkpoint (vars/main.yml): ``host-quantization-mismatch``, the
``--quantization`` flag of the argv about to be launched against what the checkpoint at its
``--model-path`` declares, and ``host-trtllm-mha-fp8-kv-checkpoint``, trtllm_mha prefill on SM 12.x
with ``--kv-cache-dtype`` auto (or unset) on a checkpoint that declares an FP8 KV cache, which
auto takes and SM120's FMHAv2 prefill cannot run (SGLang PR 39807).

tasks/host_validate.yml reads the checkpoint's ``config.json`` and ``hf_quant_config.json`` on the
host (slurp, before SGLang is asked and before any restart) and passes their text here. What the
checkpoint declares is read the way SGLang's ModelConfig reads it: ``config.json``'s
``quantization_config`` first (``quant_algo`` of a ModelOpt one, else its ``quant_method``), then
``hf_quant_config.json``'s ``quantization.quant_algo``. Judged: ModelOpt checkpoints (a flag
outside the values that load their ``quant_algo``) and a ModelOpt flag on a checkpoint that
declares no quantization; other methods, and a flag left unset (SGLang takes the checkpoint's
own), are SGLang's to judge. docs/sglang-versions.md#host-quantization-mismatch says why.
"""

from __future__ import annotations

import base64
import json

# siblings of the collection, imported by name
from ansible_collections.sglang.deploy.plugins.module_utils.flags import sm as _sm

RULE = "host-quantization-mismatch"
KV_RULE = "host-trtllm-mha-fp8-kv-checkpoint"
# quant_algo (a substring, first match) -> the --quantization values that load it. SGLang's
# ModelConfig: MIXED_PRECISION from ModelOpt -> modelopt_mixed, *FP4* -> modelopt_fp4, *FP8* ->
# modelopt_fp8; ``modelopt`` lets SGLang choose from the checkpoint.
MODELOPT_FLAGS = (("MIXED_PRECISION", ("modelopt_mixed", "modelopt")),
                  ("FP4", ("modelopt_fp4", "modelopt")),
                  ("FP8", ("modelopt_fp8", "modelopt")))
_MODEL_FLAGS = ("--model-path", "--model")


def _mapping(text):
    try:
        data = json.loads(text) if isinstance(text, (str, bytes)) and text else None
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def checkpoint_quantization(config_text="", hf_quant_text=""):
    """(what the checkpoint declares, the field that says it), or (None, None)."""
    quant = _mapping(config_text).get("quantization_config")
    if isinstance(quant, dict) and (quant.get("quant_algo") or quant.get("quant_method")):
        method = str(quant.get("quant_method") or "modelopt")
        if method == "modelopt" and quant.get("quant_algo"):
            return f"modelopt {quant['quant_algo']}", "config.json quantization_config.quant_algo"
        return method, "config.json quantization_config.quant_method"
    section = _mapping(hf_quant_text).get("quantization")
    if isinstance(section, dict) and section.get("quant_algo"):
        return f"modelopt {section['quant_algo']}", "hf_quant_config.json quantization.quant_algo"
    return None, None


def quantization_fits(declared, flag):
    """The values that fit ``declared`` when ``flag`` is not one of them, else None."""
    if not flag:
        return None
    flag = str(flag)
    if declared is None:
        return ("none (leave quantization unset)",) if flag.startswith("modelopt") else None
    if not str(declared).startswith("modelopt "):
        return None
    algo = str(declared).split(" ", 1)[1].upper()
    for key, fits in MODELOPT_FLAGS:
        if key in algo:
            return None if flag in fits else fits
    return None  # a quant_algo this table does not know


def _argv_value(argv, names):
    """The value of the last of ``names`` in ``argv`` (``--flag value`` or ``--flag=value``)."""
    found = None
    tokens = [str(t) for t in (argv or [])]
    for i, token in enumerate(tokens):
        name, eq, value = token.partition("=")
        if name in names:
            found = value if eq else (tokens[i + 1] if i + 1 < len(tokens) else None)
    return found


def sglang_flags_checkpoint_model_path(argv) -> str:
    """The ``--model-path`` (or ``--model``) of an argv, "" when it has none."""
    return _argv_value(argv, _MODEL_FLAGS) or ""


def _slurped(results) -> dict:
    """{file name: text} of the slurp results (``item`` the file name, ``content`` base64) that
    were read; a file that is not there is absent."""
    out = {}
    for result in results or []:
        if isinstance(result, dict) and result.get("content") is not None:
            try:
                out[str(result.get("item"))] = base64.b64decode(result["content"]).decode("utf-8", "replace")
            except (ValueError, TypeError):
                continue
    return out


def checkpoint_kv_cache(config_text="", hf_quant_text=""):
    """The KV-cache quantization the checkpoint declares (``kv_cache_quant_algo``), or ""."""
    for section in (_mapping(config_text).get("quantization_config"), _mapping(hf_quant_text).get("quantization")):
        if isinstance(section, dict) and section.get("kv_cache_quant_algo"):
            return str(section["kv_cache_quant_algo"])
    return ""


def _finding(rule_id, rules, waive, flag, value, kw):
    rule = next((r for r in rules or [] if r.get("id") == rule_id), None)
    if rule is None:
        return []
    waived = rule_id in set(waive or [])
    message = " ".join(str(rule["message"]).format(**kw).split())
    return [{"rule": rule_id, "severity": "warning" if waived else rule["severity"],
             "status": "waived" if waived else "violation", "flag": flag, "value": value,
             "message": ("waived by sglang_flags_waive: " if waived else "") + message,
             "fix": " ".join(str(rule["fix"]).format(**kw).split()), "source": rule["source"]}]


def _trtllm_mha_prefill(argv):
    """The flag that makes trtllm_mha prefill (prefill-attention-backend wins), or ""."""
    prefill = _argv_value(argv, ("--prefill-attention-backend",))
    if prefill:
        return "prefill-attention-backend" if prefill == "trtllm_mha" else ""
    return "attention-backend" if _argv_value(argv, ("--attention-backend",)) == "trtllm_mha" else ""


def sglang_flags_checkpoint_findings(argv, slurped, rules, waive=None, sm="") -> list:
    """The findings of the checkpoint's host rules for one host: ``host-quantization-mismatch``
    and, on SM 12.x, ``host-trtllm-mha-fp8-kv-checkpoint``. ``slurped``: the slurp results of
    config.json and hf_quant_config.json (a loop over the file names). Without a readable
    config.json nothing is judged (host-model-path-missing says it)."""
    files = _slurped(slurped)
    if "config.json" not in files:
        return []
    texts = (files["config.json"], files.get("hf_quant_config.json", ""))
    found = []
    flag = _argv_value(argv, ("--quantization",))
    declared, where = checkpoint_quantization(*texts)
    fits = quantization_fits(declared, flag)
    if fits:
        found += _finding(RULE, rules, waive, "quantization", flag, {
            "value": flag, "declared": declared or "no quantization", "where": where or "config.json",
            "fits": " or ".join(fits), "model_path": sglang_flags_checkpoint_model_path(argv)})
    sm = _sm.sglang_flags_normalize_sm(sm)
    kv_cache = checkpoint_kv_cache(*texts)
    attention = _trtllm_mha_prefill(argv)
    if (_sm.sm_matches(sm, ["12.*"]) and attention and "FP8" in kv_cache.upper()
            and (_argv_value(argv, ("--kv-cache-dtype",)) or "auto") == "auto"):
        found += _finding(KV_RULE, rules, waive, attention, "trtllm_mha", {
            "flag": attention, "kv": kv_cache, "sm": sm,
            "model_path": sglang_flags_checkpoint_model_path(argv)})
    return found

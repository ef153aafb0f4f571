"""The host rule ``host-quantization-mismatch`` (vars/main.yml): the ``--quantization`` flag of the
argv about to be launched against what the checkpoint at its ``--model-path`` declares.

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

RULE = "host-quantization-mismatch"
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


def sglang_flags_checkpoint_findings(argv, slurped, rules, waive=None) -> list:
    """The finding of ``host-quantization-mismatch`` for one host (a list of at most one).
    ``slurped``: the slurp results of config.json and hf_quant_config.json (a loop over the file
    names). Without a readable config.json nothing is judged (host-model-path-missing says it)."""
    files = _slurped(slurped)
    if "config.json" not in files:
        return []
    flag = _argv_value(argv, ("--quantization",))
    declared, where = checkpoint_quantization(files["config.json"], files.get("hf_quant_config.json", ""))
    fits = quantization_fits(declared, flag)
    if not fits:
        return []
    rule = next((r for r in rules or [] if r.get("id") == RULE), None)
    if rule is None:
        return []
    kw = {"value": flag, "declared": declared or "no quantization", "where": where or "config.json",
          "fits": " or ".join(fits), "model_path": sglang_flags_checkpoint_model_path(argv)}
    waived = RULE in set(waive or [])
    message = " ".join(str(rule["message"]).format(**kw).split())
    return [{"rule": RULE, "severity": "warning" if waived else rule["severity"],
             "status": "waived" if waived else "violation", "flag": "quantization", "value": flag,
             "message": ("waived by sglang_flags_waive: " if waived else "") + message,
             "fix": " ".join(str(rule["fix"]).format(**kw).split()), "source": rule["source"]}]


class FilterModule:
    def filters(self):
        return {
            "sglang_flags_checkpoint_findings": sglang_flags_checkpoint_findings,
            "sglang_flags_checkpoint_model_path": sglang_flags_checkpoint_model_path,
        }

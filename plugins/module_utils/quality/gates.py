# -*- coding: utf-8 -*-
# The quality gates' entries in the registry (plugins/module_utils/verify/registry.py): the
# answers against the last-known-good reference, the answers at load against the same prompts
# alone, and the speculative accept length. Their logic is plugins/module_utils/quality/compare.py.
"""Registry entries of the quality gates."""

from ansible_collections.sglang.deploy.plugins.module_utils.quality.compare import accept_length_gate, gate, load_gate
from ansible_collections.sglang.deploy.plugins.module_utils.verify.baseline import wants_reset
from ansible_collections.sglang.deploy.plugins.module_utils.verify.verdict import Gate, limit_value, verdict

# the quality check's own level where nothing failed; anything else that passed is `passed`
_KEEP = ("same", "numerics_changed")


def _verdict(name, level, rows, failures, fallback):
    if failures:
        return verdict(name, "degraded" if level == "degraded" else "failed", failures, rows, failures[0][:300])
    if level == "not_applicable":
        reasons = [rows[0]["note"]] if rows and rows[0].get("note") else []
        return verdict(name, "not_applicable", reasons, rows, "%s does not apply: %s" % (name, "; ".join(reasons)))
    return verdict(name, level if level in _KEEP else "passed", [], rows,
                   "%s %s%s" % (name, level or "passed", ": " + rows[0]["note"] if rows and rows[0].get("note") else
                                fallback))


def evaluate_quality(ctx, settings):
    quality = ctx["result"].get("quality") or {}
    if not quality:
        return None
    task = ctx["verdicts"].get("gsm8k")
    decided = task is not None and task["level"] == "passed"
    rows, failures = gate(quality, wants_reset(settings["quality_accept"], ctx["host"]), decided)
    return _verdict(QUALITY.name, quality.get("level"), rows, failures, "")


def evaluate_load(ctx, settings):
    load = (ctx["result"].get("quality") or {}).get("load")
    if not load:
        return None
    rows, failures = load_gate(load)
    return _verdict(LOAD.name, load.get("level"), rows, failures, "")


def evaluate_accept(ctx, settings):
    rows, failures = accept_length_gate(ctx["result"].get("quality"), limit_value(settings["spec_accept_min_ratio"]),
                                        limit_value(settings["spec_accept_min_length"]))
    if not rows:
        return None
    return _verdict(ACCEPT.name, None, rows, failures, "")


QUALITY = Gate(
    name="quality",
    settings={"quality_accept": False},
    needs=("quality",),
    evaluate=evaluate_quality,
    test="tests/unit/test_sglang_quality.py",
    options=("sglang_verify_quality", "sglang_verify_quality_same", "sglang_verify_quality_tolerance",
             "sglang_verify_quality_reset"),
)
LOAD = Gate(
    name="quality_at_load",
    settings={},
    needs=("quality",),
    evaluate=evaluate_load,
    test="tests/unit/test_sglang_quality_load.py",
    options=("sglang_verify_quality_load", "sglang_verify_quality_load_same", "sglang_verify_quality_load_tolerance",
             "sglang_verify_quality_load_batch_sizes", "sglang_verify_quality_load_max_batch",
             "sglang_verify_quality_load_fault_rate", "sglang_verify_quality_load_detect_probability"),
)
ACCEPT = Gate(
    name="spec_accept_length",
    settings={"spec_accept_min_ratio": None, "spec_accept_min_length": None},
    needs=("quality",),
    evaluate=evaluate_accept,
    test="tests/unit/test_sglang_quality.py",
)

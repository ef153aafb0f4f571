# -*- coding: utf-8 -*-
# The registry of the verification's gates. Controller side only: the sglang_verify_gate module
# iterates it; the report (plugins/module_utils/verify/render.py) reads the verdicts it returns.
# docs/architecture.md ("The registry of gates") lists them and the steps to add one.
"""Every gate of a host's verification, in the order they are judged."""

from ansible_collections.sglang.deploy.plugins.module_utils.quality import gates as quality
from ansible_collections.sglang.deploy.plugins.module_utils.verify import baseline, gates, gsm8k, throughput
from ansible_collections.sglang.deploy.plugins.module_utils.verify.verdict import check_settings

# gsm8k before quality: a task-accuracy check that passed decides a new model revision
REGISTRY = (
    gates.GATE,            # correctness: health, drift, probes, resolved arguments, absolute floors
    baseline.GATE,         # speed_regression: single stream against the same key's accepted figures
    gsm8k.GATE,            # gsm8k: task accuracy
    quality.QUALITY,       # quality: answers against the last-known-good reference
    quality.LOAD,          # quality_at_load: answers in batches against the same prompts alone
    quality.ACCEPT,        # spec_accept_length: speculative accept length
    throughput.GATE,       # throughput_at_load: output tok/s and p99 TTFT at the serving concurrency
)


def settings(given):
    """Every gate's settings with its defaults; unknown gates or keys raise ValueError."""
    return check_settings(REGISTRY, given)


def evaluate(ctx, all_settings):
    """The verdicts of every gate that judged something, in registry order. ``ctx``: result,
    host, mode, bench, isolated, sweep, baselines ({gate: accepted history}), reset_hint."""
    ctx = dict(ctx, verdicts={})
    out = []
    for gate in REGISTRY:
        v = gate.evaluate(ctx, all_settings[gate.name])
        if v is not None:
            ctx["verdicts"][gate.name] = v
            out.append(v)
    return out

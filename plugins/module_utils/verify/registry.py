# -*- coding: utf-8 -*-
# The registry of the verification's gates. Controller side only: the sglang_verify_gate module
# iterates it; the report (plugins/module_utils/verify/render.py) reads the verdicts it returns.
# docs/architecture.md ("The registry of gates") lists them and the steps to add one.
"""Every gate of a host's verification, in the order they are judged."""

from ansible.module_utils.parsing.convert_bool import boolean

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


# what the full verification measures whatever judges it: the sweep's levels are the report's table
REPORTED = {"full": ("sweep",), "gate": ()}


def checks(mode, on):
    """The probe checks (sglang_probe's ``checks``) a verification of ``mode`` ("gate" or "full")
    runs: what each registered gate needs (its ``needs``), for every gate ``on`` does not switch
    off ({gate name: bool}; a gate it does not name is on), in registry order, then what ``mode``
    reports on its own. An unknown gate name or mode raises ValueError."""
    names = [gate.name for gate in REGISTRY]
    unknown = sorted(set(on or {}) - set(names))
    if unknown or mode not in REPORTED:
        raise ValueError("checks: unknown %s (gates: %s; modes: %s)" % (
            ", ".join(unknown) or "mode %r" % mode, ", ".join(names), ", ".join(sorted(REPORTED))))
    out = []
    for gate in REGISTRY:
        # a switch as a role variable may carry it: a bool, or its text where templating left one
        if boolean((on or {}).get(gate.name, True), strict=False):
            out += [c for c in gate.needs if c not in out]
    return out + [c for c in REPORTED[mode] if c not in out]


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

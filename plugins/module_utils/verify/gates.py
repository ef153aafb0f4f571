# -*- coding: utf-8 -*-
# Absolute gates of the sglang_verify role: correctness, drift and the inventory's floors.
# Controller side only (the sglang_verify_gate module); the regression gates against accepted
# results are verify/baseline.py's.
"""Does a host pass on correctness and on the absolute floors?"""

from ansible_collections.sglang.deploy.plugins.module_utils.verify.verdict import Gate, flag, limit_value, verdict


def evaluate_gates(result, gates):
    """Decide whether a host passes on correctness and on the absolute floors.

    result: the probe module's `result`. gates: dict with min_decode_tps, max_ttft_ms,
    fail_on_drift, fail_on_extra_flags (other keys are ignored here; the regression gates
    against accepted results are verify/baseline.py's).
    Returns (passed, failures[list of str], rows[list of dicts for the table]).
    """
    failures = list(result.get("failures") or [])
    rows = []
    gates = dict((k, limit_value(v) if k.endswith(("_tps", "_ms", "_ratio", "_samples", "_k")) else flag(v))
                 for k, v in (gates or {}).items())
    single = result.get("single_stream") or {}
    tps = single.get("decode_tps")
    ttft = single.get("ttft_ms")

    def row(name, value, limit, ok, unit=""):
        rows.append({"gate": name, "value": value, "limit": limit, "ok": ok, "unit": unit})

    drift = result.get("drift")
    if drift is not None:
        if not drift.get("ok", True) and gates.get("fail_on_drift", True):
            failures.append("drift: " + "; ".join(
                "%s expected %s, running %s" % (m["flag"], m["expected"], m["actual"])
                for m in drift["mismatches"]))
        if drift.get("extra") and gates.get("fail_on_extra_flags", False):
            failures.append("drift: flags not in the inventory: " + ", ".join(
                "--%s" % e["flag"] for e in drift["extra"]))

    # what SGLang resolved against the profile's expectations: a backend swapped at start-up
    # is a different server than the one tuned and measured, whatever the drift settings
    for m in (result.get("resolved") or {}).get("mismatches") or []:
        failures.append("resolved: %s is %r on the server, the profile expects %r (sglang_verify_expect_resolved)"
                        % (m["field"], m["actual"], m["expected"]))

    if result.get("single_stream") is not None:
        if tps is None:
            failures.append("single-stream benchmark produced no decode figure (%s)" % (
                "; ".join(single.get("error_messages") or ["no successful run"])))
        mn = gates.get("min_decode_tps")
        if mn is not None:
            ok = tps is not None and tps >= float(mn)
            row("decode tok/s >= min", tps, float(mn), ok, "tok/s")
            if not ok:
                failures.append("single-stream decode %s tok/s is under the gate of %s tok/s" % (tps, mn))
        mx = gates.get("max_ttft_ms")
        if mx is not None:
            ok = ttft is not None and ttft <= float(mx)
            row("TTFT <= max", ttft, float(mx), ok, "ms")
            if not ok:
                failures.append("median TTFT %s ms is over the gate of %s ms" % (ttft, mx))
    return (not failures), failures, rows


def evaluate(ctx, settings):
    """The registry's verdict of the correctness gate (registry.py)."""
    passed, failures, rows = evaluate_gates(ctx["result"], settings)
    return verdict(GATE.name, "passed" if passed else "failed", failures, rows,
                   "correct: health, drift, probes and the floors hold" if passed else
                   "%d correctness failure(s): %s" % (len(failures), failures[0][:200]))


GATE = Gate(
    name="correctness",
    settings={"min_decode_tps": None, "max_ttft_ms": None, "fail_on_drift": True, "fail_on_extra_flags": False},
    needs=("health", "drift", "probes", "single_stream"),
    evaluate=evaluate,
    test="tests/unit/test_sglang_verify_logic.py",
    options=("sglang_verify_expect_resolved",),
)

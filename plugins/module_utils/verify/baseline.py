# -*- coding: utf-8 -*-
# Controller side only (imported by the sglang_verify_gate module, which runs on localhost):
# which accepted results a new figure may be compared with, the robust baseline made of them,
# and the regression gates. The rationale is in docs/speed-gates.md.
#
# A figure is compared only with accepted figures measured the same way: the same host, flag
# set, ml_env generation and benchmark protocol (quick gate or full verification, prompt,
# output length, runs, warm-up, concurrency, whether the timed part ran alone). Those make the
# baseline key. The regression gates apply once `min_samples` accepted results exist for the
# key; the reference is their median and the tolerance widens with their measured spread.

import hashlib
import json
import os

from ansible_collections.sglang.deploy.plugins.module_utils.verify.stats import robust_stats
from ansible_collections.sglang.deploy.plugins.module_utils.verify.verdict import Gate, limit_value, verdict

# the measured spread may widen a gate's tolerance to at most this multiple of the ratio's own,
SPREAD_CAP = 2.0
# and never beyond this share of the median (decode tok/s may not be let fall below half the
# baseline, TTFT not rise above twice it) unless the ratio itself allows more: a noisy history
# (figures taken while other work shared the cores) must not switch the gate off
MAX_SPREAD_SHARE = {"decode_tps": 0.5, "ttft_ms": 1.0}


def _canon(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def protocol(mode, bench, isolated):
    """How the single-stream figure was measured: only figures of one protocol are comparable."""
    bench = bench or {}
    return {
        "mode": mode,
        "prompt": bench.get("prompt"),
        "max_tokens": int(bench.get("max_tokens") or 0),
        "runs": int(bench.get("runs") or 0),
        "warmup": int(bench.get("warmup") or 0),
        "concurrency": 1,
        "isolated": bool(isolated),
    }


def baseline_key(flag_hash, generation, proto):
    """Short, stable key of (flag set, ml_env generation, protocol)."""
    canon = _canon({"flags": flag_hash, "generation": generation or "", "protocol": proto})
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:12]


def baseline_path(report_dir, host, key):
    return os.path.join(report_dir, host, "baseline-%s.json" % key)


def accept(previous, record, window, identity):
    """The baseline after a passing run: the last `window` accepted records of this key."""
    window = max(int(window or 1), 1)
    accepted = list((previous or {}).get("accepted") or []) + [record]
    out = dict(identity)
    out["accepted"] = accepted[-window:]
    out["window"] = window
    return out


def summarize(baseline, field):
    """Robust statistics of one field over the accepted records, or None."""
    return robust_stats([r.get(field) for r in (baseline or {}).get("accepted") or []])


def tolerance(stats, ratio_tol, k, max_share):
    """Allowed distance from the median: the ratio's share of it, widened by k sigma of the
    accepted figures, never beyond SPREAD_CAP times the ratio's share nor beyond max_share of
    the median (unless the ratio's share alone is larger)."""
    base = ratio_tol * stats["median"]
    cap = max(base, min(SPREAD_CAP * base, max_share * stats["median"]))
    return min(max(base, k * stats["sigma"]), cap)


# the single-stream figures of the speed regression gate: (field, ratio setting, label, unit,
# worse way, what the failure calls the figure)
SPEED = (
    ("decode_tps", "regression_ratio", "decode tok/s", "tok/s", -1, "single-stream decode"),
    ("ttft_ms", "ttft_regression_ratio", "TTFT", "ms", +1, "median TTFT"),
)


def regression(figures, baseline, gates, reset_hint, specs, max_share):
    """Rows and failures of regression gates: each figure of ``specs`` (see SPEED) against the
    robust baseline of the same key. ``gates``: the ratio of each spec, baseline_min_samples,
    regression_spread_k; ``max_share``: {field: the bound of the spread's tolerance}.
    Without `baseline_min_samples` accepted results of the same key, a row says the gate is
    still collecting and nothing fails: only the absolute floors judge such a run."""
    rows, failures = [], []
    figures = figures or {}
    n = len((baseline or {}).get("accepted") or [])
    need = int(gates.get("baseline_min_samples") or 3)
    k = float(gates.get("regression_spread_k") if gates.get("regression_spread_k") is not None else 3)
    for field, gate, label, unit, sign, name in specs:
        ratio = limit_value(gates.get(gate))
        if ratio is None:
            continue
        value = figures.get(field)
        if n < need:
            rows.append({"gate": "%s vs baseline" % label, "value": value, "limit": None, "ok": True,
                         "unit": unit, "note": "collecting: %d of %d accepted runs measured this way" % (n, need)})
            continue
        stats = summarize(baseline, field)
        if stats is None or not stats["median"]:
            continue
        ratio_tol = (1.0 - ratio) if sign < 0 else (1.0 / ratio - 1.0)
        tol = tolerance(stats, ratio_tol, k, max_share[field])
        limit = round(stats["median"] + sign * tol, 3)
        ok = value is not None and (value >= limit if sign < 0 else value <= limit)
        rows.append({"gate": "%s vs baseline" % label, "value": value, "limit": limit, "ok": ok, "unit": unit,
                     "note": "median %s of %d accepted (min %s, max %s), tolerance %.0f%%" % (
                         stats["median"], stats["n"], stats["min"], stats["max"],
                         100.0 * tol / stats["median"])})
        if not ok:
            failures.append(
                "%s %s %s is %s the regression limit of %s %s: the baseline is the median %s %s of %d "
                "accepted runs measured the same way (min %s, max %s, runs %s), tolerance %.0f%%. "
                "If this figure is the new normal (hardware, load or model changed on purpose), "
                "forget the baseline with: %s" % (
                    name, value, unit, "below" if sign < 0 else "above", limit, unit, stats["median"], unit,
                    stats["n"], stats["min"], stats["max"],
                    ", ".join(str(r.get("run_id")) for r in baseline["accepted"]),
                    100.0 * tol / stats["median"], reset_hint))
    return rows, failures


def regression_gates(single, baseline, gates, reset_hint):
    """Rows and failures of the two single-stream regression gates: regression_ratio (decode
    tok/s may fall to ratio x the baseline median), ttft_regression_ratio (TTFT may rise to the
    median / ratio), baseline_min_samples, regression_spread_k."""
    return regression(single, baseline, gates, reset_hint, SPEED, MAX_SPREAD_SHARE)


def evaluate(ctx, settings):
    """The registry's verdict of the single-stream speed regression gate (registry.py)."""
    single = ctx["result"].get("single_stream")
    if single is None:
        return None
    rows, failures = regression_gates(single, ctx["baselines"].get(GATE.name), settings, ctx["reset_hint"])
    if not rows:
        return None
    return verdict(GATE.name, "failed" if failures else "passed", failures, rows,
                   failures[0][:200] if failures else "; ".join("%s: %s" % (r["gate"], r["note"]) for r in rows))


def speed_protocol(ctx, settings):
    return protocol(ctx["mode"], ctx["bench"], ctx["isolated"])


def speed_record(ctx, settings):
    single = ctx["result"].get("single_stream") or {}
    if not single.get("decode_tps"):
        return None
    return {"decode_tps": single.get("decode_tps"), "ttft_ms": single.get("ttft_ms"),
            "itl_ms_p50": single.get("itl_ms_p50"), "version": (ctx["result"].get("server") or {}).get("version")}


GATE = Gate(
    name="speed_regression",
    settings={"regression_ratio": None, "ttft_regression_ratio": None, "baseline_min_samples": 3,
              "regression_spread_k": 3},
    needs=("single_stream",),
    evaluate=evaluate,
    protocol=speed_protocol,
    record=speed_record,
    test="tests/unit/test_sglang_verify_baseline.py",
    options=("sglang_verify_baseline_window", "sglang_verify_reset_baseline", "sglang_verify_update_baseline"),
)


def wants_reset(reset, host):
    """sglang_verify_reset_baseline: true/false, or a list of host names."""
    if isinstance(reset, (list, tuple)):
        return host in reset
    if isinstance(reset, str):
        return reset.strip().lower() in ("1", "true", "yes", "on") or host in [
            h.strip() for h in reset.split(",")]
    return bool(reset)

# -*- coding: utf-8 -*-
# Statistics of the sglang_verify role: percentiles, the single-stream summary and the figures
# of sglang.benchmark.serving's output file. Standard library only (the probe module on the GPU
# host, the gate on the controller, scripts/bench-compare.py).
"""Figures made of measured runs."""

import json
import math

# 1.4826 x MAD estimates the standard deviation of normally distributed figures
MAD_TO_SIGMA = 1.4826


def percentile(values, q):
    """Percentile with linear interpolation between closest ranks (numpy's default)."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    if len(vals) == 1:
        return float(vals[0])
    pos = (len(vals) - 1) * (q / 100.0)
    lo = int(math.floor(pos))
    hi = int(math.ceil(pos))
    if lo == hi:
        return float(vals[lo])
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)


def median(values):
    return percentile(values, 50)


def to_ms(seconds):
    """Seconds as milliseconds, 3 decimals (None stays None)."""
    return None if seconds is None else round(seconds * 1000.0, 3)


def robust_stats(values):
    """Median, MAD-based sigma, min and max of the figures (None entries ignored)."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return None
    med = median(vals)
    mad = median([abs(v - med) for v in vals])
    return {"n": len(vals), "median": round(med, 3), "sigma": round(MAD_TO_SIGMA * mad, 3),
            "min": min(vals), "max": max(vals)}


def summarize_single_stream(runs):
    """Aggregate measured single-stream runs (warm-ups already excluded)."""
    good = [r for r in runs if r["ok"]]
    itl = []
    for r in good:
        itl.extend(r["itl_s"])
    tps = [r["decode_tps"] for r in good if r["decode_tps"]]
    return {
        "runs": len(runs),
        "errors": len(runs) - len(good),
        "error_messages": [r["error"] for r in runs if not r["ok"]][:5],
        "decode_tps": _round(median(tps), 2),
        "decode_tps_runs": [_round(v, 2) for v in tps],
        "ttft_ms": to_ms(median([r["ttft_s"] for r in good])),
        "ttft_ms_runs": [to_ms(r["ttft_s"]) for r in good],
        "itl_ms_p50": to_ms(percentile(itl, 50)),
        "itl_ms_p90": to_ms(percentile(itl, 90)),
        "itl_ms_p99": to_ms(percentile(itl, 99)),
        "itl_samples": len(itl),
        "e2e_tps": _round(median([r["completion_tokens"] / r["e2e_s"] for r in good
                                  if r["completion_tokens"] and r["e2e_s"]]), 2),
        "completion_tokens": [r["completion_tokens"] for r in good],
        "stream_tokens": [r["stream_tokens"] for r in good],
        "token_count_method": sorted(set(r["token_count_method"] for r in good)),
        "token_count_mismatches": [r["token_count_mismatch"] for r in good
                                   if r["token_count_mismatch"] is not None],
    }


def _round(v, nd):
    return None if v is None else round(v, nd)


# --------------------------------------------------------------------------------------------
# sglang.benchmark.serving output
# --------------------------------------------------------------------------------------------
BENCH_SERVING_KEYS = (
    "completed", "duration", "total_output_tokens", "output_throughput", "request_throughput",
    "mean_ttft_ms", "median_ttft_ms", "p90_ttft_ms", "p99_ttft_ms",
    "mean_tpot_ms", "median_tpot_ms", "median_itl_ms", "p90_itl_ms", "p99_itl_ms",
    "median_e2e_latency_ms", "accept_length", "max_concurrency",
)


def _last_record(text):
    """The last JSON record of a bench_serving --output-file (it appends one per run)."""
    rec = None
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
    if rec is None:
        raise ValueError("no JSON record in bench_serving output")
    return rec


def bench_serving_answers(text):
    """[(generated text, output tokens)] of each request of the last record written with
    --output-details (generated_texts, output_lens); [] without them."""
    rec = _last_record(text)
    texts, lens = rec.get("generated_texts") or [], rec.get("output_lens") or []
    return [(t, lens[i] if i < len(lens) else None) for i, t in enumerate(texts)]


def parse_bench_serving_jsonl(text):
    """The last JSON record of a bench_serving --output-file, reduced to the figures the report
    uses."""
    rec = _last_record(text)
    out = dict((k, rec.get(k)) for k in BENCH_SERVING_KEYS)
    tpot = rec.get("median_tpot_ms")
    out["decode_tps_from_tpot"] = round(1000.0 / tpot, 2) if tpot else None
    return out

# -*- coding: utf-8 -*-
"""The quality check at load: greedy answers decoded in batches of several requests against the
same prompts decoded alone (docs/quality-gate.md, Quality at load).

Kernels are picked per shape (CUDA-graph buckets per batch size, autotuned tactics per problem
size), so a server can answer right one request at a time and wrong as soon as requests share a
decode batch. The batch-of-one greedy runs of the quality check are the reference: each prompt
is decoded again among others, at batch sizes taken from what the server resolved, and each
generation is compared with its run alone, token by token, up to where the two first differ.
Before that point both decoded the same context: the logprobs of the same tokens must agree
within a batch-variance tolerance. At that point the choice must have been a near-tie alone
(the token picked in the batch within ``divergence_margin`` of the one picked alone); after it
the contexts differ and nothing more is compared.

A fault that hits a share p of the generations is caught by repetition: n generations at a
batch size see at least one with probability 1 - (1 - p)^n; n is computed from the profile's
target probability. Pure functions, standard library only: used on the host by
plugins/module_utils/quality/run.py and on the controller by the gate
(plugins/module_utils/quality/compare.py).
"""

import math

from ansible_collections.sglang.deploy.plugins.module_utils.quality.compare import TIE_EPSILON, is_top, top_map, top_text

# /server_info fields (SGLang 0.5.23 ServerArgs, resolved) that bound the decode batch, the
# older names after the -decode forms of 0.5.23
MAX_FIELDS = ("cuda_graph_max_bs_decode", "cuda_graph_max_bs", "max_running_requests")
BUCKET_FIELDS = ("cuda_graph_bs_decode", "cuda_graph_bs")


class NotApplicable(ValueError):
    """The server never decodes two requests together: nothing to check at load. A verdict
    (``not_applicable`` with this reason), not a failure: a single-request box is a profile."""


def generations_for(fault_rate, probability):
    """Generations needed at one batch size to see a fault that hits ``fault_rate`` of them at
    least once with ``probability``: the smallest n with 1 - (1 - p)^n >= P."""
    p, target = float(fault_rate), float(probability)
    if not 0 < p < 1 or not 0 < target < 1:
        raise ValueError("fault rate and detection probability must lie between 0 and 1, not %s and %s" % (p, target))
    return int(math.ceil(math.log(1.0 - target) / math.log(1.0 - p) - 1e-9))


def detect_probability(fault_rate, generations):
    """The probability that ``generations`` independent generations include at least one of a
    fault that hits ``fault_rate`` of them."""
    return 1.0 - (1.0 - float(fault_rate)) ** int(generations)


def _positive_int(value):
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if n > 0 and not isinstance(value, bool) else None


def batch_sizes(server_info, explicit=None, cap=None):
    """(sizes, how): the batch sizes to decode the prompts at, besides one (the reference).

    ``explicit`` (a list) wins. Otherwise the largest is what the server resolved as its decode
    batch bound (the CUDA-graph maximum, then the running-request limit, the smaller of those
    given), capped at ``cap``; with captured buckets listed, the largest bucket within it and the
    bucket nearest half of it; without, half of it."""
    if explicit:
        sizes = sorted(set(n for n in (_positive_int(v) for v in explicit) if n and n > 1))
        if not sizes:
            raise ValueError("sglang_verify_quality_load_batch_sizes names no batch size above 1: %s" % (explicit,))
        return sizes, "as configured"
    info = server_info or {}
    bounds = dict((f, _positive_int(info.get(f))) for f in MAX_FIELDS)
    bounds = dict((f, n) for f, n in bounds.items() if n)
    cap_n = _positive_int(cap)
    if not bounds and not cap_n:
        raise ValueError("the server reports none of %s and no cap is set (sglang_verify_quality_load_max_batch)" % (
            ", ".join(MAX_FIELDS),))
    candidates = list(bounds.items()) + ([("the cap sglang_verify_quality_load_max_batch", cap_n)] if cap_n else [])
    source, largest = min(candidates, key=lambda item: item[1])
    how = "largest %d (%s)" % (largest, source)
    buckets = []
    for field in BUCKET_FIELDS:
        if isinstance(info.get(field), list):
            buckets = sorted(set(n for n in (_positive_int(v) for v in info[field]) if n and 1 < n <= largest))
            if buckets:
                how += ", buckets from %s" % field
                break
    if buckets:
        largest = buckets[-1]
        below = [b for b in buckets if b < largest]
        middle = min(below, key=lambda b: (abs(b - largest / 2.0), b)) if below else None
    else:
        middle = largest // 2 if largest // 2 > 1 else None
    if largest < 2:
        raise NotApplicable("the server decodes at most %d request at a time (%s): nothing to check at load" % (
            largest, how))
    return sorted(set([largest] + ([middle] if middle else []))), how


def rounds(n_prompts, size, generations):
    """The batches that make ``generations`` generations at ``size``: lists of prompt indices,
    every batch of distinct prompts where the set is large enough (a fault that swaps rows of a
    batch shows only between different prompts), the prompts taken in turn across batches."""
    if n_prompts < 1 or size < 1:
        return []
    count = int(math.ceil(float(generations) / size))
    return [[(r * size + j) % n_prompts for j in range(size)] for r in range(count)]


def compare_generation(alone, batched, margin, tie_epsilon=TIE_EPSILON):
    """One generation at load against the same prompt decoded alone. ``alone`` and ``batched``:
    ``ids``, ``logprobs`` and ``top`` (per output position, [[logprob, id, text?], ...]).

    Returns tokens compared, the deltas of the shared prefix, and the first divergence with
    whether it is explained: the token picked in the batch was, alone, the top token within
    ``margin`` (a near-tie that batch variance may flip); its text where the server gave it."""
    a_ids, b_ids = alone.get("ids") or [], batched.get("ids") or []
    a_lp, b_lp = alone.get("logprobs") or [], batched.get("logprobs") or []
    a_top = alone.get("top") or []
    deltas, diverged = [], None
    for i in range(min(len(a_ids), len(b_ids), len(a_lp), len(b_lp))):
        if int(a_ids[i]) != int(b_ids[i]):
            top = a_top[i] if i < len(a_top) else []
            lp_b = top_map(top).get(int(b_ids[i]))
            explained = lp_b is not None and is_top(top, int(b_ids[i]), lp_b, tie_epsilon + float(margin))[0]
            diverged = {"position": i, "alone_id": int(a_ids[i]), "alone_logprob": round(float(a_lp[i]), 5),
                        "batched_id": int(b_ids[i]), "batched_logprob": round(float(b_lp[i]), 5),
                        "alone_logprob_of_batched": round(lp_b, 5) if lp_b is not None else None,
                        "alone_text": top_text(a_top, i, int(a_ids[i])),
                        "batched_text": top_text(batched.get("top") or [], i, int(b_ids[i])),
                        "explained": explained}
            break
        if a_lp[i] is not None and b_lp[i] is not None:
            deltas.append(abs(float(b_lp[i]) - float(a_lp[i])))
    if diverged is None and len(a_ids) != len(b_ids):
        n = min(len(a_ids), len(b_ids))
        diverged = {"position": n, "alone_id": None, "batched_id": None, "explained": False,
                    "note": "%d tokens alone, %d in the batch" % (len(a_ids), len(b_ids))}
    return {"tokens": len(deltas), "exact": diverged is None, "diverged": diverged,
            "sum_abs": sum(deltas), "max_abs": max(deltas) if deltas else 0.0}


def wrong(row, tolerance):
    """Why one compared generation is wrong, or None: a divergence that was no near-tie alone,
    or a shared-prefix logprob beyond the tolerance's ``max_abs_dlogprob``."""
    d = row.get("diverged")
    if d and not d.get("explained"):
        return "diverged at token %d" % d["position"]
    limit = (tolerance or {}).get("max_abs_dlogprob")
    if limit is not None and row["max_abs"] > float(limit):
        return "|d logprob| %.4g beyond %s" % (row["max_abs"], limit)
    return None


def judge_size(size, rows, same, tolerance):
    """The verdict of one batch size from compare_generation()'s rows (each with ``prompt``,
    the prompt's id and text): ``degraded`` when any generation is wrong, ``same`` when every
    one equals its run alone within the ``same`` limit, else ``numerics_changed``."""
    tokens = sum(r["tokens"] for r in rows)
    bad = [(r, wrong(r, tolerance)) for r in rows]
    bad = [(r, why) for r, why in bad if why]
    max_abs = max([r["max_abs"] for r in rows] or [0.0])
    out = {"size": size, "generations": len(rows), "exact": sum(1 for r in rows if r["exact"]),
           "diverged_near_tie": sum(1 for r in rows if r["diverged"] and r["diverged"].get("explained")),
           "wrong": len(bad), "tokens": tokens,
           "mean_abs_dlogprob": round(sum(r["sum_abs"] for r in rows) / tokens, 6) if tokens else None,
           "max_abs_dlogprob": round(max_abs, 6)}
    same_max = (same or {}).get("max_abs_dlogprob")
    if bad:
        out["level"] = "degraded"
        out["worst"] = describe(size, bad[0][0], bad[0][1])
    elif out["exact"] == len(rows) and (same_max is None or max_abs <= float(same_max)):
        out["level"] = "same"
    else:
        out["level"] = "numerics_changed"
    return out


def describe(size, row, why):
    """One sentence: the batch size, the prompt, the token where the batch left the run alone."""
    d = row.get("diverged") or {}
    prompt = row.get("prompt") or {}
    head = "at batch %d, prompt %s (%r): %s" % (size, prompt.get("id") or "?", (prompt.get("text") or "")[:40], why)
    if d.get("alone_id") is None:
        return head + (" (%s)" % d["note"] if d.get("note") else "")
    return head + ": alone %r (id %d, logprob %s), in the batch %r (id %d, logprob %s; alone it had %s)" % (
        d.get("alone_text"), d["alone_id"], d["alone_logprob"], d.get("batched_text"), d["batched_id"],
        d["batched_logprob"], d["alone_logprob_of_batched"] if d.get("alone_logprob_of_batched") is not None
        else "no place in the top-k")


def not_applicable(reason):
    """The load part of the quality result where the check does not apply (NotApplicable)."""
    return {"level": "not_applicable", "reasons": [str(reason)], "sizes": [], "per_size": [], "requests": 0}


def summarize(per_size, fault_rate, generations):
    """The load part of the quality result: the worst level, its reasons and the probability the
    check had of seeing a fault at ``fault_rate`` per generation at each size."""
    order = ("same", "numerics_changed", "degraded")
    level = max((s["level"] for s in per_size), key=order.index) if per_size else "same"
    reasons = ["%d of %d generations at batch %d wrong: %s" % (s["wrong"], s["generations"], s["size"], s["worst"])
               for s in per_size if s["level"] == "degraded"]
    least = min([s["generations"] for s in per_size] or [0])
    return {"level": level, "reasons": reasons, "sizes": [s["size"] for s in per_size], "per_size": per_size,
            "fault_rate": float(fault_rate), "generations_per_size": int(generations),
            "detect_probability": round(detect_probability(fault_rate, least), 4) if per_size else None}

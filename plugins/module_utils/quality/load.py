# -*- coding: utf-8 -*-
"""The quality check at load: greedy answers decoded in batches of several requests against the
same prompts decoded alone (docs/quality-gate.md, Quality at load), through every batch size.

Kernels are picked per shape (CUDA-graph buckets per batch size, autotuned tactics per problem
size), so a server can answer right one request at a time and wrong as soon as requests share a
decode batch. The batch-of-one greedy runs of the quality check are the reference: the prompts
are decoded again together, in batches whose generations have staggered lengths so that the
running batch shrinks by one at every step and passes through every size from the largest the
server resolved down to 2 (staggered()), and each generation is compared with its run alone, token by token, up to where the two first differ.
Before that point both decoded the same context: the logprobs of the same tokens must agree
within a batch-variance tolerance. At that point the choice must have been a near-tie alone
(the token picked in the batch within ``divergence_margin`` of the one picked alone); after it
the contexts differ and nothing more is compared.

A fault that hits a share p of the generations is caught by repetition: n generations at a
batch size see at least one with probability 1 - (1 - p)^n; n is computed from the profile's
target probability. The same comparison serves the serving sentinel of roles/sglang_watchdog
(plugins/module_utils/watchdog/sentinel.py), against the release's recorded reference. Pure functions, standard library only: used on the host by
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


def staggered(largest, max_tokens):
    """The batches that decode at every batch size from ``largest`` down to 2: lists of
    max_new_tokens, one per generation. In a batch of m generations whose lengths differ, the
    running batch shrinks by one at every step (position 0 comes from the prefill, position p from
    the decode step at the size stagger_sizes() gives), so one batch passes through sizes m down to
    m - (max_tokens - 2); the next batch starts at the size below. ``max_tokens``: the longest
    generation the reference holds."""
    largest, top = int(largest), int(max_tokens)
    if largest < 2 or top < 2:
        return []
    plans, m = [], largest
    while m >= 2:
        lo = max(2, m - (top - 2))
        # lo generations live through every step of this batch, the others leave one per step
        plans.append([m - lo + 2] * lo + [m - r + 1 for r in range(lo, m)])
        m = lo - 1
    return plans


def stagger_sizes(lengths):
    """The decode batch size at each output position of generations of these lengths that start
    together: position p (p >= 1) is decoded with every generation longer than p; position 0 by
    the prefill (None)."""
    longest = max(lengths or [0])
    return [None] + [sum(1 for n in lengths if n > p) for p in range(1, longest)]


def assign(lengths, available):
    """The prompt of each generation of one staggered batch: ``available`` is the length of each
    prompt's reference. Each generation gets, in turn, one of the prompts whose reference is at
    least as long as it (the longest where none is), never its neighbour's where two or more
    would do (a fault that swaps rows shows only between different prompts). Returns (prompt
    index, max_new_tokens, the length it will have) per generation."""
    order = sorted(range(len(available)), key=lambda i: (-int(available[i]), i))
    if not order:
        return []
    out, turn, previous = [], 0, None
    for n in lengths:
        pool = [i for i in order if int(available[i]) >= n] or order[:1]
        pick = pool[turn % len(pool)]
        if pick == previous and len(pool) > 1:
            turn += 1
            pick = pool[turn % len(pool)]
        turn += 1
        previous = pick
        out.append((pick, n, min(n, int(available[pick]))))
    return out


def longest_usable(available):
    """The longest generation a staggered batch can ask for: the second-longest reference (two
    prompts at least, so that neighbours differ), the longest where there is one prompt."""
    ranked = sorted((int(n) for n in available), reverse=True)
    return ranked[1] if len(ranked) > 1 else (ranked[0] if ranked else 0)


def rounds(n_prompts, size, generations):
    """The batches that make ``generations`` generations at one ``size`` (tests/device's readings
    per size): lists of prompt indices, every batch of distinct prompts where the set is large
    enough, the prompts taken in turn across batches."""
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


def first_wrong_size(row, sizes):
    """The decode batch size at the position of ``row``'s divergence (stagger_sizes()), or None
    for position 0 (decoded by the prefill) or past the last step."""
    d = row.get("diverged") or {}
    pos = d.get("position")
    return sizes[pos] if pos is not None and 0 < pos < len(sizes) else None


def judge_size(size, rows, same, tolerance):
    """The verdict of generations from compare_generation()'s rows (each with ``prompt``, the
    prompt's id and text, and with ``batch``, the batch size its first divergence was decoded at,
    where known): ``degraded`` when any generation is wrong, ``same`` when every one equals its
    run alone within the ``same`` limit, else ``numerics_changed``."""
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
        out["worst"] = describe(bad[0][0].get("batch", size), bad[0][0], bad[0][1])
        out["wrong_sizes"] = sorted(set(r["batch"] for r, _ in bad if r.get("batch") is not None))
    elif out["exact"] == len(rows) and (same_max is None or max_abs <= float(same_max)):
        out["level"] = "same"
    else:
        out["level"] = "numerics_changed"
    return out


def coverage(batches, largest, fault_rate):
    """Per batch size from 2 to ``largest``: how many generations were decoded at it in
    ``batches`` (each the lengths its generations had) and the probability that gave of seeing a
    fault hitting ``fault_rate`` of the generations decoded at that size alone."""
    seen = dict((k, 0) for k in range(2, int(largest) + 1))
    for lengths in batches:
        for size in set(s for s in stagger_sizes(lengths) if s is not None and s > 1):
            seen[size] = seen.get(size, 0) + size
    return [{"size": k, "generations": n, "detect_probability": round(detect_probability(fault_rate, n), 4)}
            for k, n in sorted(seen.items())]


def describe(size, row, why):
    """One sentence: the batch size, the prompt, the token where the batch left the run alone."""
    d = row.get("diverged") or {}
    prompt = row.get("prompt") or {}
    where = "at batch %d" % size if size is not None else "in the prefill"
    head = "%s, prompt %s (%r): %s" % (where, prompt.get("id") or "?", (prompt.get("text") or "")[:40], why)
    if d.get("alone_id") is None:
        return head + (" (%s)" % d["note"] if d.get("note") else "")
    return head + ": alone %r (id %d, logprob %s), in the batch %r (id %d, logprob %s; alone it had %s)" % (
        d.get("alone_text"), d["alone_id"], d["alone_logprob"], d.get("batched_text"), d["batched_id"],
        d["batched_logprob"], d["alone_logprob_of_batched"] if d.get("alone_logprob_of_batched") is not None
        else "no place in the top-k")


def summarize_staggered(judged, cover, fault_rate, passes):
    """The load part of the quality result: the level, its reasons, the sizes seen (every one from
    2 to the largest unless a reference ended early: ``sizes_missed``) and the probability the
    check had at its least-seen size of seeing a fault at ``fault_rate`` per generation."""
    reasons = []
    if judged["level"] == "degraded":
        reasons = ["%d of %d generations wrong, the first wrong token decoded at batch %s: %s" % (
            judged["wrong"], judged["generations"],
            ", ".join(str(k) for k in judged["wrong_sizes"]) or "no decode step (the prefill, or drift alone)",
            judged["worst"])]
    seen = [c["size"] for c in cover if c["generations"]]
    out = dict(judged, reasons=reasons, sizes=seen, sizes_missed=[c["size"] for c in cover if not c["generations"]],
               per_size=cover, fault_rate=float(fault_rate), passes=int(passes),
               detect_probability=min([c["detect_probability"] for c in cover] or [None]) if cover else None)
    out.pop("size", None)
    return out


def not_applicable(reason):
    """The load part of the quality result where the check does not apply (NotApplicable)."""
    return {"level": "not_applicable", "reasons": [str(reason)], "sizes": [], "per_size": [], "requests": 0}


def summarize(per_size, fault_rate, generations):
    """The verdicts of several sizes checked one at a time (tests/device's readings): the worst
    level, its reasons and the probability at the least-seen size."""
    order = ("same", "numerics_changed", "degraded")
    level = max((s["level"] for s in per_size), key=order.index) if per_size else "same"
    reasons = ["%d of %d generations at batch %d wrong: %s" % (s["wrong"], s["generations"], s["size"], s["worst"])
               for s in per_size if s["level"] == "degraded"]
    least = min([s["generations"] for s in per_size] or [0])
    return {"level": level, "reasons": reasons, "sizes": [s["size"] for s in per_size], "per_size": per_size,
            "fault_rate": float(fault_rate), "generations_per_size": int(generations),
            "detect_probability": round(detect_probability(fault_rate, least), 4) if per_size else None}

# -*- coding: utf-8 -*-
"""The quality comparison: a server's answers against a recorded reference (docs/quality-gate.md).

A reference holds, for each prompt of a fixed prompt set, the prompt's token ids, the greedy
continuation's token ids and, scored by the same server with the continuation given as input
(teacher forcing, SGLang's native ``/generate`` with ``logprob_start_len``), each continuation
token's logprob and the top-k alternatives at its position. A changed server is judged by
scoring the same continuation: nothing compounds, one early different token does not make
every later one differ. Pure functions, standard library only: used on the host by
roles/sglang_verify's probe (plugins/module_utils/quality/run.py), on the controller by its
gate and by roles/sglang_sweep's classifier.

Levels: ``same`` (within the run-to-run noise), ``numerics_changed`` (beyond noise, within the
profile's tolerance for a kernel or precision change), ``degraded`` (beyond it).
"""

import hashlib
import json
import math

LEVELS = ("same", "numerics_changed", "degraded")
# the judged figures and which way is worse
_LIMITS = (
    ("mean_abs_dlogprob", "mean |d logprob|", +1),
    ("max_abs_dlogprob", "max |d logprob|", +1),
    ("kl_topk", "KL over the top-k", +1),
    ("min_top1", "top-1 agreement", -1),
)
_FIGURE = {"min_top1": "top1"}
# Two logprobs closer than this are a tie: SGLang reports float32 logprobs (about 2e-6 apart at
# -30), and tokens whose logits are equal get equal logprobs, listed in whatever order the top-k
# kernel returns them. A reference token within this of the new maximum is still the top token
# (docs/quality-gate.md, Ties).
TIE_EPSILON = 1e-5
ACCEPT_HINT = "-e sglang_verify_quality_accept=true"
RESET_HINT = "-e sglang_verify_quality_reset=true"


def prompt_set_hash(prompts, max_tokens, top_k):
    """What makes two references comparable: the prompt texts, the continuation length, k."""
    canon = json.dumps({"prompts": [p.get("text") if isinstance(p, dict) else p for p in prompts],
                        "max_tokens": int(max_tokens), "top_k": int(top_k)},
                       sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:16]


def top_map(top):
    """{token id: logprob} of one position's top-k ([[logprob, id, text?], ...] or [[id, lp]])."""
    out = {}
    for entry in top or []:
        if isinstance(entry, dict):
            out[int(entry["id"])] = float(entry["logprob"])
        elif len(entry) >= 2 and entry[0] is not None:
            out[int(entry[1])] = float(entry[0])
    return out


def kl_topk(ref_top, new_top):
    """KL(reference || new) over the reference's top-k at one position, the rest of the mass in
    one bucket. A reference token missing from the new top-k gets the new k-th logprob (an upper
    bound of its probability: the estimate errs low, never high)."""
    p, q = top_map(ref_top), top_map(new_top)
    if not p:
        return 0.0
    floor = min(q.values()) if q else -30.0
    kl, p_sum, q_sum = 0.0, 0.0, 0.0
    for tok, lp in p.items():
        lq = q.get(tok, floor)
        kl += math.exp(lp) * (lp - lq)
        p_sum += math.exp(lp)
        q_sum += math.exp(lq)
    p_rest, q_rest = max(1.0 - p_sum, 0.0), max(1.0 - q_sum, 1e-9)
    if p_rest > 1e-9:
        kl += p_rest * math.log(p_rest / q_rest)
    return max(kl, 0.0)


def k3(ref_lp, new_lp):
    """SGLang's own per-token KL estimate (sglang.test.kl_test_utils): (e^r - 1) - r, r = new - ref."""
    r = new_lp - ref_lp
    return math.exp(r) - 1.0 - r


def is_top(top, token, logprob, tie_epsilon=TIE_EPSILON):
    """(agrees, argmax id, its logprob): ``token`` with ``logprob`` is the top token of ``top``
    (one position's top-k) when no entry beats it by more than ``tie_epsilon``, whichever of
    tied tokens the list names first. An empty top-k agrees (nothing to compare with)."""
    q = top_map(top)
    if not q:
        return True, None, None
    argmax = max(q, key=lambda tok: (q[tok], tok == token))
    return argmax == token or float(logprob) >= q[argmax] - tie_epsilon, argmax, q[argmax]


def compare_prompt(ref, scored, free_ids=None, tie_epsilon=TIE_EPSILON):
    """Figures of one prompt. ``ref``: the reference entry (``ids``, ``logprobs``, ``top``,
    ``texts``); ``scored``: the new server's teacher-forced scoring of ``ref['ids']``
    (``logprobs``, ``top``, ``texts``); ``free_ids``: its own greedy continuation. A position
    agrees when the reference token is the new top token within ``tie_epsilon`` (is_top)."""
    ids, ref_lp, ref_top = ref.get("ids") or [], ref.get("logprobs") or [], ref.get("top") or []
    new_lp, new_top = scored.get("logprobs") or [], scored.get("top") or []
    n = min(len(ids), len(ref_lp), len(new_lp))
    deltas, agree, kls, k3s, worst = [], 0, [], [], None
    for i in range(n):
        if ref_lp[i] is None or new_lp[i] is None:
            continue
        d = abs(float(new_lp[i]) - float(ref_lp[i]))
        deltas.append(d)
        same_top, argmax, top_lp = is_top(new_top[i] if i < len(new_top) else [], int(ids[i]), new_lp[i],
                                          tie_epsilon)
        if same_top:
            argmax = int(ids[i]) if argmax is not None else None
        agree += 1 if same_top else 0
        kls.append(kl_topk(ref_top[i] if i < len(ref_top) else [], new_top[i] if i < len(new_top) else []))
        k3s.append(k3(float(ref_lp[i]), float(new_lp[i])))
        # the first position whose argmax changed, else the largest change
        if worst is None or (not same_top and worst["same_top"]) or (same_top and worst["same_top"] and d > worst["d"]):
            worst = {"same_top": same_top, "d": d, "position": i, "ref_id": int(ids[i]),
                     "ref_logprob": round(float(ref_lp[i]), 5), "new_logprob": round(float(new_lp[i]), 5),
                     "new_id": argmax, "new_top_logprob": round(top_lp, 5) if top_lp is not None else None,
                     "ref_text": _text(ref.get("texts"), i), "new_text": top_text(new_top, i, argmax)}
    out = {
        "tokens": len(deltas),
        "top1": round(agree / len(deltas), 4) if deltas else None,
        "mean_abs_dlogprob": round(sum(deltas) / len(deltas), 6) if deltas else None,
        "max_abs_dlogprob": round(max(deltas), 6) if deltas else None,
        "kl_topk": round(sum(kls) / len(kls), 6) if kls else None,
        "kl_k3": round(sum(k3s) / len(k3s), 6) if k3s else None,
        "_sums": {"abs": sum(deltas), "agree": agree, "kl": sum(kls), "k3": sum(k3s)},
    }
    if worst:
        worst.pop("same_top")
        worst.pop("d")
        out["worst"] = worst
    if free_ids is not None:
        prefix = 0
        for a, b in zip(free_ids, ids):
            if a != b:
                break
            prefix += 1
        out["free_exact"] = list(free_ids) == list(ids)
        out["free_prefix"] = prefix
    return out


def _text(texts, i):
    return texts[i] if texts and i < len(texts) else None


def top_text(top, i, tok):
    """The text of token ``tok`` in the top-k of position ``i``, where the server gave it."""
    for entry in (top[i] if i < len(top) else []) or []:
        if not isinstance(entry, dict) and len(entry) >= 3 and entry[1] == tok:
            return entry[2]
    return None


def summarize(per_prompt):
    """Overall figures, token-weighted, from compare_prompt()'s results."""
    rows = [r for r in per_prompt if r.get("tokens")]
    tokens = sum(r["tokens"] for r in rows)
    if not tokens:
        return {"tokens": 0, "prompts": len(per_prompt)}
    sums = dict((k, sum(r["_sums"][k] for r in rows)) for k in ("abs", "agree", "kl", "k3"))
    free = [r for r in per_prompt if "free_exact" in r]
    return {
        "prompts": len(per_prompt),
        "tokens": tokens,
        "top1": round(sums["agree"] / tokens, 4),
        "mean_abs_dlogprob": round(sums["abs"] / tokens, 6),
        "max_abs_dlogprob": max(r["max_abs_dlogprob"] for r in rows),
        "kl_topk": round(sums["kl"] / tokens, 6),
        "kl_k3": round(sums["k3"] / tokens, 6),
        "free_exact": sum(1 for r in free if r["free_exact"]),
        "free_prompts": len(free),
    }


def _beyond(summary, limits):
    """[(key, label, value, limit)] of the limits the summary is beyond."""
    out = []
    for key, label, sign in _LIMITS:
        limit = (limits or {}).get(key)
        value = summary.get(_FIGURE.get(key, key))
        if limit is None or value is None:
            continue
        if (sign > 0 and value > float(limit)) or (sign < 0 and value < float(limit)):
            out.append((key, label, value, float(limit)))
    return out


def judge(summary, same, tolerance, model_changed=False):
    """(level, reasons): ``same`` within every ``same`` limit (and the model unchanged),
    ``degraded`` beyond any ``tolerance`` limit, else ``numerics_changed``."""
    if not summary.get("tokens"):
        return "degraded", ["no reference token could be scored"]
    bad = _beyond(summary, tolerance)
    if bad:
        return "degraded", ["%s %s beyond the tolerance %s" % (label, v, lim) for _k, label, v, lim in bad]
    noisy = _beyond(summary, same)
    reasons = ["%s %s beyond the noise limit %s" % (label, v, lim) for _k, label, v, lim in noisy]
    if model_changed:
        reasons.append("the model revision differs from the reference's")
    return ("numerics_changed" if reasons else "same"), reasons


def describe_worst(per_prompt, prompts):
    """One sentence quoting where the answers diverged most: the prompt, the position, the
    reference token and the new one with both logprobs."""
    cands = [(i, r) for i, r in enumerate(per_prompt) if r.get("worst")]
    if not cands:
        return ""

    def key(item):
        w = item[1]["worst"]
        return (w["new_id"] is not None and w["new_id"] != w["ref_id"], abs(w["new_logprob"] - w["ref_logprob"]))

    i, r = max(cands, key=key)
    w = r["worst"]
    text = prompts[i].get("text") if i < len(prompts) and isinstance(prompts[i], dict) else ""
    name = (prompts[i].get("id") if i < len(prompts) and isinstance(prompts[i], dict) else None) or "#%d" % i
    new = ("the new top token is %r (id %s, logprob %s)" % (w.get("new_text"), w["new_id"], w["new_top_logprob"])
           if w["new_id"] is not None and w["new_id"] != w["ref_id"] else "it is still the top token")
    return ("prompt %s (%r), continuation token %d: reference token %r (id %d) had logprob %s, now %s; %s" % (
        name, (text or "")[:60], w["position"], w.get("ref_text"), w["ref_id"], w["ref_logprob"],
        w["new_logprob"], new))


def accept_length_gate(quality, min_ratio=None, min_length=None):
    """(rows, failures): the speculative accept length of the quality check's greedy runs
    against an absolute floor and against ``min_ratio`` x the reference's (a draft model that
    no longer matches its target lowers it before the answers visibly change)."""
    new, ref = (quality or {}).get("spec_accept_length"), (quality or {}).get("reference_spec_accept_length")
    if new is None or (min_length is None and (min_ratio is None or ref is None)):
        return [], []
    limits = [float(min_length)] if min_length is not None else []
    if min_ratio is not None and ref is not None:
        limits.append(round(float(min_ratio) * float(ref), 3))
    limit = max(limits)
    row = {"gate": "spec accept length", "value": new, "limit": limit, "unit": "", "ok": new >= limit,
           "note": "last-known-good %s" % ref if ref is not None else "no reference figure"}
    if new >= limit:
        return [row], []
    return [row], ["speculative accept length %s on the quality prompts is under %s (%s)" % (
        new, limit, "%s x the last-known-good %s" % (min_ratio, ref) if ref is not None and min_ratio is not None
        else "the floor")]


def gate(quality, accept=False, task_decided=None):
    """(rows, failures) of the quality gate from the probe's ``quality`` result.

    ``degraded`` fails; ``numerics_changed`` passes, except for a new model revision, which
    fails unless a task-accuracy check decided (``task_decided`` True) or the operator accepts
    it (``accept``); no comparable reference (a different prompt set) fails unless reset. The
    check at load is a gate of its own (load_gate)."""
    if not quality:
        return [], []
    level = quality.get("level")
    s = quality.get("summary") or {}
    note = ("top-1 %s, mean |d logprob| %s, max %s, KL top-k %s, free-run exact %s/%s" % (
        s.get("top1"), s.get("mean_abs_dlogprob"), s.get("max_abs_dlogprob"), s.get("kl_topk"),
        s.get("free_exact"), s.get("free_prompts")) if s.get("tokens") else quality.get("note", ""))
    row = {"gate": "quality vs last-known-good", "value": level, "limit": None, "unit": "", "note": note, "ok": True}
    failures = []
    where = quality.get("worst") or ""
    if quality.get("error"):
        row["ok"] = False
        failures.append("quality check: %s" % quality["error"])
    elif level == "incomparable":
        row["ok"] = False
        failures.append("quality: %s. Fix: record a new reference on purpose with %s" % (quality.get("note"), RESET_HINT))
    elif level == "degraded":
        row["ok"] = False
        failures.append("quality degraded against reference %s: %s. Where: %s. If this is intended, record a new "
                        "reference with %s" % (quality.get("reference_of", "?"), "; ".join(quality.get("reasons") or []),
                                               where, RESET_HINT))
    elif level == "numerics_changed" and quality.get("model_changed"):
        if task_decided:
            row["note"] += "; the model revision changed: the task-accuracy check decided"
        elif accept:
            row["note"] += "; the model revision changed: accepted by the operator"
        else:
            row["ok"] = False
            failures.append(
                "quality: the new model revision changed the numerics (%s) and no task-accuracy check can decide. "
                "Where: %s. Accept it on purpose with %s (or configure sglang_verify_gsm8k)" % (
                    "; ".join(quality.get("reasons") or []), where, ACCEPT_HINT))
    return [row], failures


def load_gate(load):
    """(rows, failures) of the quality check at load (plugins/module_utils/quality/load.py):
    ``degraded`` at any batch size fails, naming the size and the first wrong generation."""
    if not load:
        return [], []
    if load.get("level") == "not_applicable":
        return [{"gate": "quality at load", "value": "not_applicable", "limit": None, "unit": "", "ok": True,
                 "note": "; ".join(load.get("reasons") or [])}], []
    sizes = load.get("sizes") or []
    note = "batch %s in %d batches: %d/%d generations as alone%s" % (
        "%d-%d" % (min(sizes), max(sizes)) if sizes else "none", load.get("requests") or 0, load.get("exact") or 0,
        load.get("generations") or 0,
        ", %d near-ties" % load["diverged_near_tie"] if load.get("diverged_near_tie") else "")
    if load.get("sizes_missed"):
        note += "; not seen at %s (a reference that ended early)" % ", ".join(str(k) for k in load["sizes_missed"])
    if load.get("detect_probability") is not None:
        note += "; P(a fault in %g%% of the generations at one size seen) %s at the least-seen size" % (
            100 * load["fault_rate"], load["detect_probability"])
    row = {"gate": "quality at load", "value": load.get("level"), "limit": None, "unit": "", "note": note,
           "ok": load.get("level") != "degraded"}
    if row["ok"]:
        return [row], []
    return [row], ["quality at load degraded: %s. Decoded alone, the same prompts answered otherwise: a kernel "
                   "wrong only when requests share a decode batch (docs/quality-gate.md, Quality at load)" % "; ".join(
                       load.get("reasons") or [])]

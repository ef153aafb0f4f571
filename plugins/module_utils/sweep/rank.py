# -*- coding: utf-8 -*-
# Controller side only (the sglang_sweep_report module): the ranking of a sweep's candidates and
# the winner, with ties decided by the measured spread.
"""Rank the working candidates of a sweep by its objective: single-stream decode tok/s (below), or
output tok/s at one concurrency within a latency target (``throughput``, last paragraph).

Ties: each working candidate's figure is an interval, its median plus or minus its noise,
``noise = max(k * sigma, floor * median)`` where sigma = 1.4826 x MAD of its measured runs
(``robust_stats`` of roles/sglang_verify, the spread the regression gates widen their tolerance
with; docs/speed-gates.md) and ``floor`` a minimum relative noise (default 5%: even a steady
figure is not trusted to better than that). From the best median down, each candidate joins the
first group whose best candidate's interval overlaps its own, or starts a new group. Members of a
group are a TIE: they share a rank and are not ordered against each other (a noisy figure may
join the first group with a lower median than the second group's). The winner is the group's best median, flagged ``tie`` when its
group has several members; it beats the baseline only when the baseline is working and in
another group.

Objective ``throughput`` (plugins/module_utils/sweep/objective.py): the working candidates
whose figures at the objective's concurrency are within every limit of its latency target are
ranked the same way by output tok/s at that level. One run per level gives no spread: its
interval is the figure plus or minus ``floor`` x the figure. The working candidates that miss the
target, or have no figure there, follow them unranked, each with the limit and the figure that
missed in its reason; the winner is the best of those meeting it.
"""

from ansible_collections.sglang.deploy.plugins.module_utils.sweep.objective import (
    THROUGHPUT,
    at_level,
    misses,
    resolve,
)

TIE_K = 3.0
NOISE_FLOOR = 0.05


def median_of(rec):
    tps = ((rec or {}).get("figures") or {}).get("decode_tps") or {}
    return tps.get("median")


def noise(tps, k=TIE_K, floor=NOISE_FLOOR):
    """Half-width of a figure's interval: max(k * sigma, floor * median)."""
    return max(k * float(tps.get("sigma") or 0.0), floor * float(tps["median"]))


def _entry(cand, rec):
    rec = rec or {}
    return {
        "key": cand["key"], "label": cand["label"], "aliases": cand.get("aliases") or [],
        "changes": cand.get("changes") or {"args": {}, "env": {}},
        "args": cand.get("args") or {}, "env": cand.get("env") or {},
        "outcome": rec.get("outcome") if rec.get("status") == "finished" else ("interrupted" if rec else "not run"),
        "reason": rec.get("reason") or ("started, never finished" if rec else "not run (time budget or stopped)"),
        "stage": rec.get("stage"), "details": rec.get("details") or {}, "figures": rec.get("figures"),
        "duration_s": rec.get("duration_s"), "gpu_order": rec.get("gpu_order") or [],
    }


def _group(measured, stats_of, k, floor):
    """Groups of ``measured`` (best figure first): each joins the first group whose best
    candidate's interval overlaps its own. Sets ``noise``, ``low``, ``high``."""
    groups = []
    for e in measured:
        stats = stats_of(e)
        half = noise(stats, k, floor)
        e["noise"] = round(half, 3)
        e["low"], e["high"] = round(stats["median"] - half, 3), round(stats["median"] + half, 3)
        group = next((g for g in groups if e["high"] >= g[0]["low"]), None)
        if group is None:
            groups.append([e])
        else:
            group.append(e)
    return groups


def _throughput(e):
    return e["at_objective"]["output_throughput"]


def figure_of(e, objective):
    """A ranked entry's figure under ``objective``: its output tok/s at the objective's level
    (``throughput``), else its single-stream decode median; None when not measured."""
    return _throughput(e) if objective["name"] == THROUGHPUT else median_of(e)


def rank(candidates, records, k=TIE_K, floor=NOISE_FLOOR, objective=None):
    """``{ranking, groups, winner, baseline, counts, tie_rule, objective}``.

    candidates: the plan's candidates (baseline first); records: ``{key: record}``; objective:
    resolve's (sweep/objective.py) (None: single_stream, no level shown).
    ranking: every candidate, the measured working ones first (best figure first, with
    ``rank``, ``group``, ``tie``, ``low``/``high`` of the interval and ``vs_baseline_pct``),
    then under a throughput objective the working ones that miss its target (``misses``), then
    the others in plan order (``rank`` None). Each has ``at_objective``: its figures at the
    objective's concurrency."""
    objective = objective or resolve()
    by_throughput = objective["name"] == THROUGHPUT
    entries = [_entry(c, (records or {}).get(c["key"])) for c in candidates]
    for e in entries:
        e["at_objective"] = at_level(e["figures"] if e["outcome"] == "working" else None, objective["concurrency"])
        e["target_met"], e["misses"] = None, []
    def value_of(e):
        return figure_of(e, objective)
    if by_throughput:
        def stats_of(e):
            return {"median": _throughput(e), "sigma": None}  # one run per level: no spread
        for e in entries:
            if e["outcome"] == "working":
                e["misses"] = misses(e["at_objective"], objective["latency_target"])
                e["target_met"] = not e["misses"]
                if e["misses"]:
                    e["reason"] = "working, misses the objective: %s" % "; ".join(e["misses"])
    else:
        def stats_of(e):
            return e["figures"]["decode_tps"]
    measured = sorted((e for e in entries if e["outcome"] == "working" and not e["misses"] and value_of(e) is not None),
                      key=lambda e: -value_of(e))
    groups = _group(measured, stats_of, k, floor)
    measured = [e for g in groups for e in g]
    for number, group in enumerate(groups, 1):
        for e in group:
            e["rank"], e["group"], e["tie"] = number, number, len(group) > 1
    base = entries[0] if entries else None
    base_value = value_of(base) if base and base["outcome"] == "working" else None
    for e in entries:
        e.setdefault("rank", None)
        e.setdefault("group", None)
        e.setdefault("tie", False)
        m = value_of(e) if e["outcome"] == "working" else None
        e["vs_baseline_pct"] = (round(100.0 * (m - base_value) / base_value, 1)
                                if m is not None and base_value else None)
    missed = sorted((e for e in entries if e["misses"]),
                    key=lambda e: (_throughput(e) is None, -(_throughput(e) or 0)))
    others = [e for e in entries if e not in measured and e not in missed]
    winner = None
    if groups:
        best = groups[0][0]
        winner = dict(best, ties=[e["label"] for e in groups[0][1:]],
                      beats_baseline=bool(base_value) and base.get("group") != 1,
                      is_baseline=best is base)
    counts = dict((o, 0) for o in ("working", "degraded", "wrong", "hung", "crashed", "rejected", "interrupted", "not run"))
    for e in entries:
        counts[e["outcome"]] = counts.get(e["outcome"], 0) + 1
    rule = "tie when median +- max(%g x 1.4826 x MAD, %g%% of the median) intervals overlap" % (k, 100 * floor)
    if by_throughput:
        rule = ("tie when output tok/s at concurrency %s +- %g%% intervals overlap (one run per level: no spread, "
                "the noise floor alone)" % (objective["concurrency"], 100 * floor))
    return {
        "ranking": measured + missed + others,
        "groups": [[e["key"] for e in g] for g in groups],
        "winner": winner,
        "baseline": base,
        "counts": counts,
        "tie_rule": {"k": k, "noise_floor": floor, "rule": rule},
        "objective": dict(objective, met=len(measured) if by_throughput else None,
                          missed=[e["key"] for e in missed]),
    }

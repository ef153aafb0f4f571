# -*- coding: utf-8 -*-
# Controller side only (the sglang_sweep_plan and sglang_sweep_report modules): the sweep's
# declared objective, checked when the sweep is planned, and a candidate's figures at the
# objective's concurrency judged against its latency target.
"""What a sweep ranks by.

``single_stream`` (the default): single-stream decode tok/s, as the sweep always ranked.
``throughput``: output tok/s at one level of ``sweep_concurrency`` (``sweep_objective_concurrency``),
among the working candidates whose figures at that level are within every limit of
``sweep_latency_target``: ``ttft_p99_ms`` (p99 TTFT) and ``itl_median_ms`` (median inter-token
latency), the keys each level of the verify role's concurrency sweep records
(plugins/module_utils/verify/concurrency.py).

The resolved objective, ``{name, concurrency, latency_target}``, is what sweep.json keeps under
``settings.objective``; ``concurrency`` left unset is the highest level of ``sweep_concurrency``
(None when there is none), at which the report shows every candidate's throughput and latency
whatever the objective.
"""

from ansible_collections.sglang.deploy.plugins.module_utils.sweep.plan import SweepPlanError

SINGLE_STREAM = "single_stream"
THROUGHPUT = "throughput"
OBJECTIVES = (SINGLE_STREAM, THROUGHPUT)
# a limit of sweep_latency_target -> (the level's figure, its name in a sentence)
LIMITS = {
    "ttft_p99_ms": ("p99_ttft_ms", "p99 TTFT"),
    "itl_median_ms": ("median_itl_ms", "median ITL"),
}


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _level(value):
    """An int, or the digits a template renders it as; None otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def resolve(name=None, concurrency=None, target=None, levels=None):
    """The objective ``{name, concurrency, latency_target}`` of the sweep file's keys, or
    SweepPlanError naming the variable, the rule and the fix."""
    name = SINGLE_STREAM if name in (None, "") else name
    if name not in OBJECTIVES:
        raise SweepPlanError("sweep_objective %r is not an objective: it is one of %s. Fix: set sweep_objective to "
                             "single_stream (single-stream decode tok/s) or throughput (output tok/s at "
                             "sweep_objective_concurrency within sweep_latency_target)" % (name, ", ".join(OBJECTIVES)))
    levels = [_level(v) for v in levels or []]
    if target in (None, ""):
        target = {}
    if not isinstance(target, dict):
        raise SweepPlanError("sweep_latency_target must be a mapping of limits {ttft_p99_ms: N, itl_median_ms: N}, "
                             "got %r. Fix: write it as a mapping, or {} for no target" % (target,))
    target = dict((k, v) for k, v in target.items() if v is not None)  # null: that limit unset
    unknown = sorted(str(k) for k in target if k not in LIMITS)
    if unknown:
        raise SweepPlanError("sweep_latency_target: unknown limit(s) %s; a target has %s (milliseconds). Fix: "
                             "rename or remove them" % (", ".join(unknown), ", ".join(LIMITS)))
    for key, value in target.items():
        if not _number(value) or value <= 0:
            raise SweepPlanError("sweep_latency_target.%s must be a positive number of milliseconds, got %r. Fix: "
                                 "give the limit in ms, or remove the key" % (key, value))
    if target and name != THROUGHPUT:
        raise SweepPlanError("sweep_latency_target is set but sweep_objective is %s: a latency target only "
                             "selects the candidates a throughput objective ranks. Fix: set sweep_objective: "
                             "throughput, or remove sweep_latency_target" % name)
    if concurrency in (None, ""):
        valid = [v for v in levels if v is not None]
        if name == THROUGHPUT and not valid:
            raise SweepPlanError("sweep_objective throughput ranks output tok/s at a level of sweep_concurrency, "
                                 "which is empty. Fix: list the levels to measure in sweep_concurrency")
        return {"name": name, "concurrency": max(valid) if valid else None, "latency_target": dict(target)}
    level = _level(concurrency)
    if level is None or level < 1:
        raise SweepPlanError("sweep_objective_concurrency must be a concurrency level (an integer >= 1), got %r. "
                             "Fix: set it to one of sweep_concurrency %s" % (concurrency, levels))
    if level not in levels:
        raise SweepPlanError("sweep_objective_concurrency %d is not one of sweep_concurrency %s: only those levels "
                             "are measured. Fix: add %d to sweep_concurrency, or set sweep_objective_concurrency "
                             "to one of them" % (level, levels, level))
    return {"name": name, "concurrency": level, "latency_target": dict(target)}


def at_level(figures, concurrency):
    """``{concurrency, output_throughput, p99_ttft_ms, median_itl_ms}`` of a candidate's
    figures at one level (None for each figure the level lacks)."""
    level = next((lv for lv in (figures or {}).get("throughput") or []
                  if concurrency is not None and lv.get("concurrency") == concurrency), {})
    out = {"concurrency": concurrency, "output_throughput": level.get("output_throughput")}
    out.update((figure, level.get(figure)) for figure, _ in LIMITS.values())
    return out


def misses(level, target):
    """Why a candidate's figures at the objective's level (``at_level``) miss the objective:
    no output tok/s there, or each limit whose figure is missing or above it. [] = meets it."""
    conc = level["concurrency"]
    out = []
    if level["output_throughput"] is None:
        out.append("no output tok/s measured at concurrency %s" % conc)
    for key in sorted(target, key=list(LIMITS).index):
        figure, words = LIMITS[key]
        value = level.get(figure)
        if value is None:
            out.append("%s <= %g ms: no %s measured at concurrency %s" % (key, target[key], words, conc))
        elif value > target[key]:
            out.append("%s <= %g ms: %s %g ms at concurrency %s" % (key, target[key], words, value, conc))
    return out


def other(objective):
    """The objective the report also ranks by, from the same records: ``single_stream`` for a
    throughput sweep; ``throughput`` at the level shown, with no latency target, for a
    single-stream sweep (None when no level was measured)."""
    if objective["name"] == THROUGHPUT:
        return {"name": SINGLE_STREAM, "concurrency": objective.get("concurrency"), "latency_target": {}}
    if objective.get("concurrency") is None:
        return None
    return {"name": THROUGHPUT, "concurrency": objective["concurrency"], "latency_target": {}}


def describe(objective):
    """The objective and its target in one sentence, for the report's head."""
    conc = objective.get("concurrency")
    if objective["name"] == THROUGHPUT:
        target = objective.get("latency_target") or {}
        limits = ", ".join("%s <= %g ms" % (LIMITS[k][1], target[k]) for k in LIMITS if k in target)
        return "Objective: throughput: output tok/s at concurrency %s, %s." % (
            conc, "within the latency target %s" % limits if limits else "no latency target")
    shown = ("; throughput and latency shown at concurrency %s" % conc) if conc is not None else ""
    return "Objective: single_stream: single-stream decode tok/s, no latency target%s." % shown

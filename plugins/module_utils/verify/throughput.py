# -*- coding: utf-8 -*-
# The throughput-at-load gate (plugins/module_utils/verify/registry.py): output tok/s and p99
# TTFT at the profile's serving concurrency, read from the concurrency sweep of the same
# measurement (plugins/module_utils/verify/concurrency.py; nothing is measured twice), compared
# with the accepted figures of the same key under the speed gates' rules
# (plugins/module_utils/verify/baseline.py, docs/speed-gates.md).
"""Does the host still serve its traffic when requests share the server?"""

from ansible_collections.sglang.deploy.plugins.module_utils.verify.baseline import regression
from ansible_collections.sglang.deploy.plugins.module_utils.verify.verdict import Gate, limit_value, verdict

NAME = "throughput_at_load"
# the spread may widen the tolerance to at most half the median of output tok/s, and p99 TTFT to
# twice its median (as the single stream's, baseline.MAX_SPREAD_SHARE)
MAX_SPREAD_SHARE = {"output_tps": 0.5, "p99_ttft_ms": 1.0}


def _specs(c):
    return (
        ("output_tps", "throughput_ratio", "output tok/s at %d" % c, "tok/s", -1, "output at concurrency %d" % c),
        ("p99_ttft_ms", "throughput_ttft_ratio", "p99 TTFT at %d" % c, "ms", +1, "p99 TTFT at concurrency %d" % c),
    )


def concurrency(settings):
    try:
        return int(settings.get("throughput_concurrency") or 0)
    except (TypeError, ValueError):
        return 0


def _on(settings):
    return any(limit_value(settings.get(k)) is not None
               for k in ("throughput_ratio", "throughput_ttft_ratio", "min_output_tps"))


def level_at(result, c):
    """The sweep's level at concurrency ``c``: {output_tps, p99_ttft_ms, errors, ...}, or None."""
    for lv in (result.get("sweep") or {}).get("levels") or []:
        if int(lv.get("concurrency") or 0) == c:
            return {"output_tps": lv.get("output_throughput"), "p99_ttft_ms": lv.get("p99_ttft_ms"),
                    "errors": lv.get("errors"), "completed": lv.get("completed")}
    return None


def measured_protocol(ctx, settings):
    """How the figure was measured: the speed gates' protocol fields that apply, and the sweep's
    (concurrency, requests, lengths, the tool that actually measured)."""
    c = concurrency(settings)
    sweep = ctx["result"].get("sweep") or {}
    if c < 2 or level_at(ctx["result"], c) is None:
        return None
    sw = ctx.get("sweep") or {}
    per = int(sw.get("requests_per_level") or 2)
    return {"gate": NAME, "mode": ctx["mode"], "concurrency": c, "requests": max(c * per, 2),
            "input_len": int(sw.get("input_len") or 0), "output_len": int(sw.get("output_len") or 0),
            "tool": sweep.get("tool"), "isolated": bool(ctx["isolated"])}


def _figure(value):
    """A measured figure as a message quotes it: one decimal ("-" when not measured)."""
    return "-" if value is None else "%.1f" % value


def record(ctx, settings):
    figures = level_at(ctx["result"], concurrency(settings)) or {}
    if not figures.get("output_tps"):
        return None
    return {"output_tps": figures["output_tps"], "p99_ttft_ms": figures.get("p99_ttft_ms"),
            "version": (ctx["result"].get("server") or {}).get("version")}


def evaluate(ctx, settings):
    """The verdict: not applicable to a profile that serves one request at a time; failed where
    the server decodes fewer requests together than the profile serves, under the absolute floor,
    or beyond the regression limits of the same key's accepted figures; else passed."""
    c = concurrency(settings)
    if c < 1 or not _on(settings):
        return None
    if c == 1:
        why = ("the profile serves one request at a time (sglang_verify_throughput_concurrency 1): throughput at "
               "load is the single stream's, which the speed gates judge")
        return verdict(NAME, "not_applicable", [why], [], "%s does not apply: %s" % (NAME, why))
    result = ctx["result"]
    if result.get("sweep") is None:
        return None  # not measured: the host failed before its timed checks, and that failure judges it
    figures = level_at(result, c)
    if figures is None:
        why = "the concurrency sweep measured no level at %d (sglang_verify_throughput_concurrency)" % c
        return verdict(NAME, "failed", [why], [], why)
    rows, failures = [], []
    mrr = (result.get("server") or {}).get("max_running_requests")
    if isinstance(mrr, int) and not isinstance(mrr, bool) and mrr < c:
        rows.append({"gate": "running requests >= serving concurrency", "value": mrr, "limit": c, "ok": False,
                     "unit": "", "note": "max_running_requests in /server_info"})
        failures.append(
            "throughput at load: the server decodes at most %d request%s at a time (max_running_requests %d in "
            "/server_info), the profile serves %d at once (sglang_verify_throughput_concurrency): measured %s output "
            "tok/s and p99 TTFT %s ms at concurrency %d, where the rest wait in the queue" % (
                mrr, "" if mrr == 1 else "s", mrr, c, _figure(figures["output_tps"]), _figure(figures["p99_ttft_ms"]), c))
    floor = limit_value(settings.get("min_output_tps"))
    if floor is not None:
        ok = figures["output_tps"] is not None and figures["output_tps"] >= floor
        rows.append({"gate": "output tok/s at %d >= min" % c, "value": figures["output_tps"], "limit": floor,
                     "ok": ok, "unit": "tok/s"})
        if not ok:
            failures.append("output %s tok/s at concurrency %d is under the gate of %s tok/s (sglang_verify_min_output_tps)"
                            % (figures["output_tps"], c, floor))
    reg_rows, reg_failures = regression(figures, ctx["baselines"].get(NAME), settings, ctx["reset_hint"], _specs(c),
                                        MAX_SPREAD_SHARE)
    rows += reg_rows
    failures += reg_failures
    if failures:
        return verdict(NAME, "failed", failures, rows, failures[0][:300])
    return verdict(NAME, "passed", [], rows, "%s output tok/s, p99 TTFT %s ms at concurrency %d; %s" % (
        figures["output_tps"], figures["p99_ttft_ms"], c, "; ".join(r["note"] for r in rows if r.get("note"))))


GATE = Gate(
    name=NAME,
    settings={"throughput_concurrency": 0, "throughput_ratio": None, "throughput_ttft_ratio": None,
              "min_output_tps": None, "baseline_min_samples": 3, "regression_spread_k": 3},
    needs=("sweep",),
    evaluate=evaluate,
    protocol=measured_protocol,
    record=record,
    test="tests/unit/test_sglang_verify_throughput.py",
    options=("sglang_verify_sweep_requests_per_level", "sglang_verify_sweep_input_len",
             "sglang_verify_sweep_output_len"),
)

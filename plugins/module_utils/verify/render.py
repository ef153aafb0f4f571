# -*- coding: utf-8 -*-
# Report rendering of the sglang_verify role: the console table of one host, the Markdown
# summary of a run and the history record. Controller side only (sglang_verify_gate and
# sglang_verify_report modules).
"""Text of the verification report."""

import datetime

from urllib.parse import urlencode

# What the report links to in Prometheus for the run's time window (names as SGLang 0.5.23
# exports them; tests/unit/test_sglang_verify_links.py checks them against a recorded page).
PROMETHEUS_QUERIES = (
    ("decode tok/s", "sum by (host) (rate(sglang:generation_tokens_total[1m]))"),
    ("TTFT p99", "histogram_quantile(0.99, sum by (le, host) (rate(sglang:time_to_first_token_seconds_bucket[1m])))"),
    ("ITL p99", "histogram_quantile(0.99, sum by (le, host) (rate(sglang:inter_token_latency_seconds_bucket[1m])))"),
    ("running / queued", "sum by (host) (sglang:num_running_reqs) or sum by (host) (sglang:num_queue_reqs)"),
)
_ISO = "%Y-%m-%dT%H:%M:%SZ"
# the options of both modules of a run's report: sglang_verify_gate writes
# <report_dir>/<run_id>/hosts/<host>.json, sglang_verify_report reads them
RUN_ARGS = dict(
    run_id=dict(type="str", required=True),
    report_dir=dict(type="path", required=True),
)


def _fmt(v, nd=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return ("%." + str(nd) + "f") % v
    return str(v)


def console_lines(host, result, gate):
    """The short table shown on the console for one host."""
    s = result.get("single_stream") or {}
    lines = [
        "%-28s %s" % ("host", host),
        "%-28s %s" % ("verdict", "PASS" if gate["passed"] else "FAIL"),
        "%-28s %s" % ("sglang", (result.get("server") or {}).get("version")),
        "%-28s %s" % ("probes", _probe_line(result)),
    ]
    for pr in result.get("probes") or []:
        lines.append("%-28s %r -> %r%s" % ("  answer", _clip(pr.get("prompt"), 40), _clip(pr.get("output"), 60),
                                           "" if pr.get("ok") else "  (FAIL)"))
    lines += [
        "%-28s %s tok/s, median of %s runs (min %s, max %s; runs %s)" % (
            "single-stream decode", _fmt(s.get("decode_tps")), len(s.get("decode_tps_runs") or []),
            _fmt(_spread(s.get("decode_tps_runs"), min)), _fmt(_spread(s.get("decode_tps_runs"), max)),
            s.get("decode_tps_runs")),
        "%-28s %s ms (min %s, max %s)" % ("median TTFT", _fmt(s.get("ttft_ms")),
                                          _fmt(_spread(s.get("ttft_ms_runs"), min)),
                                          _fmt(_spread(s.get("ttft_ms_runs"), max))),
        "%-28s %s / %s / %s ms" % ("ITL p50/p90/p99 (per token)", _fmt(s.get("itl_ms_p50"), 2),
                                   _fmt(s.get("itl_ms_p90"), 2), _fmt(s.get("itl_ms_p99"), 2)),
    ]
    sweep = result.get("sweep") or {}
    for lvl in sweep.get("levels") or []:
        lines.append("%-28s %s tok/s, errors %s" % (
            "concurrency %s output" % lvl.get("concurrency"), _fmt(lvl.get("output_throughput")),
            lvl.get("errors")))
    if sweep.get("tool"):
        lines.append("%-28s %s" % ("sweep measured by", sweep["tool"]))
    if sweep.get("note"):
        lines.append("%-28s %s" % ("sweep note", sweep["note"][:300]))
    if result.get("starts"):
        lines.append("%-28s %s" % ("server start (last)", starts_line(result)))
    spec = (result.get("server") or {}).get("spec_accept_length")
    if spec:
        lines.append("%-28s %s" % ("spec accept length", _fmt(spec, 2)))
    if result.get("quality"):
        lines.append("%-28s %s" % ("quality", quality_line(result)))
    for r in gate.get("rows") or []:
        lines.append("%-28s %s %s (limit %s) %s%s" % (
            "gate " + r["gate"], _fmt(r["value"]), r["unit"], _fmt(r["limit"]), "ok" if r["ok"] else "FAIL",
            "; " + r["note"] if r.get("note") else ""))
    for f in gate.get("failures") or []:
        lines.append("FAIL: " + f)
    return lines


def quality_line(result):
    """'same: top-1 1.0, mean |d logprob| 0.0004 (max 0.003), KL 0.0, free-run exact 30/30;
    30 prompts, 612 tokens, 4.1 s, reference of release abc': the quality check in one line."""
    qy = result.get("quality") or {}
    if not qy:
        return "not run"
    s = qy.get("summary") or {}
    head = qy.get("level") or "?"
    if s.get("tokens"):
        head += ": top-1 %s, mean |d logprob| %s (max %s), KL top-k %s, free-run exact %s/%s" % (
            s.get("top1"), s.get("mean_abs_dlogprob"), s.get("max_abs_dlogprob"), s.get("kl_topk"),
            s.get("free_exact"), s.get("free_prompts"))
    elif qy.get("error") or qy.get("note"):
        head += ": " + str(qy.get("error") or qy.get("note"))
    return "%s; %s prompts x %s tokens, %s requests, %s s%s%s" % (
        head, qy.get("prompts"), qy.get("max_tokens"), qy.get("requests"), qy.get("seconds"),
        ", reference of release %s" % qy["reference_of"] if qy.get("reference_of") else "", load_line(qy.get("load")))


def load_line(ld):
    """'; at load same: batch 2-64 in 3 batches, 123 generations, 2221 tokens (sizes from ...),
    P(a fault in 5% of the generations at one size seen) 0.0975 at the least-seen size, 1.2 s':
    the quality check at load, where it ran."""
    if not ld:
        return ""
    if ld.get("level") == "not_applicable":
        return "; at load not applicable: %s" % "; ".join(ld.get("reasons") or [])
    sizes = ld.get("sizes") or []
    return "; at load %s: batch %s in %s batches, %s generations, %s tokens (%s)%s, P(a fault in %g%% of the " \
        "generations at one size seen) %s at the least-seen size, %s s" % (
            ld.get("level"), "%d-%d" % (min(sizes), max(sizes)) if sizes else "none", ld.get("requests"),
            ld.get("generations"), ld.get("tokens"), ld.get("sizes_from"),
            ", not at %s" % ", ".join(str(k) for k in ld["sizes_missed"]) if ld.get("sizes_missed") else "",
            100 * float(ld.get("fault_rate") or 0), ld.get("detect_probability"), ld.get("seconds"))


def last_starts(result):
    """(last cold start, last warm start) records of the result's start log, or None each."""
    starts = result.get("starts") or []
    pick = {}
    for rec in starts:
        if rec.get("cache") in ("cold", "warm") and rec.get("seconds") is not None:
            pick[rec["cache"]] = rec
    return pick.get("cold"), pick.get("warm")


def starts_line(result):
    """'cold 41.2 s (gen, at) / warm 30.5 s (gen, at)': the server's last cold and warm starts."""
    def one(rec):
        if not rec:
            return "-"
        return "%s s (%s, %s)" % (_fmt(rec["seconds"]), (rec.get("generation") or "?")[:12], rec.get("at"))
    cold, warm = last_starts(result)
    return "cold %s / warm %s" % (one(cold), one(warm))


def _spread(values, pick):
    vals = [v for v in values or [] if v is not None]
    return pick(vals) if vals else None


def _clip(text, n):
    text = "" if text is None else str(text)
    return text if len(text) <= n else text[: n - 3] + "..."


def bus_cell(bus):
    """'Gen5 x16, H2D 55.3 GB/s, AR 32 KiB 25.0 us, P2P 48.0 GB/s': a host's admission
    (roles/gpu_admit summary, context.bus), or '-' when it has none."""
    if not bus:
        return "-"
    parts = ["/".join(bus.get("links") or []) or "link ?", "H2D %s GB/s" % _fmt(bus.get("h2d_gbps_min"))]
    small = (bus.get("allreduce_small_us") or {}).get("nccl")
    if small is not None:
        parts.append("AR %s KiB %s us" % ((bus.get("allreduce_small_bytes") or 0) // 1024, _fmt(small)))
    if bus.get("p2p_gbps_min") is not None:
        parts.append("P2P %s GB/s" % _fmt(bus["p2p_gbps_min"]))
    elif (bus.get("world_size") or 0) < 2:
        parts.append("1 GPU: bus not measured")
    return ("" if bus.get("admitted") else "REFUSED ") + ", ".join(parts)


def _probe_line(result):
    probes = result.get("probes")
    if probes is None:
        return "not run"
    n = len(probes)
    bad = sum(1 for p in probes if not p.get("ok"))
    return "%d/%d passed" % (n - bad, n)


def render_summary_md(report):
    """Markdown summary of one run (all hosts verified so far in it)."""
    out = ["# SGLang verification %s" % report.get("run_id"), ""]
    out.append("| host | verdict | sglang | flags | probes | decode tok/s (min-max) | bus (admission) | TTFT ms "
               "| ITL p50/p90/p99 ms | sweep tok/s (concurrency) | spec accept | baseline tok/s (n) "
               "| start s cold / warm | quality |")
    out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for host in sorted(report.get("hosts") or {}):
        h = report["hosts"][host]
        res = h.get("result") or {}
        s = res.get("single_stream") or {}
        sweep = res.get("sweep") or {}
        sw = ", ".join("%s (%s)" % (_fmt(lv.get("output_throughput")), lv.get("concurrency"))
                       for lv in sweep.get("levels") or []) or "-"
        bstats = (h.get("baseline_stats") or {}).get("decode_tps") or {}
        base = "%s (%s)" % (_fmt(bstats.get("median")), bstats.get("n")) if bstats else "collecting"
        tps = "%s (%s-%s)" % (_fmt(s.get("decode_tps")), _fmt(_spread(s.get("decode_tps_runs"), min)),
                              _fmt(_spread(s.get("decode_tps_runs"), max)))
        cold, warm = last_starts(res)
        qs = (res.get("quality") or {}).get("summary") or {}
        out.append("| %s | %s | %s | `%s` | %s | %s | %s | %s | %s / %s / %s | %s | %s | %s | %s / %s | %s |" % (
            host, "PASS" if h.get("passed") else "**FAIL**", (res.get("server") or {}).get("version"),
            h.get("flag_hash"), _probe_line(res), tps, bus_cell((h.get("context") or {}).get("bus")),
            _fmt(s.get("ttft_ms")),
            _fmt(s.get("itl_ms_p50"), 2), _fmt(s.get("itl_ms_p90"), 2), _fmt(s.get("itl_ms_p99"), 2),
            sw, _fmt((res.get("server") or {}).get("spec_accept_length"), 2), base,
            _fmt((cold or {}).get("seconds")), _fmt((warm or {}).get("seconds")),
            "%s%s" % ((res.get("quality") or {}).get("level") or "-",
                      " (top-1 %s, mean d %s)" % (qs["top1"], qs["mean_abs_dlogprob"]) if qs.get("tokens") else "")))
    out.append("")
    for host in sorted(report.get("hosts") or {}):
        h = report["hosts"][host]
        res = h.get("result") or {}
        fails = h.get("failures") or []
        drift = res.get("drift") or {}
        sweep = res.get("sweep") or {}
        expect = res.get("resolved") or {}
        verdicts = h.get("verdicts") or []
        if not (fails or drift.get("extra") or drift.get("resolved") or sweep.get("note") or res.get("quality")
                or expect.get("checked") or expect.get("skipped") or verdicts):
            continue
        out.append("## %s" % host)
        out.append("")
        out += verdict_lines(verdicts)
        if res.get("quality"):
            out.append("- quality: %s" % quality_line(res).replace("|", "\\|"))
            if (res["quality"].get("worst") or "") and res["quality"].get("level") != "same":
                out.append("- quality, largest divergence: %s" % res["quality"]["worst"].replace("|", "\\|"))
            for reason in (res["quality"].get("load") or {}).get("reasons") or []:
                out.append("- quality at load: %s" % reason.replace("|", "\\|"))
        for f in fails:
            out.append("- FAIL: %s" % f.replace("|", "\\|"))
        for e in drift.get("extra") or []:
            out.append("- flag on the server, not in the inventory: `--%s %s`" % (e["flag"], e["value"]))
        for r in drift.get("resolved") or []:
            out.append("- `--%s %s` resolved by SGLang to `%s`" % (r["flag"], r["asked"], r["resolved"]))
        if expect.get("checked"):
            out.append("- resolved arguments: %d expected, %s" % (expect["checked"], "all as expected" if expect.get("ok")
                       else "%d not: " % len(expect["mismatches"]) + ", ".join(
                           "`%s` %s (expected %s)" % (m["field"], m["actual"], m["expected"]) for m in expect["mismatches"])))
        for m in expect.get("skipped") or []:
            out.append("- resolved `%s`: not checked, the flags ask %s (the profile expects %s)" % (
                m["field"], m["asked"], m["expected"]))
        if sweep.get("note"):
            out.append("- sweep: %s" % sweep["note"])
        out.append("")
    links = report.get("prometheus_links") or []
    if links:
        out.append("Prometheus, this run's window: " + " · ".join("[%s](%s)" % (label, url) for label, url in links))
        out.append("")
    return "\n".join(out) + "\n"


def verdict_lines(verdicts):
    """The report's lines of a host's verdicts (plugins/module_utils/verify/registry.py): every
    gate's level in one line, then why each gate that does not apply does not."""
    if not verdicts:
        return []
    out = ["- gates: " + ", ".join("%s %s" % (v["gate"], v["level"]) for v in verdicts)]
    for v in verdicts:
        if v["level"] == "not_applicable":
            out.append("- %s not applicable: %s" % (v["gate"], "; ".join(v["reasons"]).replace("|", "\\|")))
    return out


def run_window(hosts, pad_s=30):
    """(start, end) datetimes (UTC) that cover every host's measurement of a run, padded."""
    ends, starts = [], []
    for h in (hosts or {}).values():
        try:
            end = datetime.datetime.strptime(h.get("time") or "", _ISO)
        except ValueError:
            continue
        ends.append(end)
        starts.append(end - datetime.timedelta(seconds=float((h.get("result") or {}).get("duration_s") or 0)))
    if not ends:
        return None
    pad = datetime.timedelta(seconds=pad_s)
    return min(starts) - pad, max(ends) + pad


def prometheus_links(base_url, hosts):
    """[(label, url)]: Prometheus graphs of the run's time window, or [] without a URL."""
    window = run_window(hosts)
    if not base_url or window is None:
        return []
    start, end = window
    span = max(int((end - start).total_seconds()), 60)
    return [(label, "%s/graph?%s" % (base_url.rstrip("/"), urlencode([
        ("g0.expr", expr), ("g0.tab", "0"), ("g0.range_input", "%ds" % span),
        ("g0.end_input", end.strftime("%Y-%m-%d %H:%M:%S"))])))
        for label, expr in PROMETHEUS_QUERIES]


def history_record(run_id, host, host_report):
    res = host_report.get("result") or {}
    s = res.get("single_stream") or {}
    sweep = res.get("sweep") or {}
    return {
        "run_id": run_id,
        "time": host_report.get("time"),
        "host": host,
        "passed": host_report.get("passed"),
        "mode": host_report.get("mode"),
        "flag_hash": host_report.get("flag_hash"),
        "version": (res.get("server") or {}).get("version"),
        "decode_tps": s.get("decode_tps"),
        "ttft_ms": s.get("ttft_ms"),
        "itl_ms_p50": s.get("itl_ms_p50"),
        "itl_ms_p99": s.get("itl_ms_p99"),
        "sweep": dict((str(lv.get("concurrency")), lv.get("output_throughput"))
                      for lv in sweep.get("levels") or []),
        "spec_accept_length": (res.get("server") or {}).get("spec_accept_length"),
        "quality": (res.get("quality") or {}).get("level"),
        "quality_top1": ((res.get("quality") or {}).get("summary") or {}).get("top1"),
        "quality_mean_abs_dlogprob": ((res.get("quality") or {}).get("summary") or {}).get("mean_abs_dlogprob"),
    }

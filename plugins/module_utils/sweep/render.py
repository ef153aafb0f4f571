# -*- coding: utf-8 -*-
# Controller side only (the sglang_sweep_report module): a ranked sweep (sweep/rank.py) as
# console lines, Markdown (sweep.md), a group_vars snippet for the winner and a JSON summary.
"""Render a ranked sweep."""

import yaml

from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import norm_value
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.objective import THROUGHPUT, describe
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.rank import figure_of

# a variable of the environment that an sglang_server switch sets (roles/sglang_server defaults)
LEVERS = {
    ("SGLANG_ENABLE_PCIE_IPC_ALLREDUCE", "1"): "sglang_server_pcie_ipc_allreduce: true",
    ("NCCL_IB_DISABLE", "1"): "sglang_server_nccl_ib_disable: true",
    ("NCCL_P2P_LEVEL", "SYS"): "sglang_server_nccl_p2p_level_sys: true",
}
ROW = "%-4s %-34s %-12s %-9s %-24s %-7s %-8s %-8s %-8s %-6s %-17s %-10s %-8s %-8s %-6s %s"


def _num(value, fmt="%.1f"):
    return "-" if value is None else fmt % value


def _rank(e):
    return "-" if e.get("rank") is None else "%d%s" % (e["rank"], "=" if e.get("tie") else "")


def _tps(e):
    tps = (e.get("figures") or {}).get("decode_tps")
    if not tps or e["outcome"] != "working":
        return "-"
    return "%.1f (%.1f-%.1f)" % (tps["median"], tps["min"], tps["max"])


def _throughput(e):
    levels = (e.get("figures") or {}).get("throughput") or []
    if e["outcome"] != "working" or not levels:
        return "-"
    return "/".join(_num(lv.get("output_throughput"), "%.0f") for lv in levels)


def _at(e):
    """Output tok/s, p99 TTFT and median ITL at the objective's concurrency, then whether the
    candidate meets the objective's target (throughput objective only)."""
    at = e.get("at_objective") or {}
    working = e["outcome"] == "working"
    cells = [_num(at.get(f), fmt) if working else "-" for f, fmt in (
        ("output_throughput", "%.0f"), ("p99_ttft_ms", "%.1f"), ("median_itl_ms", "%.2f"))]
    met = e.get("target_met")
    return cells + ["-" if met is None else ("meets" if met else "misses")]


def _fig(e, name, sub=None):
    fig = e.get("figures") or {}
    value = fig.get(name)
    return value.get(sub) if isinstance(value, dict) and sub else value


def _short(text, width):
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _levels(ranked):
    for e in ranked["ranking"]:
        levels = (e.get("figures") or {}).get("throughput") or []
        if levels:
            return "/".join(str(lv.get("concurrency")) for lv in levels)
    return "-"


def _value(e, objective):
    """A ranked candidate's figure under ``objective``, in words."""
    if objective["name"] == THROUGHPUT:
        return "%s output tok/s at concurrency %s" % (_num(figure_of(e, objective)), objective["concurrency"])
    return "%s tok/s single stream" % _num(figure_of(e, objective))


def _other_head(objective):
    """describe()'s sentence without its "Objective: " and final period."""
    return describe(objective)[len("Objective: "):].rstrip(".")


def other_lines(other):
    """The ranking under the other objective (other of sweep/objective.py), ranked from the
    same records: one line a ranked candidate, then its winner. [] when there is none."""
    if other is None:
        return []
    obj = other["objective"]
    out = ["under the other objective, %s" % _other_head(obj)]
    out += ["  %-3s %s: %s" % (_rank(e), e["label"], _value(e, obj)) for e in other["ranking"] if e.get("rank")]
    return out + ["  " + winner_line(other)]


def other_summary(other):
    """The JSON of the ranking under the other objective (None when there is none)."""
    if other is None:
        return None
    w = other["winner"]
    return {"objective": other["objective"], "winner": None if w is None else {"key": w["key"], "label": w["label"]},
            "ranking": [{"key": e["key"], "label": e["label"], "rank": e["rank"], "tie": e["tie"],
                         "value": figure_of(e, other["objective"])}
                        for e in other["ranking"] if e.get("rank")]}


def console_lines(ranked, sweep_name, host, other=None):
    """A fixed-width ranked table, every candidate, then the winner in one line, then the ranking
    under the other objective."""
    lines = ["sweep %s on %s: %s" % (sweep_name, host, ", ".join(
        "%d %s" % (n, o) for o, n in ranked["counts"].items() if n)),
        ROW % ("rank", "candidate", "key", "outcome", "decode tok/s (min-max)", "noise", "vs base", "TTFT ms",
               "ITL p50", "accept", "tok/s @c=" + _levels(ranked), "c=%s tok/s" % ranked["objective"]["concurrency"],
               "p99 TTFT", "med ITL", "target", "reason")]
    for e in ranked["ranking"]:
        lines.append((ROW % (
            _rank(e), _short(e["label"], 34), e["key"], e["outcome"], _tps(e),
            "+-" + _num(e.get("noise")) if e.get("noise") is not None else "-",
            "-" if e.get("vs_baseline_pct") is None else "%+.1f%%" % e["vs_baseline_pct"],
            _num(_fig(e, "ttft_ms")), _num(_fig(e, "itl_ms", "p50"), "%.2f"),
            _num(_fig(e, "spec_accept_length"), "%.2f"), _throughput(e), *_at(e),
            "" if e["outcome"] == "working" and not e.get("misses") else _short(e["reason"], 140))).rstrip())
    lines.append(winner_line(ranked))
    lines.append("ties: %s" % ranked["tie_rule"]["rule"])
    return lines + other_lines(other)


def _at_heads(ranked, fmt, names):
    conc = ranked["objective"]["concurrency"]
    return tuple("%s %s" % (n, fmt % conc) for n in names)


def _none_meets(ranked):
    """Under a throughput objective with working candidates: the words for no winner."""
    missed = ranked["objective"].get("missed") or []
    if ranked["objective"]["name"] != THROUGHPUT or not missed:
        return None
    return "no working candidate meets the objective (%d miss it: see their reasons)" % len(missed)


def winner_line(ranked):
    w = ranked["winner"]
    if w is None:
        return "winner: none: %s; keep the current profile" % (
            _none_meets(ranked) or "no candidate worked and was measured")
    return "winner: %s [%s] %s" % (w["label"], w["key"], _verdict(ranked))


def _verdict(ranked):
    w, obj = ranked["winner"], ranked["objective"]
    tps = (w["figures"] or {}).get("decode_tps") or {}
    text = "%.1f tok/s single stream" % tps["median"] if tps.get("median") is not None else "no single-stream figure"
    if obj["name"] == THROUGHPUT:
        text = "%.1f output tok/s at concurrency %s (%s)" % (w["at_objective"]["output_throughput"],
                                                           obj["concurrency"], text)
    if w["ties"]:
        text += " (TIE, within noise of: %s)" % ", ".join(w["ties"])
    if w["is_baseline"]:
        text += "; the current profile is the best: nothing to change"
    elif not w["beats_baseline"]:
        text += "; not better than the current profile beyond noise (%s)" % (
            "baseline in the same group" if ranked["baseline"].get("rank") else "no baseline figure")
    elif ranked["baseline"].get("misses"):
        text += ", %+.1f%% vs the current profile, which misses the objective (%s)" % (
            w["vs_baseline_pct"], "; ".join(ranked["baseline"]["misses"]))
    else:
        text += ", %+.1f%% vs the current profile" % w["vs_baseline_pct"]
    return text


def _show(value):
    if value is None:
        return "(unset)"
    return str(norm_value(value)) if value is not True else "true (bare flag)"


def snippet(ranked, sweep_name, host):
    """group_vars YAML for the winner: only the keys that differ from the current profile."""
    w, base = ranked["winner"], ranked["baseline"] or {"args": {}, "env": {}}
    head = "# sweep %s on %s: " % (sweep_name, host)
    if w is None:
        return head + "%s; keep the current profile\n" % (_none_meets(ranked) or "no candidate worked")
    changes = w["changes"]
    if w["is_baseline"] or not (changes["args"] or changes["env"]):
        return head + "the current profile is the best; nothing to change\n"
    lines = [head + "winner %s [%s]" % (w["label"], w["key"]), "# " + _verdict(ranked),
             "# differs from the current profile:"]
    for part, old in (("args", base["args"]), ("env", base["env"])):
        for name, value in changes[part].items():
            lever = LEVERS.get((name, value))
            lines.append("#   %s: %s -> %s%s" % (name, _show(old.get(name)), _show(value),
                                                 " (or %s)" % lever if lever else ""))
    lines.append("# merge these keys into the existing mappings: a mapping set in group_vars replaces the whole one")
    body = {}
    if changes["args"]:
        body["sglang_server_args"] = dict(changes["args"])
    if changes["env"]:
        body["sglang_server_env"] = dict(changes["env"])
    return "\n".join(lines) + "\n" + yaml.safe_dump(body, default_flow_style=False, sort_keys=False)


def _md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _changes_text(e):
    words = ["%s=%s" % (k, _show(v)) for part in ("args", "env") for k, v in e["changes"][part].items()]
    return ", ".join(words) or "(current profile)"


def _ranked_by(ranked):
    obj = ranked["objective"]
    if obj["name"] == THROUGHPUT:
        return ("Ranked by output tok/s at concurrency %s among the working candidates that meet the objective; "
                "%s: those share a rank (`=`). The working candidates that miss it follow, unranked." % (
                    obj["concurrency"], ranked["tie_rule"]["rule"]))
    return "Ranked by single-stream decode tok/s (median of the runs); %s: those share a rank (`=`)." % (
        ranked["tie_rule"]["rule"])


def markdown(ranked, sweep_name, host, generated, other=None):
    out = ["# Sweep `%s` on %s" % (sweep_name, host), "",
           describe(ranked["objective"]), "",
           "Generated %s. Candidates: %s." % (generated, ", ".join(
               "%d %s" % (n, o) for o, n in ranked["counts"].items() if n)),
           _ranked_by(ranked), "",
           "| rank | candidate | key | outcome | decode tok/s median (min-max) | noise | vs baseline | TTFT ms "
           "| ITL p50 ms | accept length | output tok/s @ concurrency %s | %s | target | changes |" % (
               _levels(ranked), " | ".join(_at_heads(ranked, "@ concurrency %s", (
                   "output tok/s", "p99 TTFT ms", "median ITL ms")))),
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for e in ranked["ranking"]:
        out.append("| %s |" % " | ".join(_md_cell(c) for c in (
            _rank(e), e["label"], "`%s`" % e["key"], e["outcome"], _tps(e),
            "+-" + _num(e.get("noise")) if e.get("noise") is not None else "-",
            "-" if e.get("vs_baseline_pct") is None else "%+.1f%%" % e["vs_baseline_pct"],
            _num(_fig(e, "ttft_ms")), _num(_fig(e, "itl_ms", "p50"), "%.2f"),
            _num(_fig(e, "spec_accept_length"), "%.2f"), _throughput(e), *_at(e), _changes_text(e))))
    out += ["", "## Winner", "", winner_line(ranked), "", "```yaml", snippet(ranked, sweep_name, host).rstrip(), "```"]
    if other is not None:
        obj = other["objective"]
        out += ["", "## Under the other objective", "", "The same figures ranked by the objective not declared "
                "(the winner above is the declared objective's): %s." % _other_head(obj), ""]
        out += ["- %s %s: %s" % (_rank(e), _md_cell(e["label"]), _value(e, obj)) for e in other["ranking"] if e.get("rank")]
        out += ["", _md_cell(winner_line(other))]
    grouped = [e for e in ranked["ranking"] if e.get("gpu_order")]
    if grouped:
        out += ["", "## GPUs of each data-parallel replica", ""]
        out += ["- %s (`%s`): %s" % (_md_cell(e["label"]), e["key"], _md_cell("; ".join(e["gpu_order"])))
                for e in grouped]
    missed = [e for e in ranked["ranking"] if e.get("misses")]
    if missed:
        out += ["", "## Working candidates that miss the objective", ""]
        out += ["- %s (`%s`): %s" % (_md_cell(e["label"]), e["key"], _md_cell("; ".join(e["misses"]))) for e in missed]
    failed = [e for e in ranked["ranking"] if e["outcome"] != "working"]
    if failed:
        out += ["", "## Candidates that did not work"]
    for e in failed:
        d = e["details"]
        out += ["", "### %s (`%s`): %s" % (e["label"], e["key"], e["outcome"]), "", _md_cell(e["reason"])]
        if d.get("fix"):
            out += ["", "Fix: %s (source: %s)" % (_md_cell(" ".join(str(d["fix"]).split())), d.get("source"))]
        for title, name in (("Traceback (tail)", "traceback"), ("Journal (last lines)", "journal_tail"),
                            ("SGLang's output (tail)", "stderr_tail")):
            if d.get(name):
                out += ["", title + ":", "", "```text"] + [str(x) for x in d[name]] + ["```"]
        if d.get("output"):
            out += ["", "Output of %s: %s" % (d.get("probe"), d["output"])]
    return "\n".join(out) + "\n"


def summary(ranked, sweep_name, host, generated, missing, other=None):
    """The JSON summary: every candidate's row (no journal), the winner, the counts."""
    def row(e):
        keep = ("key", "label", "aliases", "outcome", "stage", "reason", "rank", "group", "tie", "noise", "low",
                "high", "vs_baseline_pct", "changes", "figures", "duration_s", "at_objective", "target_met", "misses",
                "gpu_order")
        out = dict((k, e.get(k)) for k in keep)
        out["baseline"] = e is ranked["baseline"]
        out["rule"] = e["details"].get("rule")
        return out
    w = ranked["winner"]
    return {
        "sweep_name": sweep_name, "host": host, "generated": generated,
        "complete": not missing, "missing": missing, "counts": ranked["counts"], "tie_rule": ranked["tie_rule"],
        "objective": ranked["objective"],
        "groups": ranked["groups"],
        "winner": None if w is None else dict(row(w), ties=w["ties"], beats_baseline=w["beats_baseline"],
                                              is_baseline=w["is_baseline"]),
        "ranking": [row(e) for e in ranked["ranking"]],
        "other_objective": other_summary(other),
    }

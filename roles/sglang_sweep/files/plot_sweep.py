#!/usr/bin/env python3
"""Plot a sweep's candidates: one bar per candidate with its single-stream decode tok/s median
and min/max error bars; candidates that were rejected, crashed, hung, answered wrong or did not
run are zero-height entries marked with their outcome. With OBJECTIVE_PNG, a second chart:
each measured working candidate's output tok/s at the objective's concurrency (y) against its
single-stream decode tok/s (x), labelled; those that meet the objective's latency target, those
that miss it and the winner marked apart. Runs on the controller with ansible-playbook's own
Python (matplotlib required).

usage: plot_sweep.py SWEEP_JSON OUT_PNG [OBJECTIVE_PNG]

SWEEP_JSON: sweep.json (its ``summary``) or sweep-summary.json, as sglang_sweep_report writes them.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"working": "tab:blue", "baseline": "tab:gray", "winner": "tab:green"}
FAILED_COLOR = "tab:red"
# the objective chart: (colour, marker, legend) of a point by its row's target_met (None: the
# single_stream objective, which has no target)
POINTS = {True: ("tab:blue", "o", "meets the target"), False: (FAILED_COLOR, "X", "misses the target"),
          None: ("tab:blue", "o", "working (no latency target)")}


def load(path):
    """The summary: the file itself (sweep-summary.json) or its ``summary`` (sweep.json)."""
    with open(path) as fh:
        data = json.load(fh)
    if "ranking" not in data:
        data = data.get("summary") or {}
    if "ranking" not in data:
        raise ValueError("%s holds no ranking: run sglang_sweep_report first" % path)
    return data


def label(row):
    text = row["label"] if len(row["label"]) <= 40 else row["label"][:37] + "..."
    if row.get("rank") is not None:
        text = "#%d%s %s" % (row["rank"], "=" if row.get("tie") else "", text)
    return text


def _point(row):
    """(single-stream median, output tok/s at the objective's concurrency) of a working row, or None."""
    tps = (row.get("figures") or {}).get("decode_tps") or {}
    at = row.get("at_objective") or {}
    if row["outcome"] != "working" or tps.get("median") is None or at.get("output_throughput") is None:
        return None
    return tps["median"], at["output_throughput"]


def plot_objective(data, out):
    """Throughput at the objective's concurrency against single-stream decode tok/s."""
    objective = data.get("objective") or {}
    winner = (data.get("winner") or {}).get("key")
    fig, ax = plt.subplots(figsize=(9, 6))
    drawn, seen = 0, set()
    for row in data["ranking"]:
        point = _point(row)
        if point is None:
            continue
        color, marker, legend = POINTS[row.get("target_met")]
        ax.scatter(*point, color=color, marker=marker, s=60, zorder=3,
                   label=None if legend in seen else legend, edgecolors="black" if row.get("baseline") else None)
        seen.add(legend)
        if row["key"] == winner:
            ax.scatter(*point, s=320, facecolors="none", edgecolors=COLORS["winner"], linewidths=2.5, zorder=4,
                       label="winner")
        ax.annotate(label(row), point, textcoords="offset points", xytext=(6, 4), fontsize=8)
        drawn += 1
    if not drawn:
        ax.text(0.5, 0.5, "no working candidate has both figures", ha="center", va="center", transform=ax.transAxes)
    else:
        ax.legend(fontsize=8, loc="best")
    target = objective.get("latency_target") or {}
    ax.margins(x=0.2, y=0.1)  # room for the labels
    ax.set_xlabel("single-stream decode tok/s (median)")
    ax.set_ylabel("output tok/s at concurrency %s" % objective.get("concurrency"))
    ax.grid(True, alpha=0.3)
    ax.set_title("SGLang sweep %s on %s: objective %s\ntarget %s; black edge = baseline"
                 % (data.get("sweep_name"), data.get("host"), objective.get("name", "single_stream"),
                    ", ".join("%s <= %g ms" % kv for kv in sorted(target.items())) or "none"), fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print("wrote %s (%d candidates plotted)" % (out, drawn))


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        data = load(argv[1])
    except (OSError, ValueError) as exc:
        print("plot_sweep.py: %s" % exc, file=sys.stderr)
        return 1
    rows = data["ranking"]
    winner = (data.get("winner") or {}).get("key")
    fig, ax = plt.subplots(figsize=(max(8, 0.7 * len(rows) + 3), 6))
    xs = list(range(len(rows)))
    top = max([((r.get("figures") or {}).get("decode_tps") or {}).get("max") or 0 for r in rows] + [1])
    for x, row in zip(xs, rows):
        tps = (row.get("figures") or {}).get("decode_tps") if row["outcome"] == "working" else None
        if tps and tps.get("median") is not None:
            color = COLORS["winner"] if row["key"] == winner else (
                COLORS["baseline"] if row.get("baseline") else COLORS["working"])
            ax.bar(x, tps["median"], color=color, hatch="//" if row.get("tie") else None, edgecolor="black")
            ax.errorbar(x, tps["median"], yerr=[[tps["median"] - tps["min"]], [tps["max"] - tps["median"]]],
                        fmt="none", ecolor="black", capsize=4)
            ax.text(x, tps["max"] + 0.01 * top, "%.1f" % tps["median"], ha="center", va="bottom", fontsize=8)
        else:
            ax.bar(x, 0, color=FAILED_COLOR)
            ax.plot([x], [0], marker="x", color=FAILED_COLOR, markersize=12, markeredgewidth=2, clip_on=False)
            ax.text(x, 0.02 * top, row["outcome"], rotation=90, ha="center", va="bottom", fontsize=9,
                    color=FAILED_COLOR)
    ax.set_xticks(xs)
    ax.set_xticklabels([label(r) for r in rows], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("single-stream decode tok/s (median, bars: min-max)")
    ax.set_ylim(0, top * 1.15)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title("SGLang sweep %s on %s\ngreen = winner, grey = baseline, hatched = tie, red x = not working"
                 % (data.get("sweep_name"), data.get("host")), fontsize=10)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=100)
    print("wrote %s (%d candidates, %d working)" % (argv[2], len(rows), (data.get("counts") or {}).get("working", 0)))
    if len(argv) == 4:
        plot_objective(data, argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Plot decode tokens/s, median TTFT and the quality check's mean |d logprob| against the
last-known-good reference over the verification history (one line per host and flag set). Runs on the controller with ansible-playbook's own Python (matplotlib required).

usage: plot_history.py HISTORY_JSONL OUT_PNG
"""
import datetime
import json
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402


def when(rec, i):
    """The record's time (ISO 8601 UTC), else its run id (%Y%m%dT%H%M%SZ), else its index."""
    for key, fmt in (("time", "%Y-%m-%dT%H:%M:%SZ"), ("run_id", "%Y%m%dT%H%M%SZ")):
        try:
            return datetime.datetime.strptime(rec.get(key) or "", fmt)
        except ValueError:
            continue
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(minutes=i)


def load(path):
    recs = []
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                recs.append(json.loads(line))
            except ValueError:
                continue
    return recs


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    recs = load(argv[1])
    series = OrderedDict()
    for r in recs:
        key = "%s [%s]" % (r.get("host"), r.get("flag_hash"))
        series.setdefault(key, []).append(r)
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    for key, rs in series.items():
        xs = [when(r, i) for i, r in enumerate(rs)]
        ax1.plot(xs, [r.get("decode_tps") for r in rs], marker="o", label=key)
        ax2.plot(xs, [r.get("ttft_ms") for r in rs], marker="o", label=key)
        ax3.plot(xs, [r.get("quality_mean_abs_dlogprob") for r in rs], marker="o", label=key)
        for x, r in zip(xs, rs):
            if r.get("passed") is False:
                ax1.plot([x], [r.get("decode_tps") or 0], marker="x", color="red", markersize=12)
                ax2.plot([x], [r.get("ttft_ms") or 0], marker="x", color="red", markersize=12)
            if r.get("quality") == "degraded":
                ax3.plot([x], [r.get("quality_mean_abs_dlogprob") or 0], marker="x", color="red", markersize=12)
    ax1.set_ylabel("single-stream decode tok/s")
    ax2.set_ylabel("median TTFT (ms)")
    ax3.set_ylabel("quality: mean |d logprob|\nvs last-known-good")
    ax3.set_xlabel("run time, UTC (one line per host and flag set; red x = failed gate, or degraded answers)")
    for ax in (ax1, ax2, ax3):
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%m-%d %H:%M"))
        ax.grid(True, alpha=0.3)
    fig.autofmt_xdate()
    if series:
        ax1.legend(fontsize="small")
    last = recs[-1]["run_id"] if recs else "-"
    fig.suptitle("SGLang verification history (%d runs, last %s)" % (len(recs), last))
    fig.tight_layout()
    fig.savefig(argv[2], dpi=100)
    print("wrote %s (%d records, %d series)" % (argv[2], len(recs), len(series)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

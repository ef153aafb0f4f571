"""Ranking, ties, the winner's snippet, the report texts (plugins/module_utils/
sweep/rank.py, sweep/render.py) and the chart (roles/sglang_sweep/files/plot_sweep.py)."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.sglang.deploy.plugins.module_utils.sweep import plan
from ansible_collections.sglang.deploy.plugins.module_utils.sweep import rank as R
from ansible_collections.sglang.deploy.plugins.module_utils.sweep import render
from ansible_collections.sglang.deploy.plugins.module_utils.verify.stats import robust_stats

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PLOT = os.path.join(ROOT, "roles", "sglang_sweep", "files", "plot_sweep.py")

CANDS = plan.expand({"model-path": "/m", "attention-backend": "triton"}, {"OMP_NUM_THREADS": "1"},
                    axes={"attention-backend": ["triton", "flashinfer", "trtllm_mha"], "OMP_NUM_THREADS": ["1", "2"]},
                    candidates=[{"name": "fa3 (refused)", "args": {"attention-backend": "fa3"}}])
BY_LABEL = dict((c["label"], c) for c in CANDS)


def working(runs, accept=None):
    stats = robust_stats(runs)
    stats["mad"] = round(stats["sigma"] / 1.4826, 3)
    return {"status": "finished", "outcome": "working", "stage": "measure", "reason": "ok", "details": {},
            "figures": {"decode_tps": stats, "ttft_ms": 20.0, "itl_ms": {"p50": 3.5}, "spec_accept_length": accept,
                        "throughput": [{"concurrency": 1, "output_throughput": 280.0},
                                       {"concurrency": 4, "output_throughput": 900.0}]}}


def failed(outcome, reason, **details):
    return {"status": "finished", "outcome": outcome, "stage": "start", "reason": reason, "details": details,
            "figures": None}


def records(**by_label):
    return dict((BY_LABEL[label]["key"], rec) for label, rec in by_label.items())


RECORDS = records(**{
    "baseline": working([100.0, 101.0, 99.0]),
    "OMP_NUM_THREADS=2": working([103.0, 104.0, 102.0]),                      # within 5% of the best: tie
    "attention-backend=flashinfer": working([130.0, 131.0, 129.0], accept=1.8),  # clear winner? no: see below
    "attention-backend=flashinfer OMP_NUM_THREADS=2": working([128.0, 127.0, 129.5]),
    "attention-backend=trtllm_mha": failed("crashed", "exited while starting: RuntimeError: boom",
                                           journal_tail=["a", "b"], traceback=["Traceback", "RuntimeError: boom"]),
    "attention-backend=trtllm_mha OMP_NUM_THREADS=2": failed("hung", "no generation within the timeout"),
    "fa3 (refused)": failed("rejected", "[sm120-hybrid-gdn-attention-backend] --attention-backend: fa3",
                            rule="sm120-hybrid-gdn-attention-backend", fix="use triton", source="docs/x.md"),
})


def test_ranking_groups_ties_within_noise_and_lists_every_candidate():
    ranked = R.rank(CANDS, RECORDS)
    rows = [(e["label"], e["rank"], e["tie"], e["outcome"]) for e in ranked["ranking"]]
    assert rows == [
        ("attention-backend=flashinfer", 1, True, "working"),
        ("attention-backend=flashinfer OMP_NUM_THREADS=2", 1, True, "working"),
        ("OMP_NUM_THREADS=2", 2, True, "working"),
        ("baseline", 2, True, "working"),
        ("attention-backend=trtllm_mha", None, False, "crashed"),
        ("attention-backend=trtllm_mha OMP_NUM_THREADS=2", None, False, "hung"),
        ("fa3 (refused)", None, False, "rejected"),
    ]
    w = ranked["winner"]
    assert w["label"] == "attention-backend=flashinfer" and w["tie"] is True
    assert w["ties"] == ["attention-backend=flashinfer OMP_NUM_THREADS=2"]
    assert w["beats_baseline"] is True and w["is_baseline"] is False
    assert w["vs_baseline_pct"] == 30.0
    assert ranked["counts"]["working"] == 4 and ranked["counts"]["rejected"] == 1
    assert ranked["ranking"][0]["noise"] == pytest.approx(6.5)  # 5% of 130 beats 3 x 1.4826 x 1.0


def test_a_noisy_figure_widens_its_interval_into_a_tie():
    noisy = dict(RECORDS)
    noisy[BY_LABEL["baseline"]["key"]] = working([70.0, 100.0, 125.0])  # MAD 25: +-111
    ranked = R.rank(CANDS, noisy)
    assert ranked["winner"]["beats_baseline"] is False
    assert [e["label"] for e in ranked["ranking"] if e["rank"] == 1][-1] == "baseline"
    assert "not better than the current profile beyond noise" in render.winner_line(ranked)


def test_all_failed_has_no_winner_and_says_so():
    recs = dict((c["key"], failed("crashed", "boom")) for c in CANDS)
    ranked = R.rank(CANDS, recs)
    assert ranked["winner"] is None and ranked["groups"] == []
    assert all(e["rank"] is None for e in ranked["ranking"])
    lines = render.console_lines(ranked, "s", "h")
    assert lines[-2].startswith("winner: none")
    assert render.snippet(ranked, "s", "h") == "# sweep s on h: no candidate worked; keep the current profile\n"


def test_candidates_without_a_finished_record_are_listed():
    recs = records(baseline=working([100.0, 101.0]))
    recs[BY_LABEL["OMP_NUM_THREADS=2"]["key"]] = {"status": "running", "outcome": None, "reason": "running"}
    ranked = R.rank(CANDS, recs)
    outcome = dict((e["label"], e["outcome"]) for e in ranked["ranking"])
    assert outcome["OMP_NUM_THREADS=2"] == "interrupted" and outcome["fa3 (refused)"] == "not run"
    assert ranked["winner"]["is_baseline"] is True
    assert "nothing to change" in render.snippet(ranked, "s", "h")


def test_snippet_holds_only_what_differs_with_a_comment():
    cands = plan.expand({"model-path": "/m", "attention-backend": "triton", "enable-metrics": True},
                        {"OMP_NUM_THREADS": 16},
                        candidates=[{"name": "new", "args": {"attention-backend": "flashinfer", "enable-metrics": None},
                                     "env": {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1"}}])
    ranked = R.rank(cands, {cands[0]["key"]: working([100.0, 100.5]), cands[1]["key"]: working([150.0, 151.0])})
    text = render.snippet(ranked, "blackwell-backends", "gpu-node-01")
    assert yaml.safe_load(text) == {"sglang_server_args": {"attention-backend": "flashinfer", "enable-metrics": None},
                                    "sglang_server_env": {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1"}}
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert comments[0] == "# sweep blackwell-backends on gpu-node-01: winner new [%s]" % cands[1]["key"]
    assert "#   attention-backend: triton -> flashinfer" in comments
    assert "#   enable-metrics: true (bare flag) -> (unset)" in comments
    assert ("#   SGLANG_ENABLE_PCIE_IPC_ALLREDUCE: (unset) -> 1 (or sglang_server_pcie_ipc_allreduce: true)"
            in comments)
    assert any("replaces the whole one" in line for line in comments)
    assert "model-path" not in text and "OMP_NUM_THREADS" not in text


def test_console_markdown_and_summary():
    ranked = R.rank(CANDS, RECORDS)
    lines = render.console_lines(ranked, "local-cpu", "h1")
    assert lines[0] == "sweep local-cpu on h1: 4 working, 1 hung, 1 crashed, 1 rejected"
    header, rows = lines[1], lines[2:9]
    assert header.startswith("rank candidate") and "tok/s @c=1/4" in header
    assert rows[0].startswith("1=   attention-backend=flashinfer ")
    assert "130.0 (129.0-131.0)" in rows[0] and "+30.0%" in rows[0] and "1.80" in rows[0] and "280/900" in rows[0]
    assert rows[-1].startswith("-    fa3 (refused)") and "[sm120-hybrid-gdn-attention-backend]" in rows[-1]
    assert len({row.index("working") for row in rows[:4]}) == 1  # fixed width
    assert lines[-2].startswith("winner: attention-backend=flashinfer [") and "TIE" in lines[-2]
    md = render.markdown(ranked, "local-cpu", "h1", "2026-03-02T10:00:00Z")
    assert md.startswith("# Sweep `local-cpu` on h1")
    assert "| 1= | attention-backend=flashinfer |" in md
    assert "### fa3 (refused) (`%s`): rejected" % BY_LABEL["fa3 (refused)"]["key"] in md
    assert "RuntimeError: boom" in md and "Fix: use triton (source: docs/x.md)" in md
    assert "```yaml\n# sweep local-cpu on h1: winner attention-backend=flashinfer" in md
    summ = render.summary(ranked, "local-cpu", "h1", "2026-03-02T10:00:00Z", [])
    json.dumps(summ)
    assert summ["complete"] is True and summ["winner"]["ties"] == ["attention-backend=flashinfer OMP_NUM_THREADS=2"]
    assert [r["baseline"] for r in summ["ranking"]].count(True) == 1
    assert summ["ranking"][-1]["rule"] == "sm120-hybrid-gdn-attention-backend"
    assert "journal_tail" not in json.dumps(summ["ranking"][0])


@pytest.mark.parametrize("wrap", [False, True])
def test_plot_script_writes_a_png(tmp_path, wrap):
    ranked = R.rank(CANDS, RECORDS)
    summ = render.summary(ranked, "local-cpu", "h1", "2026-03-02T10:00:00Z", [])
    src = tmp_path / ("sweep.json" if wrap else "sweep-summary.json")
    src.write_text(json.dumps({"sweep_name": "local-cpu", "summary": summ} if wrap else summ))
    out = tmp_path / "sweep.png"
    proc = subprocess.run([sys.executable, PLOT, str(src), str(out)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "7 candidates, 4 working" in proc.stdout


def test_plot_script_refuses_a_file_without_ranking(tmp_path):
    src = tmp_path / "sweep.json"
    src.write_text(json.dumps({"sweep_name": "x", "candidates": []}))
    proc = subprocess.run([sys.executable, PLOT, str(src), str(tmp_path / "o.png")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 1 and "run sglang_sweep_report first" in proc.stderr


# ---------------------------------------------------------------- the throughput objective
TARGET = {"ttft_p99_ms": 500, "itl_median_ms": 20}
THROUGHPUT = {"name": "throughput", "concurrency": 4, "latency_target": TARGET}


def at_c4(runs, tput, p99=None, itl=None):
    """A working record whose level 4 has these figures (level 1 as in working())."""
    rec = working(runs)
    rec["figures"]["throughput"] = [
        {"concurrency": 1, "output_throughput": 280.0, "p99_ttft_ms": 30.0, "median_itl_ms": 3.5},
        {"concurrency": 4, "output_throughput": tput, "p99_ttft_ms": p99, "median_itl_ms": itl}]
    return rec


THROUGHPUT_RECORDS = dict(RECORDS, **records(**{
    "baseline": at_c4([100.0, 101.0, 99.0], 900.0, p99=420.0, itl=12.0),
    "OMP_NUM_THREADS=2": at_c4([103.0, 104.0, 102.0], 1500.0, p99=650.0, itl=11.0),    # fastest, TTFT misses
    "attention-backend=flashinfer": at_c4([130.0, 131.0, 129.0], 1000.0, p99=300.0, itl=9.0),
    "attention-backend=flashinfer OMP_NUM_THREADS=2": at_c4([128.0, 127.0, 129.5], 1200.0, p99=None, itl=8.0),
}))


def test_throughput_ranks_those_within_the_target_by_output_tokens_at_the_level():
    ranked = R.rank(CANDS, THROUGHPUT_RECORDS, objective=THROUGHPUT)
    rows = [(e["label"], e["rank"], e["tie"], e["target_met"]) for e in ranked["ranking"]]
    assert rows == [
        # 1000 +- 5% (950-1050) does not overlap 900 +- 5% (855-945): two groups
        ("attention-backend=flashinfer", 1, False, True),
        ("baseline", 2, False, True),
        # working but missing the target: after the ranked ones, best throughput first, unranked
        ("OMP_NUM_THREADS=2", None, False, False),
        ("attention-backend=flashinfer OMP_NUM_THREADS=2", None, False, False),
        ("attention-backend=trtllm_mha", None, False, None),
        ("attention-backend=trtllm_mha OMP_NUM_THREADS=2", None, False, None),
        ("fa3 (refused)", None, False, None),
    ]
    by = dict((e["label"], e) for e in ranked["ranking"])
    assert by["attention-backend=flashinfer"]["noise"] == pytest.approx(50.0)  # the floor's 5% of 1000
    assert by["OMP_NUM_THREADS=2"]["misses"] == ["ttft_p99_ms <= 500 ms: p99 TTFT 650 ms at concurrency 4"]
    # a figure not measured does not meet its limit, and its reason says so
    missing = by["attention-backend=flashinfer OMP_NUM_THREADS=2"]
    assert missing["misses"] == ["ttft_p99_ms <= 500 ms: no p99 TTFT measured at concurrency 4"]
    assert "no p99 TTFT measured at concurrency 4" in missing["reason"] and missing["outcome"] == "working"
    w = ranked["winner"]
    assert w["label"] == "attention-backend=flashinfer" and w["beats_baseline"] is True
    assert w["vs_baseline_pct"] == pytest.approx(11.1)  # 1000 vs 900 output tok/s, not single stream
    assert ranked["objective"]["met"] == 2 and len(ranked["objective"]["missed"]) == 2
    assert "output tok/s at concurrency 4 +- 5%" in ranked["tie_rule"]["rule"]
    assert render.winner_line(ranked).endswith("1000.0 output tok/s at concurrency 4 (130.0 tok/s single stream), "
                                               "+11.1% vs the current profile")


def test_throughput_figures_within_the_floor_tie():
    recs = dict(THROUGHPUT_RECORDS, **records(baseline=at_c4([100.0, 101.0, 99.0], 980.0, p99=420.0, itl=12.0)))
    ranked = R.rank(CANDS, recs, objective=THROUGHPUT)
    assert [e["label"] for e in ranked["ranking"] if e["rank"] == 1] == ["attention-backend=flashinfer", "baseline"]
    assert ranked["winner"]["tie"] is True and ranked["winner"]["beats_baseline"] is False
    assert "baseline in the same group" in render.winner_line(ranked)


def test_a_baseline_that_misses_the_target_is_beaten_by_a_winner_that_meets_it():
    recs = dict(THROUGHPUT_RECORDS, **records(baseline=at_c4([100.0, 101.0, 99.0], 1100.0, p99=420.0, itl=25.0)))
    ranked = R.rank(CANDS, recs, objective=THROUGHPUT)
    w = ranked["winner"]
    assert w["label"] == "attention-backend=flashinfer" and w["beats_baseline"] is True and w["vs_baseline_pct"] < 0
    assert "which misses the objective (itl_median_ms <= 20 ms: median ITL 25 ms at concurrency 4)" in \
        render.winner_line(ranked)


def test_no_candidate_meets_the_target_no_winner_and_says_why():
    objective = dict(THROUGHPUT, latency_target={"itl_median_ms": 1})
    ranked = R.rank(CANDS, THROUGHPUT_RECORDS, objective=objective)
    assert ranked["winner"] is None and ranked["groups"] == []
    assert [e["rank"] for e in ranked["ranking"]] == [None] * 7
    assert [e["label"] for e in ranked["ranking"][:4]] == [
        "OMP_NUM_THREADS=2", "attention-backend=flashinfer OMP_NUM_THREADS=2", "attention-backend=flashinfer",
        "baseline"]
    assert render.winner_line(ranked) == ("winner: none: no working candidate meets the objective (4 miss it: see "
                                          "their reasons); keep the current profile")
    assert render.snippet(ranked, "s", "h").startswith("# sweep s on h: no working candidate meets the objective")


def test_a_level_not_measured_misses_even_without_a_target():
    ranked = R.rank(CANDS, RECORDS, objective={"name": "throughput", "concurrency": 8, "latency_target": {}})
    assert ranked["winner"] is None
    assert ranked["ranking"][0]["misses"] == ["no output tok/s measured at concurrency 8"]


def test_single_stream_with_a_level_ranks_as_without_and_shows_the_level():
    plain = R.rank(CANDS, RECORDS)
    shown = R.rank(CANDS, THROUGHPUT_RECORDS, objective={"name": "single_stream", "concurrency": 4,
                                                          "latency_target": {}})
    keys = ("key", "rank", "group", "tie", "noise", "low", "high", "vs_baseline_pct", "reason")
    assert [[e.get(k) for k in keys] for e in shown["ranking"]] == [[e.get(k) for k in keys] for e in plain["ranking"]]
    assert shown["tie_rule"] == plain["tie_rule"] and shown["groups"] == plain["groups"]
    assert render.winner_line(shown) == render.winner_line(plain)
    assert all(e["target_met"] is None and e["misses"] == [] for e in shown["ranking"])
    assert shown["ranking"][0]["at_objective"] == {"concurrency": 4, "output_throughput": 1000.0,
                                                   "p99_ttft_ms": 300.0, "median_itl_ms": 9.0}


def test_the_report_shows_the_objective_and_every_candidates_figures_at_its_level():
    for objective in (THROUGHPUT, {"name": "single_stream", "concurrency": 4, "latency_target": {}}):
        ranked = R.rank(CANDS, THROUGHPUT_RECORDS, objective=objective)
        md = render.markdown(ranked, "s", "h", "2026-03-02T10:00:00Z")
        lines = md.splitlines()
        assert lines[2].startswith("Objective: %s" % objective["name"])
        assert "| output tok/s @ concurrency 4 | p99 TTFT ms @ concurrency 4 | median ITL ms @ concurrency 4 " \
               "| target |" in lines[7]
        row = next(line for line in lines if line.startswith("| ") and "| attention-backend=flashinfer |" in line)
        assert "| 1000 | 300.0 | 9.00 |" in row
        summ = render.summary(ranked, "s", "h", "2026-03-02T10:00:00Z", [])
        assert summ["objective"]["name"] == objective["name"] and summ["objective"]["concurrency"] == 4
        first = dict((r["label"], r) for r in summ["ranking"])["attention-backend=flashinfer"]
        assert first["at_objective"]["median_itl_ms"] == 9.0 and first["figures"]["decode_tps"]["median"] == 130.0
    assert lines[2] == ("Objective: single_stream: single-stream decode tok/s, no latency target; throughput and "
                        "latency shown at concurrency 4.")
    ranked = R.rank(CANDS, THROUGHPUT_RECORDS, objective=THROUGHPUT)
    md = render.markdown(ranked, "s", "h", "2026-03-02T10:00:00Z")
    assert md.splitlines()[2] == ("Objective: throughput: output tok/s at concurrency 4, within the latency target "
                                  "p99 TTFT <= 500 ms, median ITL <= 20 ms.")
    assert "## Working candidates that miss the objective" in md
    assert "- OMP_NUM_THREADS=2 (`%s`): ttft_p99_ms <= 500 ms: p99 TTFT 650 ms at concurrency 4" % (
        BY_LABEL["OMP_NUM_THREADS=2"]["key"]) in md
    console = render.console_lines(ranked, "s", "h")
    assert "c=4 tok/s" in console[1]
    row = next(line for line in console if line.startswith("-    OMP_NUM_THREADS=2 "))
    assert " misses " in row and "p99 TTFT 650 ms" in row
    # the snippet keeps its form: comments, then the keys that differ
    text = render.snippet(ranked, "s", "h")
    assert text.splitlines()[1].startswith("# 1000.0 output tok/s at concurrency 4")
    assert yaml.safe_load(text) == {"sglang_server_args": {"attention-backend": "flashinfer"}}


def test_plot_script_writes_the_objective_chart(tmp_path):
    ranked = R.rank(CANDS, THROUGHPUT_RECORDS, objective=THROUGHPUT)
    src = tmp_path / "sweep-summary.json"
    src.write_text(json.dumps(render.summary(ranked, "s", "h", "2026-03-02T10:00:00Z", [])))
    out, objective_png = tmp_path / "sweep.png", tmp_path / "sweep-objective.png"
    proc = subprocess.run([sys.executable, PLOT, str(src), str(out), str(objective_png)], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == objective_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the 4 working candidates with both figures; the failed ones have no point
    assert "wrote %s (4 candidates plotted)" % objective_png in proc.stdout


def test_the_report_also_ranks_by_the_objective_not_declared():
    """A throughput sweep shows the single-stream order of the same records, and a single-stream
    sweep the throughput order at its level (no target): the winner kept is the declared one's."""
    from ansible_collections.sglang.deploy.plugins.module_utils.sweep.objective import other
    declared = R.rank(CANDS, THROUGHPUT_RECORDS, objective=THROUGHPUT)
    alt = R.rank(CANDS, THROUGHPUT_RECORDS, objective=other(declared["objective"]))
    assert alt["objective"]["name"] == "single_stream" and alt["objective"]["concurrency"] == 4
    # single stream: flashinfer 130 and flashinfer+OMP2 128 tie; OMP2 103 and baseline 100 tie
    summ = render.other_summary(alt)
    assert [(r["label"], r["rank"], r["tie"]) for r in summ["ranking"]] == [
        ("attention-backend=flashinfer", 1, True), ("attention-backend=flashinfer OMP_NUM_THREADS=2", 1, True),
        ("OMP_NUM_THREADS=2", 2, True), ("baseline", 2, True)]
    assert summ["winner"]["label"] == "attention-backend=flashinfer" and summ["ranking"][0]["value"] == 130.0
    lines = render.console_lines(declared, "s", "h", alt)
    at = lines.index("under the other objective, single_stream: single-stream decode tok/s, no latency target; "
                     "throughput and latency shown at concurrency 4")
    assert lines[at + 1] == "  1=  attention-backend=flashinfer: 130.0 tok/s single stream"
    assert lines[-1].startswith("  winner: attention-backend=flashinfer [")
    md = render.markdown(declared, "s", "h", "2026-03-02T10:00:00Z", alt)
    assert "## Under the other objective" in md and "- 2= baseline: 100.0 tok/s single stream" in md
    # the declared winner is unchanged by the other ranking: the one within the target
    assert render.summary(declared, "s", "h", "t", [], alt)["winner"]["label"] == "attention-backend=flashinfer"
    # the other way round: every working candidate ranked by output tok/s at 4, the target not applied
    single = {"name": "single_stream", "concurrency": 4, "latency_target": {}}
    alt = R.rank(CANDS, THROUGHPUT_RECORDS, objective=other(single))
    assert alt["objective"] == dict(name="throughput", concurrency=4, latency_target={}, met=4, missed=[])
    assert [(r["label"], r["rank"], r["value"]) for r in render.other_summary(alt)["ranking"]] == [
        ("OMP_NUM_THREADS=2", 1, 1500.0), ("attention-backend=flashinfer OMP_NUM_THREADS=2", 2, 1200.0),
        ("attention-backend=flashinfer", 3, 1000.0), ("baseline", 4, 900.0)]
    assert "- 1 OMP_NUM_THREADS=2: 1500.0 output tok/s at concurrency 4" in render.markdown(
        R.rank(CANDS, THROUGHPUT_RECORDS, objective=single), "s", "h", "t", alt)
    # nothing measured at a level: no other ranking
    assert other({"name": "single_stream", "concurrency": None, "latency_target": {}}) is None
    assert render.other_lines(None) == [] and render.other_summary(None) is None


def test_the_report_says_which_gpus_each_replica_of_a_candidate_got():
    rec = dict(THROUGHPUT_RECORDS[BY_LABEL["attention-backend=flashinfer"]["key"]],
               gpu_order=["DP rank 0: GPUs 0,2,4,6: GPUs 0,2,4,6 under one PCIe switch tree (PXB)",
                          "DP rank 1: GPUs 1,3,5,7: GPUs 1,3,5,7 under one PCIe switch tree (PXB)"])
    recs = dict(THROUGHPUT_RECORDS, **{BY_LABEL["attention-backend=flashinfer"]["key"]: rec})
    ranked = R.rank(CANDS, recs, objective=THROUGHPUT)
    md = render.markdown(ranked, "s", "h", "t")
    assert "## GPUs of each data-parallel replica" in md
    assert ("- attention-backend=flashinfer (`%s`): DP rank 0: GPUs 0,2,4,6: GPUs 0,2,4,6 under one PCIe switch "
            "tree (PXB); DP rank 1: GPUs 1,3,5,7" % BY_LABEL["attention-backend=flashinfer"]["key"]) in md
    rows = dict((r["label"], r) for r in render.summary(ranked, "s", "h", "t", [])["ranking"])
    assert rows["attention-backend=flashinfer"]["gpu_order"][1].startswith("DP rank 1: GPUs 1,3,5,7")
    assert rows["baseline"]["gpu_order"] == []
    # no candidate grouped (the CPU profile): no such section
    assert "## GPUs of each" not in render.markdown(R.rank(CANDS, THROUGHPUT_RECORDS, objective=THROUGHPUT), "s", "h", "t")

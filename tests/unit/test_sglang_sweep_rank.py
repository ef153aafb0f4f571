"""Ranking, ties, the winner's snippet, the report texts (plugins/module_utils/
sglang_sweep_rank.py, sglang_sweep_render.py) and the chart (roles/sglang_sweep/files/plot_sweep.py)."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.sglang.deploy.plugins.module_utils import sglang_sweep_plan as plan
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_sweep_rank as R
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_sweep_render as render
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_verify_stats import robust_stats

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

"""The sweep's controller modules (plugins/modules/sglang_sweep_*.py) through their main(), as Ansible
runs them: plan, record (running, then the outcome), report, a resumed sweep, check mode."""

import copy
import json
import os

from ansible_collections.sglang.deploy.plugins.modules import sglang_sweep_plan
from ansible_collections.sglang.deploy.plugins.modules import sglang_sweep_record
from ansible_collections.sglang.deploy.plugins.modules import sglang_sweep_report
from test_sglang_sweep_classify import CRASH_WAIT, HUNG_WAIT, WORKING

HOST = "sglang-local-1"
CURRENT_ARGS = {"model-path": "/data/models/tiny-qwen2", "device": "cpu", "enable-metrics": True,
                "api-key": "s3cret-key"}
CURRENT_ENV = {"OMP_NUM_THREADS": "1"}
SWEEP = {"sweep_name": "local-cpu", "axes": {"OMP_NUM_THREADS": ["1", "2"], "max-running-requests": [None, 4]},
         "candidates": [{"name": "refused", "args": {"schedule-policy": "fastest"}}],
         "time_budget": 1800, "candidate_timeout": 240}


def plan_args(tmp_path, **kw):
    args = dict(SWEEP, host=HOST, report_dir=str(tmp_path), current_args=CURRENT_ARGS, current_env=CURRENT_ENV)
    args.update(kw)
    return args


def record(run_module, tmp_path, cand, **kw):
    return run_module(sglang_sweep_record, dict(host=HOST, report_dir=str(tmp_path), sweep_name="local-cpu",
                                                candidate=cand, **kw))


def files(tmp_path):
    d = tmp_path / "local-cpu" / HOST
    return sorted(os.listdir(d)) if d.exists() else []


def test_plan_writes_the_sweep_file_and_returns_the_candidates(run_module, tmp_path):
    out = run_module(sglang_sweep_plan, plan_args(tmp_path))
    assert out["changed"] is False
    labels = [c["label"] for c in out["candidates"]]
    # the product's last axis varies fastest; flags before variables in a label
    assert labels == ["baseline", "max-running-requests=4", "OMP_NUM_THREADS=2",
                      "max-running-requests=4 OMP_NUM_THREADS=2", "refused"]
    assert out["todo"] == out["candidates"] and out["done"] == []
    assert out["candidates"][0]["args"]["api-key"] == "<redacted>"  # what -v shows
    revealed = run_module(sglang_sweep_plan, plan_args(tmp_path, reveal=True, _ansible_no_log=True),
                          check_mode=True)  # the play's no_log task
    assert revealed["candidates"][0]["args"]["api-key"] == "s3cret-key"  # the play launches with it
    b = out["budget"]
    assert b["worst_case_s"] == 5 * 240 and b["time_budget_s"] == 1800 and b["candidate_timeout_s"] == 240
    assert b["deadline_epoch"] > 0 and b["started"] == b["run_started"]
    assert out["sweep_dir"] == str(tmp_path / "local-cpu" / HOST)
    with open(os.path.join(out["sweep_dir"], "sweep.json")) as fh:
        text = fh.read()
    assert "s3cret-key" not in text  # secrets never reach the disk
    data = json.loads(text)
    assert [c["key"] for c in data["candidates"]] == [c["key"] for c in out["candidates"]]
    assert data["settings"]["axes"] == SWEEP["axes"] and len(data["runs"]) == 1
    assert out["lines"][0].startswith("sweep local-cpu on sglang-local-1: 5 candidate(s), 0 done earlier, 5 to run")
    assert out["lines"][1] == "  todo %s  baseline" % out["candidates"][0]["key"]


def test_plan_refuses_a_bad_sweep(run_module, tmp_path):
    out = run_module(sglang_sweep_plan, plan_args(tmp_path, axes={"OMP_NUM_THREADS": "2"}))
    assert out["failed"] is True and "sweep_axes['OMP_NUM_THREADS'] must be a non-empty list" in out["msg"]
    out = run_module(sglang_sweep_plan, plan_args(tmp_path, sweep_name="../x"))
    assert out["failed"] is True and "cannot name a directory" in out["msg"]


def test_plan_refuses_a_bad_objective_before_anything_starts(run_module, tmp_path):
    out = run_module(sglang_sweep_plan, plan_args(tmp_path, objective="throughput", objective_concurrency=16,
                                                  concurrency=[1, 4]))
    assert out["failed"] is True and out["msg"].startswith("sweep local-cpu: sweep_objective_concurrency 16 is not "
                                                           "one of sweep_concurrency [1, 4]")
    assert out["msg"].endswith("(nothing was started)") and files(tmp_path) == []
    out = run_module(sglang_sweep_plan, plan_args(tmp_path, latency_target={"ttft_p99_ms": 500}))
    assert out["failed"] is True and "sweep_latency_target is set but sweep_objective is single_stream" in out["msg"]


def test_the_report_ranks_by_the_objective_the_plan_stored(run_module, tmp_path):
    out = run_module(sglang_sweep_plan, plan_args(tmp_path, objective="throughput", concurrency=[1, 4],
                                                  latency_target={"ttft_p99_ms": 50}))
    assert out["objective"] == {"name": "throughput", "concurrency": 4, "latency_target": {"ttft_p99_ms": 50}}
    assert out["lines"][-1] == ("Objective: throughput: output tok/s at concurrency 4, within the latency target "
                                "p99 TTFT <= 50 ms.")
    with open(os.path.join(out["sweep_dir"], "sweep.json")) as fh:
        assert json.load(fh)["settings"]["objective"] == out["objective"]
    base, mrr4 = out["candidates"][:2]
    record(run_module, tmp_path, base, probe=WORKING)  # level 4: 902.5 tok/s, p99 TTFT 80.4 ms: misses
    fast = copy.deepcopy(WORKING)
    fast["result"]["sweep"]["levels"][1].update(output_throughput=700.0, p99_ttft_ms=45.0)
    record(run_module, tmp_path, mrr4, probe=fast)
    report = run_module(sglang_sweep_report, dict(host=HOST, report_dir=str(tmp_path), sweep_name="local-cpu"))
    assert report["winner"]["key"] == mrr4["key"] and report["winner"]["beats_baseline"] is True
    assert report["objective"]["missed"] == [base["key"]]
    assert report["paths"]["objective_plot"].endswith("/sweep-objective.png")
    # the same records by the other objective: single stream, where the baseline that missed the
    # target is ranked too (the winner kept stays the declared objective's)
    alt = report["other_objective"]
    assert alt["objective"]["name"] == "single_stream"
    assert sorted(r["key"] for r in alt["ranking"]) == sorted([base["key"], mrr4["key"]])
    assert any(line.startswith("under the other objective, single_stream") for line in report["lines"])
    with open(report["paths"]["summary"]) as fh:
        summ = json.load(fh)
    assert summ["objective"]["name"] == "throughput"
    assert summ["ranking"][1]["misses"] == ["ttft_p99_ms <= 50 ms: p99 TTFT 80.4 ms at concurrency 4"]
    with open(report["paths"]["markdown"]) as fh:
        assert fh.read().splitlines()[2].startswith("Objective: throughput: output tok/s at concurrency 4")


def test_a_whole_sweep_resumed_after_an_interruption(run_module, tmp_path):
    cands = run_module(sglang_sweep_plan, plan_args(tmp_path))["candidates"]
    base, mrr4, omp2, both, refused = cands
    # first run: the refused one never starts, the baseline works, omp2 crashes, then the play dies
    out = record(run_module, tmp_path, refused, rules=[
        {"rule": "flag-choice", "severity": "error", "flag": "schedule-policy", "message": "fastest is not a choice"}])
    assert out["outcome"] == "rejected" and out["line"].startswith("refused [%s] rejected: [flag-choice]" % refused["key"])
    assert out["time_left_s"] > 1700 and out["next_fits"] is True
    running = record(run_module, tmp_path, base, status="running")
    assert running["outcome"] is None and running["record"]["status"] == "running"
    out = record(run_module, tmp_path, base, parser={"ok": True}, wait={"elapsed": 20.0}, probe=WORKING)
    assert out["outcome"] == "working" and out["record"]["duration_s"] is not None
    assert out["record"]["attempts"] == 1 and "s3cret-key" not in json.dumps(out["record"])
    record(run_module, tmp_path, omp2, status="running")
    assert record(run_module, tmp_path, omp2, wait=CRASH_WAIT)["outcome"] == "crashed"
    record(run_module, tmp_path, mrr4, status="running")  # interrupted here

    resumed = run_module(sglang_sweep_plan, plan_args(tmp_path))
    assert resumed["done"] == [base["key"], omp2["key"], refused["key"]]
    assert [c["key"] for c in resumed["todo"]] == [mrr4["key"], both["key"]]
    assert resumed["budget"]["started"] <= resumed["budget"]["run_started"]
    record(run_module, tmp_path, mrr4, status="running")
    assert record(run_module, tmp_path, mrr4, wait=HUNG_WAIT)["record"]["attempts"] == 2
    record(run_module, tmp_path, both, status="running")
    record(run_module, tmp_path, both, probe=WORKING)

    report = run_module(sglang_sweep_report, dict(host=HOST, report_dir=str(tmp_path), sweep_name="local-cpu"))
    assert report["complete"] is True and report["missing"] == []
    assert report["counts"] == {"working": 2, "degraded": 0, "wrong": 0, "hung": 1, "crashed": 1, "rejected": 1,
                                "interrupted": 0, "not run": 0}
    assert report["winner"]["tie"] is True and report["winner"]["label"] in ("baseline", both["label"])
    assert report["ties"] == [{"rank": 1, "keys": [base["key"], both["key"]],
                               "labels": ["baseline", both["label"]]}]
    assert report["winner"]["args"]["api-key"] == "<redacted>"
    assert any(line.startswith("winner: ") for line in report["lines"])
    assert set(files(tmp_path)) >= {"sweep.json", "sweep.md", "sweep-summary.json", "winner.yml"}
    assert report["paths"]["plot"].endswith("/sweep.png")
    with open(report["paths"]["sweep_json"]) as fh:
        assert json.load(fh)["summary"]["winner"]["key"] == report["winner"]["key"]
    # a later plan of the same sweep keeps the ranking and has nothing left to run
    again = run_module(sglang_sweep_plan, plan_args(tmp_path))
    assert again["todo"] == [] and len(again["done"]) == 5
    with open(report["paths"]["sweep_json"]) as fh:
        data = json.load(fh)
    assert "summary" in data and len(data["runs"]) == 3


def test_record_refuses_a_candidate_changed_after_the_plan(run_module, tmp_path):
    cand = run_module(sglang_sweep_plan, plan_args(tmp_path))["candidates"][1]
    out = record(run_module, tmp_path, dict(cand, env={"OMP_NUM_THREADS": "4"}), probe=WORKING)
    assert out["failed"] is True and "pass the candidate as sglang_sweep_plan returned it" in out["msg"]


def test_report_needs_a_plan(run_module, tmp_path):
    out = run_module(sglang_sweep_report, dict(host=HOST, report_dir=str(tmp_path), sweep_name="local-cpu"))
    assert out["failed"] is True and "run sglang_sweep_plan first" in out["msg"]


def test_check_mode_writes_nothing(run_module, tmp_path):
    out = run_module(sglang_sweep_plan, plan_args(tmp_path), check_mode=True)
    assert out["changed"] is False and len(out["todo"]) == 5 and files(tmp_path) == []
    rec = record(run_module, tmp_path, out["candidates"][0], probe=WORKING, _ansible_check_mode=True)
    assert rec["changed"] is False and rec["outcome"] == "working" and files(tmp_path) == []
    assert rec["time_left_s"] is None and rec["next_fits"] is True
    run_module(sglang_sweep_plan, plan_args(tmp_path))
    record(run_module, tmp_path, out["candidates"][0], probe=WORKING)
    before = dict((f, (tmp_path / "local-cpu" / HOST / f).read_bytes()) for f in files(tmp_path))
    report = run_module(sglang_sweep_report, dict(host=HOST, report_dir=str(tmp_path), sweep_name="local-cpu"),
                        check_mode=True)
    assert report["changed"] is False and report["complete"] is False and len(report["missing"]) == 4
    assert report["winner"]["label"] == "baseline" and "nothing to change" in report["snippet"]
    assert dict((f, (tmp_path / "local-cpu" / HOST / f).read_bytes()) for f in files(tmp_path)) == before

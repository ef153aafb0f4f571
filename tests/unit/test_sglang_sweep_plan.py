"""Expansion of a sweep into candidates and the sweep's files (plugins/module_utils/
sweep/plan.py, sweep/store.py)."""

import json
import os

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.sweep import objective
from ansible_collections.sglang.deploy.plugins.module_utils.sweep import plan
from ansible_collections.sglang.deploy.plugins.module_utils.sweep import store

CURRENT_ARGS = {"model-path": "/data/models/tiny-qwen2", "device": "cpu", "enable-metrics": True,
                "max-total-tokens": 16384, "enable-mscclpp": False}
CURRENT_ENV = {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": 1}


def expand(**kw):
    return plan.expand(CURRENT_ARGS, CURRENT_ENV, **kw)


def labels(cands):
    return [c["label"] for c in cands]


# ---------------------------------------------------------------- expansion
def test_baseline_alone_is_the_current_configuration_normalised():
    (base,) = expand()
    assert base["label"] == "baseline"
    assert base["args"] == {"model-path": "/data/models/tiny-qwen2", "device": "cpu", "enable-metrics": True,
                            "max-total-tokens": 16384}  # false dropped, as the unit renders it
    assert base["env"] == {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}  # values as the env file has them
    assert base["changes"] == {"args": {}, "env": {}}


def test_axes_give_the_cartesian_product_in_order_baseline_first():
    cands = expand(axes={"max-running-requests": [4, 16], "schedule_policy": ["fcfs", "lpm"],
                         "OMP_NUM_THREADS": ["1", "2"]})
    assert len(cands) == 1 + 8
    assert cands[0]["label"] == "baseline"
    assert cands[1]["changes"] == {"args": {"max-running-requests": 4, "schedule-policy": "fcfs"}, "env": {}}
    assert cands[2]["changes"]["env"] == {"OMP_NUM_THREADS": "2"}
    assert cands[-1]["label"] == "max-running-requests=16 schedule-policy=lpm OMP_NUM_THREADS=2"
    assert all(c["args"]["model-path"] == "/data/models/tiny-qwen2" for c in cands)
    assert len({c["key"] for c in cands}) == 9


def test_a_linked_axis_sets_its_settings_together():
    cands = expand(axes={"speculative": [
        {"speculative-num-steps": 1, "speculative-num-draft-tokens": 2},
        {"speculative_num_steps": 2, "speculative-num-draft-tokens": 3, "SGLANG_X": "1"}]})
    assert [c["changes"] for c in cands[1:]] == [
        {"args": {"speculative-num-steps": 1, "speculative-num-draft-tokens": 2}, "env": {}},
        {"args": {"speculative-num-steps": 2, "speculative-num-draft-tokens": 3}, "env": {"SGLANG_X": "1"}}]


def test_explicit_candidates_follow_the_axes_and_null_removes():
    cands = expand(axes={"OMP_NUM_THREADS": ["2"]},
                   candidates=[{"name": "no metrics", "args": {"enable-metrics": None}, "env": {"HF_HUB_OFFLINE": None}},
                               {"args": {"chunked-prefill-size": 512}}])
    assert labels(cands) == ["baseline", "OMP_NUM_THREADS=2", "no metrics", "chunked-prefill-size=512"]
    no_metrics = cands[2]
    assert "enable-metrics" not in no_metrics["args"] and "HF_HUB_OFFLINE" not in no_metrics["env"]
    assert no_metrics["changes"] == {"args": {"enable-metrics": None}, "env": {"HF_HUB_OFFLINE": None}}
    assert plan.describe(no_metrics["changes"]) == "-enable-metrics -HF_HUB_OFFLINE"


def test_base_applies_to_every_candidate_but_the_baseline():
    cands = expand(base={"args": {"max-total-tokens": 8192}}, axes={"schedule-policy": ["lpm"]},
                   candidates=[{"name": "restore", "args": {"max-total-tokens": 16384}}])
    assert cands[0]["args"]["max-total-tokens"] == 16384
    assert cands[1]["changes"]["args"] == {"max-total-tokens": 8192, "schedule-policy": "lpm"}
    # the explicit candidate undoes the base: it is the baseline, kept once under both names
    assert len(cands) == 2 and cands[0]["aliases"] == ["restore"]


def test_identical_candidates_are_kept_once_with_their_other_names():
    cands = expand(axes={"max-running-requests": [4, "4"], "OMP_NUM_THREADS": ["1", 1]},
                   candidates=[{"name": "cap 4", "args": {"max_running_requests": 4}}])
    assert labels(cands) == ["baseline", "max-running-requests=4"]
    assert cands[1]["aliases"] == ["cap 4"]


def test_keys_are_stable_content_keys():
    a = expand(axes={"schedule-policy": ["lpm"]})[1]
    b = plan.expand(dict(reversed(list(CURRENT_ARGS.items()))), {"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": 1},
                    candidates=[{"name": "other label", "args": {"schedule_policy": "lpm"}}])[1]
    assert a["key"] == b["key"] == plan.candidate_key(a["args"], a["env"])
    assert len(a["key"]) == 12 and int(a["key"], 16) >= 0
    # a secret flag never changes the key
    assert plan.candidate_key(dict(a["args"], **{"api-key": "s3cret"}), a["env"]) == a["key"]


@pytest.mark.parametrize("kw,words", [
    ({"axes": {"schedule-policy": "lpm"}}, "non-empty list"),
    ({"axes": {"schedule-policy": []}}, "non-empty list"),
    ({"axes": {"bad flag!": [1]}}, "not a valid flag name"),
    ({"candidates": [{"name": "x", "arg": {"a": 1}}]}, "unknown key(s) arg"),
    ({"candidates": [{"args": {"model_path": "/a", "model-path": "/b"}}]}, "same flag"),
    ({"candidates": [{"env": {"A=B": "1"}}]}, "not an environment variable name"),
    ({"base": {"flags": {}}}, "sweep_base must be"),
])
def test_refused_sweeps_name_the_variable(kw, words):
    with pytest.raises(plan.SweepPlanError) as err:
        expand(**kw)
    assert words in str(err.value)


# ---------------------------------------------------------------- the objective
@pytest.mark.parametrize("args, expected", [
    # today's behaviour: single_stream, the highest level shown
    ((None, None, None, [1, 4]), {"name": "single_stream", "concurrency": 4, "latency_target": {}}),
    (("single_stream", 1, {}, [1, 4]), {"name": "single_stream", "concurrency": 1, "latency_target": {}}),
    (("single_stream", None, {}, []), {"name": "single_stream", "concurrency": None, "latency_target": {}}),
    (("throughput", None, {"ttft_p99_ms": 2000}, [1, 8, 32]),
     {"name": "throughput", "concurrency": 32, "latency_target": {"ttft_p99_ms": 2000}}),
    # a templated level arrives as text; a null limit is no limit
    (("throughput", "8", {"itl_median_ms": 30.5, "ttft_p99_ms": None}, [1, 8, 32]),
     {"name": "throughput", "concurrency": 8, "latency_target": {"itl_median_ms": 30.5}}),
])
def test_the_objective_resolves(args, expected):
    assert objective.resolve(*args) == expected


@pytest.mark.parametrize("args, words", [
    (("latency", None, {}, [1, 4]), ["sweep_objective 'latency' is not an objective", "Fix: set sweep_objective"]),
    (("throughput", 16, {}, [1, 4]),
     ["sweep_objective_concurrency 16 is not one of sweep_concurrency [1, 4]", "Fix: add 16 to sweep_concurrency"]),
    (("throughput", 0, {}, [1, 4]), ["sweep_objective_concurrency must be a concurrency level", "Fix:"]),
    (("throughput", True, {}, [1, 4]), ["sweep_objective_concurrency must be a concurrency level"]),
    (("throughput", None, {}, []), ["sweep_concurrency, which is empty", "Fix: list the levels"]),
    (("single_stream", None, {"ttft_p99_ms": 500}, [1, 4]),
     ["sweep_latency_target is set but sweep_objective is single_stream", "Fix: set sweep_objective: throughput"]),
    (("throughput", 4, {"p99_ttft_ms": 500}, [1, 4]),
     ["sweep_latency_target: unknown limit(s) p99_ttft_ms", "ttft_p99_ms, itl_median_ms", "Fix: rename"]),
    (("throughput", 4, {"ttft_p99_ms": "fast"}, [1, 4]), ["sweep_latency_target.ttft_p99_ms must be a positive"]),
    (("throughput", 4, {"itl_median_ms": -1}, [1, 4]), ["sweep_latency_target.itl_median_ms must be a positive"]),
    (("throughput", 4, [500], [1, 4]), ["sweep_latency_target must be a mapping"]),
])
def test_a_bad_objective_is_refused_naming_the_variable_the_rule_and_the_fix(args, words):
    with pytest.raises(plan.SweepPlanError) as err:
        objective.resolve(*args)
    for word in words:
        assert word in str(err.value)


def test_a_candidates_figures_at_the_level_and_what_misses_the_target():
    figures = {"throughput": [{"concurrency": 1, "output_throughput": 90.0},
                              {"concurrency": 8, "output_throughput": 600.0, "p99_ttft_ms": 1200.0}]}
    level = objective.at_level(figures, 8)
    assert level == {"concurrency": 8, "output_throughput": 600.0, "p99_ttft_ms": 1200.0, "median_itl_ms": None}
    assert objective.misses(level, {}) == []
    assert objective.misses(level, {"ttft_p99_ms": 1200}) == []  # a limit is inclusive
    assert objective.misses(level, {"itl_median_ms": 30, "ttft_p99_ms": 1000}) == [
        "ttft_p99_ms <= 1000 ms: p99 TTFT 1200 ms at concurrency 8",
        "itl_median_ms <= 30 ms: no median ITL measured at concurrency 8"]
    assert objective.misses(objective.at_level(figures, 32), {}) == ["no output tok/s measured at concurrency 32"]
    assert objective.at_level(None, 8)["output_throughput"] is None


# ---------------------------------------------------------------- store and resume
def test_store_resumes_only_unfinished_candidates(tmp_path):
    d = store.sweep_dir(str(tmp_path), "local-cpu", "sglang-local-1")
    assert d == os.path.join(str(tmp_path), "local-cpu", "sglang-local-1")
    keys = ["aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc", "dddddddddddd"]
    store.write_record(d, keys[0], {"status": "finished", "outcome": "working"})
    store.write_record(d, keys[1], {"status": "finished", "outcome": "crashed"})
    store.write_record(d, keys[2], {"status": "running", "outcome": None})  # interrupted
    assert store.done(d, keys) == keys[:2]
    assert sorted(store.records(d, keys)) == keys[:3]
    with open(store.record_path(d, keys[3]), "w") as fh:
        fh.write("{half a rec")  # a torn file reads as missing: the candidate runs again
    assert store.done(d, keys) == keys[:2]
    store.write_sweep(d, {"sweep_name": "local-cpu"})
    assert store.read_sweep(d) == {"sweep_name": "local-cpu"}
    assert not [f for f in os.listdir(d) if f.endswith(".tmp")]
    with open(os.path.join(d, "sweep.json")) as fh:
        assert json.load(fh)["sweep_name"] == "local-cpu"


@pytest.mark.parametrize("name", ["", "..", "a/b", "."])
def test_store_refuses_names_that_are_not_one_directory(tmp_path, name):
    with pytest.raises(plan.SweepPlanError):
        store.sweep_dir(str(tmp_path), name, "host")


@pytest.mark.parametrize("name", ["LD_PRELOAD\n", "X\u2028", "A B"])
def test_an_environment_name_with_a_line_break_is_refused(name):
    with pytest.raises(plan.SweepPlanError, match="not an environment variable name"):
        plan.expand({"model-path": "/m"}, {}, candidates=[{"name": "c", "env": {name: "/tmp/x.so"}}])

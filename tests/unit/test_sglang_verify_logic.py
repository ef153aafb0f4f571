"""Metric math, garbage detector, probe matching, drift comparison, gates and report rendering
of roles/sglang_verify (its plugins/module_utils/verify/*.py), with the flag model and the
Prometheus reader they use (plugins/module_utils/flags/model.py, sglang_prometheus.py)."""

import json

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.verify import drift
from ansible_collections.sglang.deploy.plugins.module_utils.flags import model as flags
from ansible_collections.sglang.deploy.plugins.module_utils.verify import gates
from ansible_collections.sglang.deploy.plugins.module_utils.verify import output
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_prometheus as prometheus
from ansible_collections.sglang.deploy.plugins.module_utils.verify import render
from ansible_collections.sglang.deploy.plugins.module_utils.verify import stats


# ---------------------------------------------------------------- percentiles
@pytest.mark.parametrize("q,expected", [(0, 1.0), (50, 2.5), (90, 3.7), (99, 3.97), (100, 4.0)])
def test_percentile_linear_interpolation_like_numpy(q, expected):
    assert stats.percentile([4, 1, 3, 2], q) == pytest.approx(expected)


def test_percentile_edge_cases():
    assert stats.percentile([], 50) is None
    assert stats.percentile([None, 5], 99) == 5.0
    assert stats.median([7]) == 7.0


# ---------------------------------------------------------------- garbage detector
@pytest.mark.parametrize("text", [
    "!!!!!!!!!!!!!!!!",
    "  !!!!!!!!  ",
    "",
    "   \n ",
    "Paris\ufffd",
    "abababababababababab",
    "the the the the the the the the the the",
    "hello " + "ok " * 12,
])
def test_garbage_detected(text):
    assert output.detect_garbage(text) is not None


@pytest.mark.parametrize("text", [
    "4",
    "Paris",
    "hello",
    "OK",
    "Wow!!!! That is great.",
    "The capital of France is Paris.",
    "# ========== section ==========\ndef f(x):\n    return x + 1\n" * 3,
    "    if x:\n        return y\n",
])
def test_good_output_not_flagged(text):
    assert output.detect_garbage(text) is None


def test_garbage_reason_quotes_the_unit():
    assert '"!"' in output.detect_garbage("!" * 30)


# ---------------------------------------------------------------- probes
@pytest.mark.parametrize("out,expect,mode,ok", [
    ("4", "4", "exact", True),
    (" 4\n", "4", "exact", True),
    ("44", "4", "exact", False),
    ("2+2 equals 4.", "4", "contains", True),
    ("Hello there!", "hello", "contains", True),
    ("Bonjour", "hello", "contains", False),
    ("The answer is 4.", r"\b4\b", "regex", True),
    ("The answer is 41.", r"\b4\b", "regex", False),
    (None, "4", "exact", False),
])
def test_match_answer(out, expect, mode, ok):
    assert output.match_answer(out, expect, mode) is ok


def test_match_answer_rejects_unknown_mode():
    with pytest.raises(ValueError):
        output.match_answer("x", "x", "fuzzy")


def test_quote_bounds_and_escapes():
    q = output.quote("a\nb" + "x" * 500, 20)
    assert q.startswith('"a\\nb') and "(503 chars)" in q


# ---------------------------------------------------------------- drift
SERVER = {
    "launch_command": "--model-path /m --served-model-name tiny --tp 8 --enable-metrics "
                      "--speculative-algorithm NEXTN --json-model-override-args {\"a\": 1} "
                      "--api-key s3cret --log-level info",
    "model_path": "/m", "served_model_name": "tiny", "tp_size": 8, "enable_metrics": True,
    "speculative_algorithm": "EAGLE", "json_model_override_args": "{\"a\": 1}", "api_key": "s3cret",
    "attention_backend": "torch_native",
}


def test_parse_launch_command():
    f = flags.parse_launch_command(SERVER["launch_command"])
    assert f["tp"] == "8"
    assert f["enable-metrics"] is True
    assert f["json-model-override-args"] == '{"a": 1}'
    assert flags.parse_launch_command("--x=1 --y") == {"x": "1", "y": True}


def test_drift_none_when_flags_match():
    expected = {"model-path": "/m", "served-model-name": "tiny", "tp": 8, "enable-metrics": True,
                "speculative-algorithm": "NEXTN", "json-model-override-args": {"a": 1},
                "api-key": "s3cret", "log-level": "info", "disable-cuda-graph": False}
    d = drift.compare_args(expected, SERVER)
    assert d["ok"], d
    assert d["mismatches"] == [] and d["extra"] == []
    assert d["source"] == "launch_command"
    # NEXTN is resolved to EAGLE on purpose: no warning for a known alias
    assert d["resolved"] == []


def test_drift_lists_differences_and_extra_flags_and_redacts_secrets():
    expected = {"model-path": "/m", "served-model-name": "tiny", "tp": 4, "attention-backend": "triton",
                "api-key": "other", "disable-cuda-graph": True}
    d = drift.compare_args(expected, SERVER)
    assert not d["ok"]
    by = dict((m["flag"], m) for m in d["mismatches"])
    assert by["tp"]["expected"] == 4 and by["tp"]["actual"] == "8"
    assert by["attention-backend"]["actual"] == "(not on its command line)"
    assert by["disable-cuda-graph"]["actual"] == "(not on its command line)"
    assert by["api-key"]["expected"] == "<redacted>" and by["api-key"]["actual"] == "<redacted>"
    assert "s3cret" not in json.dumps(d)
    assert sorted(e["flag"] for e in d["extra"]) == ["enable-metrics", "json-model-override-args",
                                                    "log-level", "speculative-algorithm"]


def test_drift_flags_a_flag_that_should_be_absent():
    d = drift.compare_args({"enable-metrics": False, "model-path": "/m"}, SERVER)
    assert [m["flag"] for m in d["mismatches"]] == ["enable-metrics"]


def test_drift_warns_when_sglang_resolved_something_else():
    server = dict(SERVER, launch_command="--model-path /m --attention-backend fa3", attention_backend="triton")
    d = drift.compare_args({"model-path": "/m", "attention-backend": "fa3"}, server)
    assert d["ok"]
    assert d["resolved"] == [{"flag": "attention-backend", "asked": "fa3", "resolved": "triton"}]


def test_drift_falls_back_to_resolved_fields_without_launch_command():
    server = dict(SERVER)
    del server["launch_command"]
    d = drift.compare_args({"tp": 8, "model-path": "/x", "no-such-flag": 1}, server)
    assert d["source"] == "server_info fields"
    assert [m["flag"] for m in d["mismatches"]] == ["model-path"]
    assert d["unverifiable"] == ["no-such-flag"]


def test_drift_ignore_list():
    d = drift.compare_args({"model-path": "/other"}, SERVER, ignore=["model-path", "served-model-name", "tp",
                                                                     "enable-metrics", "speculative-algorithm",
                                                                     "json-model-override-args", "api-key",
                                                                     "log-level"])
    assert d["ok"] and d["extra"] == []


@pytest.mark.parametrize("a,b", [(8, "8"), ("0.85", 0.85), (True, True), ([1, 2, 4], "1 2 4"),
                                 ({"b": 1, "a": 2}, '{"a": 2, "b": 1}')])
def test_value_normalisation(a, b):
    assert flags.norm_value(a) == flags.norm_value(b)


def test_redact_launch_command():
    r = flags.redact_launch_command("--api-key abc --port 1 --admin-api-key=xyz")
    assert r == "--api-key <redacted> --port 1 --admin-api-key=<redacted>"


def test_flag_hash_stable_and_sensitive():
    a = flags.flag_hash({"tp": 8, "model-path": "/m"})
    assert a == flags.flag_hash({"model-path": "/m", "tp": 8})
    assert a != flags.flag_hash({"model-path": "/m", "tp": 4})
    # the API key does not change the flag set
    assert a == flags.flag_hash({"model-path": "/m", "tp": 8, "api-key": "k"})


# ---------------------------------------------------------------- bench_serving / metrics parsing
def test_parse_bench_serving_jsonl_takes_last_record():
    text = json.dumps({"median_tpot_ms": 10.0, "output_throughput": 1}) + "\n" + \
        json.dumps({"median_tpot_ms": 4.0, "output_throughput": 250.5, "median_ttft_ms": 17.0,
                    "completed": 8, "max_concurrency": 1}) + "\n"
    r = stats.parse_bench_serving_jsonl(text)
    assert r["output_throughput"] == 250.5
    assert r["decode_tps_from_tpot"] == 250.0
    assert r["median_ttft_ms"] == 17.0


def test_parse_bench_serving_jsonl_keeps_the_latency_a_sweep_level_is_judged_by():
    """p99 TTFT and median ITL of a level: what a sweep's latency target (roles/sglang_sweep,
    sweep_latency_target) compares; the own sweep writes the same keys."""
    text = json.dumps({"output_throughput": 900.0, "median_ttft_ms": 40.0, "p99_ttft_ms": 180.5,
                       "median_itl_ms": 11.25, "p99_itl_ms": 30.0}) + "\n"
    r = stats.parse_bench_serving_jsonl(text)
    assert (r["p99_ttft_ms"], r["median_itl_ms"]) == (180.5, 11.25)


def test_parse_bench_serving_jsonl_empty_raises():
    with pytest.raises(ValueError):
        stats.parse_bench_serving_jsonl("\n")


def test_parse_prometheus_value():
    text = ("# HELP sglang:spec_accept_length x\n"
            "sglang:spec_accept_length_total 9\n"
            'sglang:spec_accept_length{model_name="m",tp_rank="0"} 2.35\n')
    assert prometheus.parse_prometheus_value(text, "sglang:spec_accept_length") == 2.35
    assert prometheus.parse_prometheus_value(text, "sglang:nope") is None


# ---------------------------------------------------------------- gates
def _result(tps=100.0, ttft=20.0, failures=()):
    return {"single_stream": {"decode_tps": tps, "ttft_ms": ttft, "error_messages": []},
            "drift": {"ok": True, "mismatches": [], "extra": []}, "failures": list(failures)}


def test_gates_pass():
    ok, fails, rows = gates.evaluate_gates(_result(), {"min_decode_tps": 71.6, "max_ttft_ms": 500,
                                                     "regression_ratio": 0.9})
    assert ok and fails == []
    assert [r["ok"] for r in rows] == [True, True]  # the regression gates are sglang_verify_baseline's


def test_gate_min_tps_fails_with_figure():
    ok, fails, _ = gates.evaluate_gates(_result(tps=50.0), {"min_decode_tps": "71.6"})
    assert not ok and "50.0 tok/s is under the gate of 71.6" in fails[0]


def test_gate_max_ttft_fails():
    ok, fails, _ = gates.evaluate_gates(_result(ttft=900.0), {"max_ttft_ms": 500})
    assert not ok and "900.0 ms is over the gate of 500" in fails[0]


def test_probe_failures_and_drift_fail_the_gate():
    r = _result(failures=['probe "What is 2+2?": expected "4" (exact), got "!!!!"'])
    r["drift"] = {"ok": False, "mismatches": [{"flag": "tp", "expected": 8, "actual": "4"}],
                  "extra": [{"flag": "x", "value": True}]}
    ok, fails, _ = gates.evaluate_gates(r, {"fail_on_drift": True, "fail_on_extra_flags": "false"})
    assert not ok
    assert fails[0].endswith('got "!!!!"')
    assert "tp expected 8, running 4" in fails[1]
    assert len(fails) == 2
    ok, fails, _ = gates.evaluate_gates(dict(r, failures=[]), {"fail_on_drift": False, "fail_on_extra_flags": True})
    assert not ok and fails == ["drift: flags not in the inventory: --x"]


def test_missing_single_stream_figure_fails():
    r = _result(tps=None)
    r["single_stream"]["error_messages"] = ["stream ended before [DONE] after 3 chunk(s)"]
    ok, fails, _ = gates.evaluate_gates(r, {})
    assert not ok and "before [DONE]" in fails[0]


# ---------------------------------------------------------------- report rendering
def test_summary_md_and_history_record():
    host = {"passed": False, "flag_hash": "abc", "time": "T", "mode": "full",
            "failures": ["probe \"x\": got \"a|b\""],
            "baseline_stats": {"decode_tps": {"median": 70.0, "n": 4}},
            "result": {"server": {"version": "0.5.23", "spec_accept_length": 2.5},
                       "single_stream": {"decode_tps": 71.6, "decode_tps_runs": [69.0, 71.6, 75.0],
                                         "ttft_ms": 30.0, "itl_ms_p50": 13.0,
                                         "itl_ms_p90": 14.0, "itl_ms_p99": 20.0},
                       "sweep": {"tool": "sglang.benchmark.serving", "note": None,
                                 "levels": [{"concurrency": 1, "output_throughput": 70.1},
                                            {"concurrency": 4, "output_throughput": 250.0}]},
                       "drift": {"extra": [{"flag": "log-level", "value": "info"}], "resolved": []}}}
    md = render.render_summary_md({"run_id": "R", "hosts": {"gpu1": host}})
    assert "| gpu1 | **FAIL** | 0.5.23 | `abc` |" in md
    assert "70.1 (1), 250.0 (4)" in md
    assert "| 71.6 (69.0-75.0) |" in md and "| 70.0 (4) |" in md  # the figure with its spread; the baseline
    assert "a\\|b" in md  # a pipe in quoted output does not break the table
    assert "`--log-level info`" in md
    h = render.history_record("R", "gpu1", host)
    assert h["decode_tps"] == 71.6 and h["sweep"] == {"1": 70.1, "4": 250.0} and h["passed"] is False


def test_console_table_shows_each_probe_answer_and_marks_a_wrong_one():
    result = {"server": {"version": "0.5.23"}, "single_stream": {"decode_tps": 250.0},
              "probes": [{"prompt": "What is 2+2?", "output": "4", "ok": True},
                         {"prompt": "Say hello.", "output": "!!!!!!!!", "ok": False}]}
    lines = render.console_lines("h1", result, {"passed": False, "rows": [], "failures": []})
    assert any("'What is 2+2?' -> '4'" in line and "FAIL" not in line for line in lines)
    assert any("'Say hello.' -> '!!!!!!!!'  (FAIL)" in line for line in lines)
    assert "probes                       1/2 passed" in lines


def test_registry_verdict_of_correctness():
    """The correctness entry of the registry: the absolute gates' failures as its reasons."""
    from ansible_collections.sglang.deploy.plugins.module_utils.verify import registry
    ctx = {"result": _result(tps=50.0), "host": "h", "mode": "gate", "baselines": {}, "reset_hint": "R"}
    v = registry.evaluate(ctx, registry.settings({"correctness": {"min_decode_tps": 71.6}}))[0]
    assert v["gate"] == "correctness" and v["level"] == "failed"
    assert v["reasons"] == ["single-stream decode 50.0 tok/s is under the gate of 71.6 tok/s"]
    assert v["figures"][0]["gate"] == "decode tok/s >= min" and not v["figures"][0]["ok"]
    v = registry.evaluate(dict(ctx, result=_result()), registry.settings({}))[0]
    assert v["level"] == "passed" and v["reasons"] == []

"""The throughput_at_load gate (plugins/module_utils/verify/throughput.py): output tok/s and p99
TTFT of the concurrency sweep's level at the profile's serving concurrency, against the same
key's accepted figures under the speed gates' rules; not applicable to a profile of one request
at a time; a server that runs fewer requests at once than the profile serves fails. End to end
through the gate module on a temporary report directory."""

import glob

from ansible_collections.sglang.deploy.plugins.module_utils.verify import registry
from ansible_collections.sglang.deploy.plugins.module_utils.verify import throughput as tp
from ansible_collections.sglang.deploy.plugins.modules import sglang_verify_gate as gate_module

ON = {"throughput_concurrency": 4, "throughput_ratio": 0.8, "throughput_ttft_ratio": 0.5}
SWEEP = {"requests_per_level": 2, "input_len": 128, "output_len": 128}


def _result(tps, p99=120.0, conc=4, mrr=None, levels=(1, 4, 16)):
    return {"generation": "gen1", "server": {"version": "0.5.23", "max_running_requests": mrr},
            "sweep": {"tool": "own (sglang_probe)", "levels": [
                {"concurrency": c, "output_throughput": tps if c == conc else 10.0 * c, "p99_ttft_ms": p99,
                 "errors": 0, "completed": 2 * c} for c in levels]}}


def _ctx(result, accepted=(), mode="full"):
    base = {"accepted": [{"run_id": "R%d" % i, "output_tps": v, "p99_ttft_ms": 120.0} for i, v in enumerate(accepted)]}
    return {"result": result, "host": "h1", "mode": mode, "sweep": SWEEP, "isolated": True, "reset_hint": "RESET",
            "baselines": {tp.NAME: base if accepted else None}}


def _judge(ctx, **settings):
    return tp.evaluate(ctx, registry.settings({tp.NAME: dict(ON, **settings)})[tp.NAME])


def test_off_or_not_measured_gives_no_verdict():
    assert _judge(_ctx(_result(400.0)), throughput_concurrency=0) is None
    assert _judge(_ctx(_result(400.0)), throughput_ratio=None, throughput_ttft_ratio=None) is None  # speed gates off
    assert _judge(_ctx({"generation": "gen1"})) is None  # failed before the timed checks: that failure judges


def test_a_profile_of_one_request_at_a_time_is_not_applicable_and_says_why():
    v = _judge(_ctx(_result(400.0, conc=1)), throughput_concurrency=1)
    assert v["level"] == "not_applicable" and v["figures"] == []
    assert v["reasons"] == ["the profile serves one request at a time (sglang_verify_throughput_concurrency 1): "
                            "throughput at load is the single stream's, which the speed gates judge"]
    assert v["message"].startswith("throughput_at_load does not apply: ")


def test_collecting_then_a_collapse_fails_naming_the_figure_and_its_baseline():
    v = _judge(_ctx(_result(150.0), accepted=(400.0, 410.0)))
    assert v["level"] == "passed" and "collecting: 2 of 3" in v["figures"][0]["note"]
    v = _judge(_ctx(_result(150.0), accepted=(400.0, 410.0, 395.0)))
    assert v["level"] == "failed" and len(v["reasons"]) == 1
    assert v["reasons"][0].startswith("output at concurrency 4 150.0 tok/s is below the regression limit of 320.0 "
                                      "tok/s: the baseline is the median 400.0 tok/s of 3 accepted runs")
    assert "forget the baseline with: RESET" in v["reasons"][0]
    # p99 TTFT at load four times the accepted one fails too
    v = _judge(_ctx(_result(400.0, p99=480.0), accepted=(400.0, 410.0, 395.0)))
    assert v["level"] == "failed" and v["reasons"][0].startswith("p99 TTFT at concurrency 4 480.0 ms is above")


def test_no_false_failure_on_an_unchanged_host_within_its_noise():
    # the demo's 2 shared cores swing 15-30 %: figures of an unchanged host stay within the limit
    history = (400.0, 330.0, 450.0, 380.0, 420.0, 300.0, 440.0, 360.0, 410.0, 390.0)
    for figure in history:
        v = _judge(_ctx(_result(figure), accepted=history))
        assert v["level"] == "passed", v


def test_a_server_running_fewer_requests_than_the_profile_serves_fails_from_the_first_run():
    # max-running-requests 1 rolled on a host whose profile serves 4: a new flag set, no history
    v = _judge(_ctx(_result(95.0, mrr=1)))
    assert v["level"] == "failed"
    assert v["reasons"][0].startswith("throughput at load: the server decodes at most 1 request at a time "
                                      "(max_running_requests 1 in /server_info), the profile serves 4 at once")
    assert "measured 95.0 output tok/s and p99 TTFT 120.0 ms at concurrency 4" in v["reasons"][0]
    assert _judge(_ctx(_result(400.0, mrr=48)))["level"] == "passed"
    # the figures as measured (floats of many digits) are quoted with one decimal
    v = _judge(_ctx(_result(314.783235354756, mrr=1)))
    assert "measured 314.8 output tok/s and p99 TTFT 120.0 ms" in v["reasons"][0], v["reasons"][0]


def test_the_floor_and_a_level_the_sweep_did_not_measure():
    v = _judge(_ctx(_result(95.0)), min_output_tps=100)
    assert v["level"] == "failed" and "under the gate of 100.0 tok/s (sglang_verify_min_output_tps)" in v["reasons"][0]
    v = _judge(_ctx(_result(400.0, levels=(1, 16))))
    assert v["level"] == "failed" and v["reasons"] == [
        "the concurrency sweep measured no level at 4 (sglang_verify_throughput_concurrency)"]


def test_the_protocol_keys_the_history_apart_from_the_single_stream():
    s = registry.settings({tp.NAME: ON})[tp.NAME]
    proto = tp.measured_protocol(_ctx(_result(400.0)), s)
    assert proto == {"gate": tp.NAME, "mode": "full", "concurrency": 4, "requests": 8, "input_len": 128,
                     "output_len": 128, "tool": "own (sglang_probe)", "isolated": True}
    assert tp.measured_protocol(_ctx(_result(400.0, levels=(1,))), s) is None
    assert tp.record(_ctx(_result(400.0)), s) == {"output_tps": 400.0, "p99_ttft_ms": 120.0, "version": "0.5.23"}


def _args(report_dir, run_id, tps, mrr=None, flags=None, mode="full"):
    return {"host": "h1", "run_id": run_id, "report_dir": str(report_dir), "mode": mode, "isolated": True,
            "result": _result(tps, mrr=mrr), "expected_args": flags or {"model-path": "/m"}, "sweep": SWEEP,
            "bench": {"prompt": "x", "max_tokens": 16, "runs": 1, "warmup": 0},
            "gates": {"throughput_at_load": ON}}


def test_the_gate_module_collects_gates_and_keeps_the_history_apart(tmp_path, run_module):
    for i, tps in enumerate((400.0, 410.0, 395.0)):
        out = run_module(gate_module, _args(tmp_path, "R%d" % i, tps))
        assert out["passed"] and out["baselines"][tp.NAME]["updated"]
        assert [v["gate"] for v in out["verdicts"]] == ["correctness", "throughput_at_load"]
    out = run_module(gate_module, _args(tmp_path, "R3", 150.0))
    assert not out["passed"] and out["failures"][0].startswith("output at concurrency 4 150.0 tok/s is below")
    assert not out["baselines"][tp.NAME]["updated"]
    # a changed flag set starts its own history (as the single stream's gates do), so only the
    # server's own running-request limit fails max-running-requests 1 from the first run
    changed = {"model-path": "/m", "max-running-requests": 1}
    out = run_module(gate_module, _args(tmp_path, "R4", 95.0, mrr=1, flags=changed))
    assert not out["passed"] and "decodes at most 1 request at a time" in out["failures"][0]
    assert run_module(gate_module, _args(tmp_path, "R5", 150.0, flags={"model-path": "/m", "chunked-prefill-size": 64}))[
        "passed"]
    # two gate histories (speed's has no figure: no single stream) plus the changed flags' own
    files = glob.glob(str(tmp_path / "h1" / "baseline-*.json"))
    assert len(files) == 2
    out = run_module(gate_module, dict(_args(tmp_path, "R6", 400.0), gates={"throughput_at_load": {"concurency": 4}}))
    assert out["failed"] and "gates.throughput_at_load: no setting concurency" in out["msg"]

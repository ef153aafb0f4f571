"""The regression gates of roles/sglang_verify: which accepted results a figure is compared
with (plugins/module_utils/verify/baseline.py), the gate module end to end on a temporary report
directory (plugins/modules/sglang_verify_gate.py), and report files written by many hosts at once
(plugins/module_utils/sglang_files.py)."""
import glob
import multiprocessing
import os

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.verify import baseline as bl
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_files as store

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = {"prompt": "Tell me a story.", "max_tokens": 256, "runs": 5, "warmup": 1}
GATES = {"regression_ratio": 0.6, "ttft_regression_ratio": None, "baseline_min_samples": 3, "regression_spread_k": 3}


def _baseline(*tps, ttft=20.0):
    return {"accepted": [{"run_id": "R%d" % i, "decode_tps": v, "ttft_ms": ttft} for i, v in enumerate(tps)]}


def _gate(tps, baseline, gates=None, ttft=20.0):
    return bl.regression_gates({"decode_tps": tps, "ttft_ms": ttft}, baseline, dict(GATES, **(gates or {})),
                               "RESET-HINT")


# ---------------------------------------------------------------- keys: like with like
def test_key_changes_with_protocol_flags_and_generation():
    p_gate = bl.protocol("gate", BENCH, True)
    p_full = bl.protocol("full", BENCH, True)
    key = bl.baseline_key("flags1", "gen1", p_gate)
    assert key == bl.baseline_key("flags1", "gen1", bl.protocol("gate", dict(BENCH), True))
    others = [
        bl.baseline_key("flags1", "gen1", p_full),                                            # mode
        bl.baseline_key("flags1", "gen1", bl.protocol("gate", dict(BENCH, max_tokens=128), True)),  # length
        bl.baseline_key("flags1", "gen1", bl.protocol("gate", dict(BENCH, prompt="x"), True)),    # prompt
        bl.baseline_key("flags1", "gen1", bl.protocol("gate", dict(BENCH, runs=3), True)),        # runs
        bl.baseline_key("flags1", "gen1", bl.protocol("gate", BENCH, False)),                     # alone or not
        bl.baseline_key("flags2", "gen1", p_gate),                                            # flag change
        bl.baseline_key("flags1", "gen2", p_gate),                                            # generation
    ]
    assert key not in others and len(set(others)) == len(others)


# ---------------------------------------------------------------- too few samples
@pytest.mark.parametrize("accepted", [(), (490.0,), (490.0, 500.0)])
def test_no_regression_gate_before_min_samples(accepted):
    rows, fails = _gate(10.0, _baseline(*accepted) if accepted else None)
    assert fails == []
    assert rows[0]["ok"] and rows[0]["limit"] is None
    assert "collecting: %d of 3" % len(accepted) in rows[0]["note"]


def test_regression_gate_applies_from_min_samples_and_catches_a_collapse():
    rows, fails = _gate(142.0, _baseline(480.0, 490.0, 500.0))
    assert len(fails) == 1 and not rows[0]["ok"]
    assert "single-stream decode 142.0 tok/s is below the regression limit of 294.0 tok/s" in fails[0]
    assert "median 490.0 tok/s of 3 accepted runs" in fails[0] and "R0, R1, R2" in fails[0]
    assert "RESET-HINT" in fails[0]
    assert not _gate(300.0, _baseline(480.0, 490.0, 500.0))[1]


# ---------------------------------------------------------------- outliers and spread
def test_one_lucky_outlier_neither_becomes_nor_moves_the_baseline():
    # the case: one quick-gate run of 488 among figures of ~290
    rows, fails = _gate(282.3, _baseline(290.0, 295.0, 488.0))
    assert fails == [] and rows[0]["limit"] < 282.3
    stats = bl.summarize(_baseline(290.0, 295.0, 488.0), "decode_tps")
    assert stats["median"] == 295.0 and stats["max"] == 488.0
    # a lucky outlier added to a steady baseline moves the median by one rank only
    assert bl.summarize(_baseline(290.0, 292.0, 294.0, 296.0, 900.0), "decode_tps")["median"] == 294.0


def test_spread_widens_the_tolerance_but_only_up_to_twice_the_ratio():
    steady = _baseline(100.0, 100.0, 100.0, 100.0, 100.0)
    noisy = _baseline(70.0, 85.0, 100.0, 115.0, 130.0)  # sigma = 1.4826 * 15 = 22.2
    ratio = {"regression_ratio": 0.9}
    assert _gate(89.0, steady, ratio)[0][0]["limit"] == 90.0            # the ratio alone: 10 %
    assert not _gate(89.0, steady, ratio)[0][0]["ok"]
    assert _gate(89.0, noisy, ratio)[0][0]["ok"]                         # widened by the spread
    assert _gate(89.0, noisy, ratio)[0][0]["limit"] == 80.0              # capped at 2 x 10 %
    assert not _gate(79.0, noisy, ratio)[0][0]["ok"]                     # a real drop still fails


def test_a_noisy_history_cannot_lower_the_limit_below_half_the_median():
    # figures accepted while other work shared the cores (measured in a gate-check run here):
    # sigma ~ 90 tok/s, 3 sigma would let anything above ~20 % of the median pass
    noisy = _baseline(202.5, 262.0, 371.9, 373.9, 402.5, 285.5, 283.9, 417.0, 277.3, 246.7)
    rows, fails = _gate(110.7, noisy)  # the same host throttled to half a CPU
    assert rows[0]["limit"] == pytest.approx(0.5 * bl.summarize(noisy, "decode_tps")["median"], abs=0.01)
    assert fails and "below the regression limit" in fails[0]
    assert not _gate(202.5, noisy)[1]  # the slowest healthy figure of that history still passes
    # an explicit ratio below the cap still rules (the operator asked for it)
    assert _gate(110.7, noisy, {"regression_ratio": 0.3})[0][0]["limit"] < 110.7


def test_ttft_regression_gate_uses_the_same_baseline():
    base = _baseline(100.0, 100.0, 100.0, ttft=20.0)
    rows, fails = _gate(100.0, base, {"ttft_regression_ratio": 0.5}, ttft=39.0)
    assert not fails and rows[-1]["limit"] == 40.0
    rows, fails = _gate(100.0, base, {"ttft_regression_ratio": 0.5}, ttft=41.0)
    assert "median TTFT 41.0 ms is above the regression limit of 40.0 ms" in fails[0]


def test_accept_keeps_a_window():
    b = None
    for i in range(12):
        b = bl.accept(b, {"run_id": str(i), "decode_tps": float(i)}, 10, {"key": "k"})
    assert [r["run_id"] for r in b["accepted"]] == [str(i) for i in range(2, 12)] and b["key"] == "k"


@pytest.mark.parametrize("value,host,want", [
    (True, "h1", True), (False, "h1", False), ("true", "h1", True), ("false", "h1", False),
    (["h1", "h2"], "h1", True), (["h2"], "h1", False), ("h1,h2", "h2", True), ("h3", "h2", False)])
def test_reset_switch(value, host, want):
    assert bl.wants_reset(value, host) is want


# ---------------------------------------------------------------- the gate module end to end
from ansible_collections.sglang.deploy.plugins.modules import sglang_verify_gate as gate_module  # noqa: E402  pylint: disable=wrong-import-position - with its tests


def _gate_args(report_dir, run_id, tps, **extra):
    args = {"host": "h1", "run_id": run_id, "report_dir": str(report_dir), "mode": "full",
            "result": {"generation": "gen1", "single_stream": {"decode_tps": tps, "ttft_ms": 20.0,
                                                               "decode_tps_runs": [tps] * 5}},
            "expected_args": {"model-path": "/m", "api-key": "secret"}, "bench": BENCH, "isolated": True,
            "gates": {"correctness": {"min_decode_tps": 30},
                      "speed_regression": {"regression_ratio": 0.6, "baseline_min_samples": 3, "regression_spread_k": 3}}}
    args.update(extra)
    return args


def test_gate_module_collects_then_gates_then_resets(tmp_path, run_module):
    for i, tps in enumerate((480.0, 500.0, 490.0)):
        out = run_module(gate_module, _gate_args(tmp_path, "R%d" % i, tps))
        assert out["passed"] and out["baseline_updated"]
    out = run_module(gate_module, _gate_args(tmp_path, "R3", 142.0))
    assert not out["passed"] and not out["baseline_updated"]
    assert "below the regression limit of 294.0 tok/s" in out["failures"][0]
    assert "-l h1 -e sglang_verify_reset_baseline=true" in out["failures"][0]
    # a failure does not move the baseline
    base = store.read_json(glob.glob(str(tmp_path / "h1" / "baseline-*.json"))[0])
    assert [r["decode_tps"] for r in base["accepted"]] == [480.0, 500.0, 490.0]
    assert base["flags"]["api-key"] == "<redacted>"
    # the reset sets the baseline aside (nothing deleted) and the figure starts a new one
    out = run_module(gate_module, _gate_args(tmp_path, "R4", 142.0, reset_baseline=True))
    assert out["passed"] and out["baseline_reset"].endswith(".reset-R4") and os.path.exists(out["baseline_reset"])
    base = store.read_json(glob.glob(str(tmp_path / "h1" / "baseline-*.json"))[0])
    assert [r["decode_tps"] for r in base["accepted"]] == [142.0]


def test_gate_module_other_protocol_or_flags_start_their_own_baseline(tmp_path, run_module):
    for i, tps in enumerate((480.0, 500.0, 490.0)):
        run_module(gate_module, _gate_args(tmp_path, "R%d" % i, tps))
    # the same collapse measured by the quick gate, or with other flags, is not compared with them
    assert run_module(gate_module, _gate_args(tmp_path, "R3", 142.0, mode="gate"))["passed"]
    assert run_module(gate_module, _gate_args(tmp_path, "R4", 142.0,
                                              expected_args={"model-path": "/m", "tp-size": 2}))["passed"]
    assert run_module(gate_module, _gate_args(tmp_path, "R5", 142.0, result={
        "generation": "gen2", "single_stream": {"decode_tps": 142.0}}))["passed"]
    assert len(glob.glob(str(tmp_path / "h1" / "baseline-*.json"))) == 4


# ---------------------------------------------------------------- many hosts, one run
def _write_host(args):
    report_dir, run_id, host = args
    store.write_json(os.path.join(report_dir, run_id, "hosts", "%s.json" % host), {"host": host})
    return host


def test_hosts_of_one_run_write_their_reports_at_once(tmp_path):
    hosts = ["host-%02d" % i for i in range(16)]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(16) as pool:
        for round_ in range(10):
            run_id = "RUN%d" % round_
            assert sorted(pool.map(_write_host, [(str(tmp_path), run_id, h) for h in hosts])) == hosts
            written = sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / run_id / "hosts" / "*")))
            assert written == ["%s.json" % h for h in hosts]  # no temporary file left behind


def test_the_one_atomic_write_replaces_whole_files_with_their_mode_and_leaves_nothing_behind(tmp_path, monkeypatch):
    """write_bytes (which write_text, write_json, the release state and the model stamp use): the
    new content with the mode asked for, no temporary file left, and on a failed write the old
    content stays."""
    path = str(tmp_path / "d" / "index.fact")
    store.write_bytes(path, b"old\n", mode=0o644)
    store.write_text(path, "new \u00e9\n", mode=0o600)
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "new \u00e9\n"
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o600) and os.listdir(tmp_path / "d") == ["index.fact"]

    def broken(fd):
        raise OSError("disk gone")
    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError, match="disk gone"):
        store.write_bytes(path, b"half")
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "new \u00e9\n"
    assert os.listdir(tmp_path / "d") == ["index.fact"]


def test_registry_verdict_of_speed_regression():
    """The speed_regression entry of the registry: collecting passes and says so; a collapse
    fails with the regression's message; no single stream measured, no verdict."""
    from ansible_collections.sglang.deploy.plugins.module_utils.verify import registry
    s = registry.settings({"speed_regression": {"regression_ratio": 0.6}})["speed_regression"]
    ctx = {"result": {"single_stream": {"decode_tps": 142.0, "ttft_ms": 20.0}}, "reset_hint": "R",
           "baselines": {"speed_regression": _baseline(480.0, 500.0)}}
    v = bl.GATE.evaluate(ctx, s)
    assert v["level"] == "passed" and "collecting: 2 of 3" in v["figures"][0]["note"]
    v = bl.GATE.evaluate(dict(ctx, baselines={"speed_regression": _baseline(480.0, 500.0, 490.0)}), s)
    assert v["gate"] == "speed_regression" and v["level"] == "failed" and "below the regression limit" in v["reasons"][0]
    assert bl.GATE.evaluate(dict(ctx, result={}), s) is None
    assert bl.GATE.evaluate(ctx, dict(s, regression_ratio=None)) is None  # speed gates off

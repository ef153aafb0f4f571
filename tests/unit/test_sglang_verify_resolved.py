"""The profile's expectations on what SGLang resolved (sglang_verify_expect_resolved) against
/server_info, the gate that fails a host on a mismatch, and the report line.

The server_info below is the shape SGLang 0.5.23 serves: resolved fields at the top level, NEXTN
shown as EAGLE (srt/arg_groups/speculative_hook.py turns NEXTN into EAGLE)."""

from ansible_collections.sglang.deploy.plugins.module_utils.verify import drift
from ansible_collections.sglang.deploy.plugins.module_utils.verify import gates
from ansible_collections.sglang.deploy.plugins.module_utils.verify import render

INFO = {
    "attention_backend": "triton",
    "page_size": 1,
    "moe_runner_backend": "flashinfer_cutlass",
    "fp4_gemm_runner_backend": "flashinfer_cudnn",
    "speculative_algorithm": "EAGLE",
    "mamba_radix_cache_strategy": "extra_buffer",
    "enable_torch_compile": False,
    "speculative_draft_model_path": None,
}


def test_expectations_met_pass_and_count():
    out = drift.compare_resolved({"attention_backend": "triton", "page_size": "1", "speculative_algorithm": "eagle",
                                  "enable_torch_compile": False, "speculative_draft_model_path": None}, INFO)
    assert out == {"ok": True, "checked": 5, "mismatches": [], "skipped": []}


def test_a_swapped_backend_and_page_size_are_mismatches_quoting_both():
    out = drift.compare_resolved({"attention_backend": "trtllm_mha", "page-size": 16}, INFO)
    assert not out["ok"]
    assert out["mismatches"] == [
        {"field": "attention_backend", "expected": "trtllm_mha", "actual": "triton"},
        {"field": "page_size", "expected": 16, "actual": 1},
    ]


def test_a_field_the_server_does_not_show_is_a_mismatch_not_a_pass():
    out = drift.compare_resolved({"fp4_gemm_backend": "flashinfer_cudnn"}, INFO)
    assert out["mismatches"] == [{"field": "fp4_gemm_backend", "expected": "flashinfer_cudnn",
                                  "actual": "(not in /server_info)"}]


def test_booleans_and_null_are_compared_as_values():
    assert not drift.compare_resolved({"enable_torch_compile": True}, INFO)["ok"]
    assert not drift.compare_resolved({"speculative_draft_model_path": "x"}, INFO)["ok"]
    assert not drift.compare_resolved({"attention_backend": None}, INFO)["ok"]


def test_the_gate_fails_the_host_on_a_resolved_mismatch_even_with_drift_off():
    result = {"resolved": drift.compare_resolved({"page_size": 16}, INFO)}
    passed, failures, _rows = gates.evaluate_gates(result, {"fail_on_drift": False})
    assert not passed
    assert failures == ["resolved: page_size is 1 on the server, the profile expects 16 (sglang_verify_expect_resolved)"]
    passed, failures, _rows = gates.evaluate_gates(
        {"resolved": drift.compare_resolved({"page_size": 1}, INFO)}, {})
    assert passed and not failures


def test_the_report_lists_the_expectations_per_host():
    report = {"hosts": {"h1": {"passed": False, "failures": [], "result": {
        "resolved": drift.compare_resolved({"page_size": 16, "attention_backend": "triton"}, INFO)}}}}
    md = render.render_summary_md(report)
    assert "- resolved arguments: 2 expected, 1 not: `page_size` 1 (expected 16)" in md
    report["hosts"]["h1"]["result"]["resolved"] = drift.compare_resolved({"page_size": 1}, INFO)
    assert "- resolved arguments: 1 expected, all as expected" in render.render_summary_md(report)


def test_an_expectation_the_flags_themselves_ask_otherwise_is_skipped_and_said():
    """A sweep candidate that tries another attention backend is judged by drift (asked against
    resolved), not by the profile's expectation for its own backend."""
    info = dict(INFO, attention_backend="flashinfer")
    out = drift.compare_resolved({"attention_backend": "triton", "page_size": 1}, info,
                                 asked={"attention-backend": "flashinfer", "tp-size": 8})
    assert out["ok"] and out["checked"] == 1
    assert out["skipped"] == [{"field": "attention_backend", "expected": "triton", "asked": "flashinfer"}]
    report = {"hosts": {"h1": {"passed": True, "failures": [], "result": {"resolved": out}}}}
    assert ("- resolved `attention_backend`: not checked, the flags ask flashinfer (the profile expects triton)"
            in render.render_summary_md(report))
    # the same flag asked as the expectation says: checked, and a swap behind it is caught
    out = drift.compare_resolved({"attention_backend": "triton"}, info, asked={"attention_backend": "triton"})
    assert not out["ok"] and out["mismatches"][0]["actual"] == "flashinfer"


def test_an_alias_asked_is_the_value_expected():
    """NEXTN asked, EAGLE expected (what SGLang shows for it): checked, not skipped."""
    out = drift.compare_resolved({"speculative_algorithm": "EAGLE"}, INFO, asked={"speculative-algorithm": "NEXTN"})
    assert out == {"ok": True, "checked": 1, "mismatches": [], "skipped": []}

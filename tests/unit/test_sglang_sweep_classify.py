"""Outcome of one sweep candidate from what the play registered
(plugins/module_utils/sweep/classify.py): the offline findings, SGLang's parser,
sglang_server_wait's failures (roles/sglang_server) and sglang_probe's result (roles/sglang_verify)."""

import copy

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.sweep import classify as C

# sglang_server_wait's failure when the unit exits during the start: the scheduler's traceback
# in the journal (-o short-iso), then the main process and systemd
CRASH_JOURNAL = [
    "2026-03-02T10:14:58+0000 gpu-node-01 python[4242]: [2026-03-02 10:14:58 TP0] Load weight end. "
    "type=Qwen3_5MoeForCausalLM, dtype=torch.bfloat16, avail mem=21.40 GB",
    "2026-03-02T10:15:03+0000 gpu-node-01 python[4242]: [2026-03-02 10:15:03 TP0] Scheduler hit an exception: "
    "Traceback (most recent call last):",
    '2026-03-02T10:15:03+0000 gpu-node-01 python[4242]:   File "/root/ml-env/lib/python3.12/site-packages/'
    'sglang/srt/managers/scheduler.py", line 2571, in run_scheduler_process',
    "2026-03-02T10:15:03+0000 gpu-node-01 python[4242]:     scheduler = Scheduler(server_args, port_args, gpu_id)",
    '2026-03-02T10:15:03+0000 gpu-node-01 python[4242]:   File "/root/ml-env/lib/python3.12/site-packages/'
    'flashinfer/fused_moe/core.py", line 311, in trtllm_fp4_block_scale_moe',
    "2026-03-02T10:15:03+0000 gpu-node-01 python[4242]:     return get_trtllm_moe_sm100_module()",
    "2026-03-02T10:15:03+0000 gpu-node-01 python[4242]: RuntimeError: No supported CUDA architectures found "
    "for major versions [10].",
    "2026-03-02T10:15:04+0000 gpu-node-01 python[4241]: [2026-03-02 10:15:04] Received sigquit from a child "
    "process. It usually means the child failed.",
    "2026-03-02T10:15:05+0000 gpu-node-01 systemd[1]: sglang.service: Main process exited, code=killed, status=9/KILL",
    "2026-03-02T10:15:05+0000 gpu-node-01 systemd[1]: sglang.service: Failed with result 'signal'.",
]
CRASH_WAIT = {
    "failed": True, "main_pid": 0, "journal": CRASH_JOURNAL,
    "msg": "sglang.service exited while starting (ActiveState=failed, SubState=failed, Result=signal): the server "
           "rejected its flags or could not load the model; its journal follows",
}
HUNG_WAIT = {
    "failed": True, "main_pid": 4242,
    "msg": "sglang.service did not generate within 600 s (http://127.0.0.1:30000/health_generate: HTTP 503); "
           "raise sglang_server_ready_timeout for a large model; its journal follows",
    "journal": ["2026-03-02T10:20:00+0000 gpu-node-01 python[4242]: [TP0] Capture cuda graph begin. "
                "This can take up to several minutes."],
}

WORKING = {
    "changed": False,
    "failures": [],
    "result": {
        "health": {"ok": True, "models": ["tiny-qwen2"]},
        "server": {"version": "0.5.23", "speculative_algorithm": "EAGLE", "spec_accept_length": 1.72},
        "probes": [{"name": "What is 2+2?", "output": "4", "ok": True, "problems": []}],
        "single_stream": {"decode_tps": 285.3, "decode_tps_runs": [280.1, 285.3, 290.2, 284.0, 286.9],
                          "ttft_ms": 20.4, "ttft_ms_runs": [19.8, 20.4, 22.0], "itl_ms_p50": 3.4,
                          "itl_ms_p90": 3.9, "itl_ms_p99": 5.1, "e2e_tps": 270.2,
                          "sample_output": "Once upon a time, a lighthouse keeper"},
        "sweep": {"tool": "sglang.benchmark.serving", "levels": [
            {"concurrency": 1, "output_throughput": 281.0, "median_ttft_ms": 21.0, "errors": 0},
            {"concurrency": 4, "output_throughput": 902.5, "median_ttft_ms": 35.2, "p99_ttft_ms": 80.4,
             "median_itl_ms": 4.1, "errors": 0}]},
    },
}


def probe_with(**result):
    out = copy.deepcopy(WORKING)
    out["result"].update(result)
    return out


def test_a_rule_violation_rejects_naming_the_rule():
    findings = [{"rule": "flag-unknown", "severity": "warning", "flag": "x", "message": "unknown"},
                {"rule": "sm120-moe-flashinfer-cutedsl", "severity": "error", "flag": "moe-runner-backend",
                 "message": 'flashinfer_cutedsl MoE gives garbage output ("!!!!") on SM 12.0;\n the server starts',
                 "fix": "use --moe-runner-backend flashinfer_cutlass", "source": "docs/sglang-versions.md"}]
    v = C.classify(rules=findings, probe=WORKING)
    assert v["outcome"] == "rejected" and v["stage"] == "rules"
    assert v["details"]["rule"] == "sm120-moe-flashinfer-cutedsl"
    assert v["reason"].startswith("[sm120-moe-flashinfer-cutedsl] --moe-runner-backend: flashinfer_cutedsl MoE")
    assert "\n" not in v["reason"] and v["figures"] is None
    # warnings alone never reject
    assert C.classify(rules=findings[:1], probe=WORKING)["outcome"] == "working"


def test_sglang_parser_rejects_with_its_own_message():
    verdict = {"ok": False, "phase": "parse", "warnings": [], "errors": [
        {"rule": "argparse", "flag": "argv", "message": "argument --schedule-policy: invalid choice: 'fastest'"}]}
    v = C.classify(parser=verdict)
    assert v["outcome"] == "rejected" and v["stage"] == "parser" and v["details"]["rule"] == "argparse"
    assert "invalid choice: 'fastest'" in v["reason"]
    raw = C.classify(parser={"rc": 2, "stderr": "usage: launch_server.py ...\nlaunch_server.py: error: "
                                                "unrecognized arguments: --tp 9\n"})
    assert raw["outcome"] == "rejected" and "unrecognized arguments: --tp 9" in raw["reason"]
    assert C.classify(parser={"ok": True, "phase": "done", "errors": []}, probe=WORKING)["outcome"] == "working"


def test_a_crash_at_start_keeps_the_journal_and_the_traceback_tail():
    v = C.classify(rules=[], parser={"ok": True}, wait=CRASH_WAIT)
    assert v["outcome"] == "crashed" and v["stage"] == "start"
    assert v["reason"] == ("exited while starting: RuntimeError: No supported CUDA architectures found for "
                           "major versions [10].")
    d = v["details"]
    assert d["journal_tail"] == CRASH_JOURNAL[-20:]
    assert d["traceback"][0].endswith("Scheduler hit an exception: Traceback (most recent call last):")
    assert d["traceback"][-1].startswith("RuntimeError: No supported CUDA")  # timestamps stripped
    assert "sigquit" not in " ".join(d["traceback"])


def test_a_long_journal_is_cut_to_its_last_lines():
    journal = ["2026-03-02T10:00:%02d+0000 h python[1]: line %d" % (i % 60, i) for i in range(80)] + CRASH_JOURNAL
    d = C.classify(wait=dict(CRASH_WAIT, journal=journal))["details"]
    assert len(d["journal_tail"]) == C.JOURNAL_TAIL and d["journal_tail"][-1] == CRASH_JOURNAL[-1]


def test_a_start_that_never_answers_is_hung():
    v = C.classify(wait=HUNG_WAIT)
    assert v["outcome"] == "hung" and v["stage"] == "start"
    assert "did not generate within 600 s" in v["reason"] and "raise" not in v["reason"]
    assert v["details"]["journal_tail"] == HUNG_WAIT["journal"] and v["details"]["traceback"] == []
    task_timeout = {"failed": True, "timedout": {"frame": "", "period": 600},
                    "msg": "The task action failed to execute in the expected time frame (600) and was terminated"}
    assert C.classify(wait=task_timeout)["outcome"] == "hung"
    # registered with failed_when: false, the failure is still recognised
    assert C.classify(wait=dict(HUNG_WAIT, failed=False, failed_when_result=False))["outcome"] == "hung"
    assert C.classify(wait=dict(CRASH_WAIT, failed=False, failed_when_result=False))["outcome"] == "crashed"


def test_garbage_output_is_wrong_and_quoted():
    probes = [{"name": "What is 2+2?", "prompt": "What is 2+2?", "expect": "4", "output": "!!!!!!!!!!!!!!!!",
               "ok": False, "problems": ['garbage: the unit "!" repeated 16 times (100% of the output)',
                                         'expected "4" (contains)']}]
    v = C.classify(probe=probe_with(probes=probes))
    assert v["outcome"] == "wrong" and v["details"]["kind"] == "garbage"
    assert v["reason"].startswith('garbage: probe "What is 2+2?" answered "!!!!!!!!!!!!!!!!"')
    assert v["details"]["output"] == '"!!!!!!!!!!!!!!!!"'


def test_garbage_in_the_benchmark_output_alone_is_wrong():
    single = dict(WORKING["result"]["single_stream"], sample_output="!" * 200)
    v = C.classify(probe=probe_with(single_stream=single))
    assert v["outcome"] == "wrong" and v["details"]["probe"] == "single_stream"
    assert '"!!!!' in v["reason"]


def test_a_wrong_answer_is_wrong_and_quoted():
    probes = [{"name": "capital", "prompt": "What is the capital of France?", "expect": "Paris",
               "output": "Lyon", "ok": False, "problems": ['expected "Paris" (exact)']}]
    v = C.classify(probe=probe_with(probes=probes))
    assert v["outcome"] == "wrong" and v["details"]["kind"] == "wrong answer"
    assert v["reason"] == 'wrong answer: probe "capital" answered "Lyon" (expected "Paris" (exact))'


def test_answers_beyond_the_quality_tolerance_are_degraded_never_working():
    quality = {"level": "degraded", "reasons": ["mean |d logprob| 0.06 beyond the tolerance 0.02"],
               "summary": {"top1": 0.95, "tokens": 700}, "reference_of": "abc123",
               "worst": "prompt chat-07, continuation token 1: reference token 'K'"}
    # the measurement's gate lists the quality verdict among its failures, as sglang_verify_result does
    probe = probe_with(quality=quality)
    probe["failures"] = ["quality degraded against reference abc123: mean |d logprob| 0.06 beyond the tolerance"]
    v = C.classify(probe=probe)
    assert v["outcome"] == "degraded" and v["stage"] == "quality"
    assert "0.06 beyond the tolerance" in v["reason"] and "continuation token 1" in v["reason"]
    assert v["details"]["summary"]["top1"] == 0.95
    # a change of numerics within the tolerance is still working; wrong probes still decide first
    assert C.classify(probe=probe_with(quality=dict(quality, level="numerics_changed")))["outcome"] == "working"
    bad = [{"name": "x", "output": "Lyon", "ok": False, "problems": ["expected"]}]
    assert C.classify(probe=probe_with(quality=quality, probes=bad))["outcome"] == "wrong"


def test_a_server_that_stops_answering_or_fails_under_load_crashed():
    died = probe_with(health={"ok": False, "error": "/health_generate answered 0 after 120s: connection refused"})
    died["failures"] = ["health: /health_generate answered 0"]
    v = C.classify(probe=died, journal=CRASH_JOURNAL)
    assert v["outcome"] == "crashed" and v["stage"] == "measure" and "connection refused" in v["reason"]
    assert v["details"]["traceback"]
    load = probe_with()
    load["failures"] = ["concurrency sweep at 4: 3 of 8 requests failed"]
    assert C.classify(probe=load, journal=CRASH_JOURNAL)["outcome"] == "crashed"
    assert C.classify(probe=load)["outcome"] == "wrong"  # no traceback: the requests failed, the server lives
    assert C.classify(probe={"failed": True, "msg": "MODULE FAILURE"})["outcome"] == "crashed"
    assert C.classify(wait={"elapsed": 20.1})["outcome"] == "crashed"  # started, never measured


def test_working_figures():
    v = C.classify(rules=[], parser={"ok": True}, wait={"elapsed": 21.0, "main_pid": 7}, probe=WORKING)
    assert v["outcome"] == "working"
    f = v["figures"]
    assert f["decode_tps"] == {"n": 5, "median": 285.3, "sigma": pytest.approx(1.4826 * 1.6, abs=1e-3),
                               "mad": 1.6, "min": 280.1, "max": 290.2}
    assert f["ttft_ms"] == 20.4 and f["itl_ms"] == {"p50": 3.4, "p90": 3.9, "p99": 5.1}
    assert f["spec_accept_length"] == 1.72
    assert [(lv["concurrency"], lv["output_throughput"]) for lv in f["throughput"]] == [(1, 281.0), (4, 902.5)]
    # each level's latency, which a throughput objective's target is judged by (None: not measured)
    assert [(lv["p99_ttft_ms"], lv["median_itl_ms"]) for lv in f["throughput"]] == [(None, None), (80.4, 4.1)]
    assert v["reason"] == "285.3 tok/s single stream (min 280.1, max 290.2, 5 runs)"


def test_the_waits_outcome_decides_over_its_message():
    """sglang_server_wait's outcome (crashed, hung, timeout) classifies the start, whatever its
    message says; a result without one is read by its message."""
    neutral = {"failed": True, "main_pid": 1, "journal": [], "msg": "sglang.service: the start failed"}
    assert C.classify(wait=dict(neutral, outcome="crashed"))["outcome"] == "crashed"
    assert C.classify(wait=dict(neutral, outcome="hung"))["outcome"] == "hung"
    assert C.classify(wait=dict(neutral, outcome="timeout"))["outcome"] == "hung"
    assert C.classify(wait=dict(HUNG_WAIT, outcome="crashed"))["outcome"] == "crashed"
    assert C.classify(wait=dict(CRASH_WAIT, outcome="hung"))["outcome"] == "hung"
    assert C.classify(wait=neutral)["outcome"] == "crashed"


def test_answers_wrong_only_at_load_are_degraded_never_working():
    """A candidate whose answers alone match the reference (`same`) while its answers decoded in a
    batch differ from them (plugins/module_utils/quality/load.py) is degraded, naming the
    batch size."""
    from ansible_collections.sglang.deploy.plugins.module_utils.quality import load as L
    alone = {"ids": [10, 11], "logprobs": [-0.1, -0.2], "top": [[[-0.1, 10, "a"]], [[-0.2, 11, "b"]]]}
    bad = {"ids": [10, 5], "logprobs": [-0.1, -0.01], "top": [[[-0.1, 10, "a"]], [[-0.01, 5, "!"]]]}
    rows = [dict(L.compare_generation(alone, bad, 0.05), prompt={"id": "chat-00", "text": "2+2"})]
    tol = {"max_abs_dlogprob": 0.05, "divergence_margin": 0.05}
    load = L.summarize([L.judge_size(16, rows, {"max_abs_dlogprob": 0.001}, tol)], 0.05, 59)
    probe = probe_with(quality={"level": "same", "summary": {"top1": 1.0, "tokens": 700}, "load": load})
    probe["failures"] = ["quality at load degraded: " + load["reasons"][0]]
    v = C.classify(probe=probe)
    assert v["outcome"] == "degraded" and v["stage"] == "quality"
    assert v["reason"].startswith("answers at load diverge from the same prompts alone: 1 of 1 generations at "
                                  "batch 16 wrong: at batch 16, prompt chat-00")
    assert v["details"]["load"]["sizes"] == [16]
    # the same candidate with answers at load as alone is working
    good = L.summarize([L.judge_size(16, [dict(L.compare_generation(alone, alone, 0.05), prompt={})],
                                     {"max_abs_dlogprob": 0.001}, tol)], 0.05, 59)
    assert C.classify(probe=probe_with(quality={"level": "same", "load": good}))["outcome"] == "working"

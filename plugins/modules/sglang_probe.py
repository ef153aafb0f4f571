#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the GPU host with its /usr/bin/python3 (standard library only) against the SGLang
# server on 127.0.0.1. Changes nothing on the host: every request is a read or a generation.

DOCUMENTATION = r"""
---
module: sglang_probe
short_description: Measure and check a running SGLang server (health, drift, probes, benchmark)
description:
  - Sends requests to an SGLang server's OpenAI-compatible and native endpoints and returns
    what it found. It never fails on a finding; the role's gate evaluates the result.
  - Health is a real generation (C(/health_generate)) and C(/v1/models) listing the served name.
  - Drift compares the inventory's flags with C(/server_info) (C(launch_command) and the
    resolved fields).
  - Probes are fixed prompts with known answers at temperature 0, each sent streaming and
    non-streaming; the two must agree, C(finish_reason) must be right, a garbage detector
    looks at every output; one more probe checks that C(max_tokens) is honoured.
  - The single-stream benchmark measures decode tokens/s after the first token, TTFT and the
    per-token inter-token latency from streamed chunks, with the server's token counts per chunk
    (C(continuous_usage_stats)), so a chunk carrying several tokens is counted right.
  - The concurrency sweep runs C(python -m sglang.benchmark.serving) from the host's ML
    environment and parses its JSON; when that cannot run it falls back to its own sweep and
    says so in the result.
  - "Check mode runs the same requests: they change nothing on the host."
options:
  base_url: {description: Server URL as seen from the host., type: str, default: "http://127.0.0.1:30000"}
  api_key: {description: Bearer token when the server has C(--api-key)., type: str}
  served_model_name: {description: Name the server serves; read from C(/v1/models) when empty., type: str}
  checks:
    description: What to run.
    type: list
    elements: str
    default: [health, drift, probes, single_stream, sweep]
    choices: [health, drift, probes, gsm8k, quality, single_stream, sweep]
  ready_timeout: {description: Seconds to wait for C(/health_generate) to answer 200., type: int, default: 120}
  request_timeout: {description: Seconds allowed for one request., type: int, default: 120}
  expected_args: {description: The inventory's flags (name without dashes -> value)., type: dict, default: {}}
  drift_ignore: {description: Flags left out of the drift comparison., type: list, elements: str, default: []}
  expect_resolved: {description: "What the server must have resolved (C(/server_info) field -> value, e.g. attention_backend, page_size), checked with drift.", type: dict, default: {}}
  probes: {description: "List of {prompt, expect, match (exact|contains|regex), max_tokens, name}.", type: list, elements: dict, default: []}
  probe_max_tokens: {description: Default C(max_tokens) of a probe., type: int, default: 32}
  probe_stream_agreement: {description: Require the streamed and non-streamed answers to be identical., type: bool, default: true}
  max_tokens_probe: {description: "{prompt, max_tokens}: with C(ignore_eos) the answer must be exactly max_tokens long, finish_reason length.", type: dict, default: {}}
  request_extra_body: {description: Merged into every chat request (e.g. chat_template_kwargs)., type: dict, default: {}}
  garbage_min_run: {description: Repeats of one unit that count as garbage., type: int, default: 8}
  bench: {description: "Single stream: {prompt, max_tokens, runs, warmup, garbage_check}.", type: dict, default: {}}
  sweep: {description: "Concurrency sweep: {concurrency, requests_per_level, input_len, output_len, tool (auto|bench_serving|own), python, tokenizer, backend, env, timeout}.", type: dict, default: {}}
  quality: {description: "The quality check against the last-known-good release's reference (plugins/module_utils/quality/run.py): {prompts, max_tokens, top_k, same, tolerance, reset, release_dir, release_fact, candidate_path}; with C(load) true also at load (plugins/module_utils/quality/load.py): {load_batch_sizes, load_max_batch, load_fault_rate, load_detect_probability, load_same, load_tolerance}. The candidate reference is written to candidate_path (not in check mode).", type: dict, default: {}}
  gsm8k: {description: "Task accuracy with SGLang's evaluator from the host's ML environment (plugins/module_utils/verify/gsm8k.py): {python, data_path, examples, shots, max_tokens, timeout}.", type: dict, default: {}}
  env_link: {description: "The ML environment link the server runs from (its target names the ml_env generation, which keys the baseline).", type: str, default: ""}
  start_log: {description: "The server's start log (JSON lines, roles/sglang_server); its newest 20 starts go into the result as C(starts).", type: str, default: ""}
author: [sglang_deploy]
"""

EXAMPLES = r"""
- name: Quick gate figures
  sglang.deploy.sglang_probe:
    base_url: http://127.0.0.1:30000
    checks: [health, drift, probes, single_stream]
    probes:
      - {prompt: "What is 2+2?", expect: "4", match: exact}
"""

RETURN = r"""
result:
  description: Everything measured; see the role README for the layout.
  returned: always
  type: dict
failures:
  description: Findings that fail the host (probe output quoted).
  returned: always
  type: list
  elements: str
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import FlagModelError, redact_launch_command
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_prometheus import parse_prometheus_value
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_start_log import read as read_starts
from ansible_collections.sglang.deploy.plugins.module_utils.verify.client import Client, chat_body, single_stream
from ansible_collections.sglang.deploy.plugins.module_utils.verify.drift import compare_args, compare_resolved
from ansible_collections.sglang.deploy.plugins.module_utils.verify.output import answers_check, detect_garbage, match_answer, quote
from ansible_collections.sglang.deploy.plugins.module_utils.verify.gsm8k import run_gsm8k
from ansible_collections.sglang.deploy.plugins.module_utils.quality.run import QualityError, run_quality
from ansible_collections.sglang.deploy.plugins.module_utils.verify.concurrency import run_sweep


def generation(env_link):
    """The ml_env generation behind the environment link (its directory name), or None."""
    if not env_link or not os.path.exists(env_link):
        return None
    return os.path.basename(os.path.realpath(env_link))


def check_health(client, name, ready_timeout):
    out = {"ok": False}
    deadline = time.time() + ready_timeout
    status, text = 0, ""
    t_start = time.time()
    while True:
        status, text = client.get("/health_generate", timeout=min(60, max(ready_timeout, 5)))
        if status == 200:
            break
        if time.time() >= deadline:
            break
        time.sleep(2)
    out["health_generate_status"] = status
    out["wait_s"] = round(time.time() - t_start, 2)
    if status != 200:
        out["error"] = "/health_generate answered %s after %ss: %s" % (status, ready_timeout, quote(text, 200))
        return out
    status, text = client.get("/v1/models")
    try:
        ids = [m.get("id") for m in json.loads(text).get("data", [])]
    except (ValueError, AttributeError):
        ids = []
    out["models"] = ids
    if status != 200 or not ids:
        out["error"] = "/v1/models answered %s: %s" % (status, quote(text, 200))
        return out
    if name and name not in ids:
        out["error"] = "/v1/models lists %s, not the served name %s" % (ids, quote(name))
        return out
    out["ok"] = True
    return out


def server_facts(client):
    status, text = client.get("/server_info")
    info = {}
    if status == 200:
        try:
            info = json.loads(text)
        except ValueError:
            info = {}
    states = info.get("internal_states") or [{}]
    accept = states[0].get("avg_spec_accept_length") if states else None
    accept_src = "server_info" if accept is not None else None
    if accept is None and info.get("speculative_algorithm"):
        mstatus, mtext = client.get("/metrics")
        if mstatus == 200:
            accept = parse_prometheus_value(mtext, "sglang:spec_accept_length")
            accept_src = "metrics" if accept is not None else None
    facts = {
        "server_info_status": status,
        "version": info.get("version"),
        "model_path": info.get("model_path"),
        "served_model_name": info.get("served_model_name"),
        "launch_command": redact_launch_command(info.get("launch_command")),
        "speculative_algorithm": info.get("speculative_algorithm"),
        "spec_accept_length": accept,
        "spec_accept_length_source": accept_src,
        # the layout SGLang resolved (a data-parallel shape: dp_size replicas of tp_size x pp_size)
        "tp_size": info.get("tp_size"),
        "dp_size": info.get("dp_size"),
        "pp_size": info.get("pp_size"),
        "device": info.get("device"),
        # how many requests the server decodes together at most (the throughput gate at load)
        "max_running_requests": info.get("max_running_requests"),
    }
    return info, facts


def run_probes(client, model, p):
    results, failures = [], []
    extra = p["request_extra_body"]
    for probe in p["probes"]:
        prompt = probe["prompt"]
        name = probe.get("name") or prompt
        expect = probe.get("expect")
        match = probe.get("match", "contains")
        max_tokens = int(probe.get("max_tokens") or p["probe_max_tokens"])
        want_finish = probe.get("finish_reason", "stop")
        # a probe's own request_extra_body (e.g. response_format) goes to that probe only
        body = chat_body(model, prompt, max_tokens, dict(extra, **(probe.get("request_extra_body") or {})))
        status, resp = client.post_json("/v1/chat/completions", body)
        rec = {"name": name, "prompt": prompt, "expect": expect, "match": match, "problems": []}
        if status != 200:
            rec["problems"].append("non-streaming request answered %s: %s" % (status, quote(resp.get("error"), 300)))
            rec["ok"] = False
            results.append(rec)
            failures.append("probe %s: %s" % (quote(name), rec["problems"][0]))
            continue
        choice = (resp.get("choices") or [{}])[0]
        msg = choice.get("message") or {}
        text = msg.get("content") or ""
        answer = text or (msg.get("reasoning_content") or "")
        rec.update({"output": answer, "finish_reason": choice.get("finish_reason"),
                    "completion_tokens": (resp.get("usage") or {}).get("completion_tokens")})
        garbage = detect_garbage(answer, p["garbage_min_run"])
        if garbage:
            rec["problems"].append("garbage: " + garbage)
        if expect is not None and not match_answer(answer, expect, match):
            rec["problems"].append("expected %s (%s)" % (quote(expect), match))
        if want_finish and rec["finish_reason"] != want_finish:
            rec["problems"].append("finish_reason %s, expected %s" % (quote(rec["finish_reason"]), quote(want_finish)))
        s = client.stream_chat(body)
        s_answer = s["text"] or s["reasoning_text"]
        rec.update({"stream_output": s_answer, "stream_finish_reason": s["finish_reason"],
                    "stream_completion_tokens": s["completion_tokens"]})
        if not s["ok"]:
            rec["problems"].append("streaming request failed: %s" % s["error"])
        elif p["probe_stream_agreement"] and s_answer != answer:
            rec["problems"].append("streamed answer %s differs from non-streamed %s" % (quote(s_answer), quote(answer)))
        elif s["finish_reason"] != rec["finish_reason"]:
            rec["problems"].append("streamed finish_reason %s differs from non-streamed %s" % (
                quote(s["finish_reason"]), quote(rec["finish_reason"])))
        rec["ok"] = not rec["problems"]
        results.append(rec)
        if rec["problems"]:
            failures.append("probe %s answered %s: %s" % (quote(name), quote(answer), "; ".join(rec["problems"])))
    mt = p["max_tokens_probe"] or {}
    if mt.get("max_tokens"):
        n = int(mt["max_tokens"])
        prompt = mt.get("prompt") or "Tell me a story."
        body = chat_body(model, prompt, n, extra, ignore_eos=True)
        rec = {"name": "max_tokens=%d" % n, "prompt": prompt, "expect": "%d tokens, finish_reason length" % n,
               "match": "max_tokens", "problems": []}
        status, resp = client.post_json("/v1/chat/completions", body)
        if status != 200:
            rec["problems"].append("request answered %s: %s" % (status, quote(resp.get("error"), 300)))
        else:
            choice = (resp.get("choices") or [{}])[0]
            got = (resp.get("usage") or {}).get("completion_tokens")
            text = (choice.get("message") or {}).get("content") or ""
            rec.update({"output": text, "finish_reason": choice.get("finish_reason"), "completion_tokens": got})
            if got != n or choice.get("finish_reason") != "length":
                rec["problems"].append("non-streaming: %s tokens, finish_reason %s (output %s)" % (
                    got, quote(choice.get("finish_reason")), quote(text)))
            s = client.stream_chat(body)
            rec.update({"stream_completion_tokens": s["completion_tokens"], "stream_tokens": s["stream_tokens"],
                        "stream_finish_reason": s["finish_reason"]})
            if not s["ok"]:
                rec["problems"].append("streaming request failed: %s" % s["error"])
            elif s["completion_tokens"] != n or s["stream_tokens"] != n or s["finish_reason"] != "length":
                rec["problems"].append("streaming: usage %s tokens, %s tokens in the stream, finish_reason %s" % (
                    s["completion_tokens"], s["stream_tokens"], quote(s["finish_reason"])))
        rec["ok"] = not rec["problems"]
        results.append(rec)
        if rec["problems"]:
            failures.append("probe %s: %s" % (quote(rec["name"]), "; ".join(rec["problems"])))
    return results, failures


def run_single_stream(client, model, p):
    b = p["bench"]
    prompt = b.get("prompt") or "Tell me a story about a lighthouse keeper."
    max_tokens = int(b.get("max_tokens") or 256)
    runs = int(b.get("runs") or 3)
    warmup = int(b.get("warmup") if b.get("warmup") is not None else 1)
    summary, measured = single_stream(client, model, prompt, max_tokens, runs, warmup, p["request_extra_body"])
    summary.update({"prompt": prompt, "max_tokens": max_tokens, "warmup_excluded": warmup})
    failures = []
    if summary["errors"]:
        failures.append("single-stream benchmark: %d of %d requests failed: %s" % (
            summary["errors"], runs, "; ".join(summary["error_messages"])))
    for r in measured:
        if r["ok"] and r["completion_tokens"] is not None and r["completion_tokens"] != max_tokens:
            failures.append("single-stream benchmark: server reported %s tokens for max_tokens=%d with ignore_eos" % (
                r["completion_tokens"], max_tokens))
            break
    if summary["token_count_mismatches"]:
        summary["warning"] = "server usage and stream token counts differ by %s" % summary["token_count_mismatches"]
    good = [r for r in measured if r["ok"]]
    if good:
        summary["sample_output"] = good[0]["text"][:200]
        if b.get("garbage_check", True):
            # every run's answer, not the first alone: a fault that hits some generations
            failures.extend(answers_check("single-stream benchmark", [
                {"text": r["text"] or r["reasoning_text"], "asked": max_tokens, "got": r["completion_tokens"],
                 "finish_reason": r["finish_reason"]} for r in good], min_run=p["garbage_min_run"]))
    return summary, failures


ARGUMENT_SPEC = dict(
    base_url=dict(type="str", default="http://127.0.0.1:30000"),
    api_key=dict(type="str", no_log=True),
    served_model_name=dict(type="str"),
    checks=dict(type="list", elements="str", default=["health", "drift", "probes", "single_stream", "sweep"],
                choices=["health", "drift", "probes", "gsm8k", "quality", "single_stream", "sweep"]),
    ready_timeout=dict(type="int", default=120),
    request_timeout=dict(type="int", default=120),
    expected_args=dict(type="dict", default={}),
    drift_ignore=dict(type="list", elements="str", default=[]),
    expect_resolved=dict(type="dict", default={}),
    probes=dict(type="list", elements="dict", default=[]),
    probe_max_tokens=dict(type="int", default=32),
    probe_stream_agreement=dict(type="bool", default=True),
    max_tokens_probe=dict(type="dict", default={}),
    request_extra_body=dict(type="dict", default={}),
    garbage_min_run=dict(type="int", default=8),
    bench=dict(type="dict", default={}),
    sweep=dict(type="dict", default={}),
    quality=dict(type="dict", default={}),
    gsm8k=dict(type="dict", default={}),
    env_link=dict(type="str", default=""),
    start_log=dict(type="str", default=""),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    for probe in p["probes"]:
        if not probe.get("prompt"):
            module.fail_json(msg="every probe needs a prompt: %s" % probe)
        if probe.get("match", "contains") not in ("exact", "contains", "regex"):
            module.fail_json(msg="probe match must be exact, contains or regex: %s" % probe)
    t_start = time.time()
    client = Client(p["base_url"], p["api_key"], p["request_timeout"])
    checks = set(p["checks"])
    result = {"base_url": p["base_url"], "checks": sorted(checks), "timings_s": {},
              "generation": generation(p["env_link"]), "starts": read_starts(p["start_log"])}
    failures = []

    def timed(name, fn, *a):
        t = time.time()
        out = fn(*a)
        result["timings_s"][name] = round(time.time() - t, 2)
        return out

    model = p["served_model_name"]
    if "health" in checks:
        health = timed("health", check_health, client, model, p["ready_timeout"])
        result["health"] = health
        if not health["ok"]:
            failures.append("health: " + health["error"])
            result["failures"] = failures
            module.exit_json(changed=False, result=result, failures=failures)
        model = model or health["models"][0]
    if not model:
        status, text = client.get("/v1/models")
        try:
            model = json.loads(text)["data"][0]["id"]
        except (ValueError, KeyError, IndexError, TypeError):
            failures.append("no served model name and /v1/models answered %s: %s" % (status, quote(text, 200)))
            module.exit_json(changed=False, result=result, failures=failures)
    result["served_model_name"] = model

    info, facts = server_facts(client)
    result["server"] = facts
    if "drift" in checks:
        if not info:
            failures.append("drift: /server_info answered %s" % facts["server_info_status"])
        else:
            try:
                result["drift"] = compare_args(p["expected_args"], info, p["drift_ignore"])
            except FlagModelError as exc:
                failures.append("drift: %s" % exc)
            if p["expect_resolved"]:
                result["resolved"] = compare_resolved(p["expect_resolved"], info, p["expected_args"])
    if "probes" in checks:
        probes, pf = timed("probes", run_probes, client, model, p)
        result["probes"] = probes
        failures.extend(pf)
    if "gsm8k" in checks:
        result["gsm8k"] = timed("gsm8k", run_gsm8k, p["gsm8k"], p["base_url"], p["api_key"])
    if "quality" in checks:
        task = {"gsm8k": result["gsm8k"]} if (result.get("gsm8k") or {}).get("score") is not None else None
        try:
            result["quality"] = timed("quality", run_quality, client, p["quality"], facts["model_path"], {
                "version": facts["version"], "generation": result["generation"]}, module.check_mode, task, info)
        except (QualityError, KeyError, TypeError, ValueError) as exc:
            result["quality"] = {"level": "error", "error": "%s: %s" % (type(exc).__name__, exc)}
    if "single_stream" in checks:
        single, sf = timed("single_stream", run_single_stream, client, model, p)
        result["single_stream"] = single
        failures.extend(sf)
    if "sweep" in checks:
        sweep, swf = timed("sweep", run_sweep, client, model, p, p["base_url"], p["api_key"])
        result["sweep"] = sweep
        failures.extend(swf)
    if "single_stream" in checks or "sweep" in checks:
        # accept length after the load, when speculative decoding has something to report
        _info, after = server_facts(client)
        if after.get("spec_accept_length") is not None:
            facts["spec_accept_length"] = after["spec_accept_length"]
            facts["spec_accept_length_source"] = after["spec_accept_length_source"]
    result["duration_s"] = round(time.time() - t_start, 2)
    module.exit_json(changed=False, result=result, failures=failures)


if __name__ == "__main__":
    main()

# -*- coding: utf-8 -*-
# Concurrency sweep of the sglang_verify role: python -m sglang.benchmark.serving from the host's
# ML environment, or the role's own streamed requests when that cannot run. Standard library
# only (runs on the GPU host with the probe module).
"""Output throughput at several concurrency levels."""

import concurrent.futures as cf
import json
import os
import shutil
import subprocess
import tempfile
import time

from ansible_collections.sglang.deploy.plugins.module_utils.verify.client import chat_body
from ansible_collections.sglang.deploy.plugins.module_utils.verify.output import answers_check
from ansible_collections.sglang.deploy.plugins.module_utils.verify.stats import (
    bench_serving_answers,
    median,
    parse_bench_serving_jsonl,
    percentile,
    to_ms,
)


def own_sweep_level(client, model, p, conc, n_req, out_len):
    body = chat_body(model, "Tell me a story about a lighthouse keeper.", out_len, p["request_extra_body"],
                     ignore_eos=True)
    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(conc) as ex:
        res = list(ex.map(lambda _: client.stream_chat(body), range(n_req)))
    dur = time.perf_counter() - t0
    good = [r for r in res if r["ok"]]
    tokens = sum(r["completion_tokens"] or r["stream_tokens"] for r in good)
    problems = answers_check("concurrency sweep at %d" % conc, [
        {"text": r["text"] or r["reasoning_text"], "asked": out_len, "got": r["completion_tokens"],
         "finish_reason": r["finish_reason"]} for r in good], min_run=p["garbage_min_run"])
    return {
        "answer_problems": problems,
        "concurrency": conc,
        "completed": len(good),
        "errors": len(res) - len(good),
        "duration": round(dur, 3),
        "total_output_tokens": tokens,
        "output_throughput": round(tokens / dur, 2) if dur > 0 else None,
        "median_ttft_ms": to_ms(median([r["ttft_s"] for r in good])),
        # the keys sglang.benchmark.serving writes (BENCH_SERVING_KEYS of verify/stats.py): the
        # requests' TTFT at the 99th percentile, every inter-token gap of every request pooled
        "p99_ttft_ms": to_ms(percentile([r["ttft_s"] for r in good], 99)),
        "median_itl_ms": to_ms(median([gap for r in good for gap in r["itl_s"] or []])),
    }


# One process runs every level: sglang.benchmark.serving imports SGLang, torch and the tokenizer
# (about 9 CPU-seconds on the local profile's CPU, more on a GPU host) before its first request,
# once per process. The module is run as `python -m` would run it, once per level with that
# level's arguments (runpy: a fresh module namespace each time, the imports kept).
LEVELS_DRIVER = (
    "import json, runpy, sys\n"
    "for argv in json.load(open(sys.argv[1])):\n"
    "    sys.argv = ['sglang.benchmark.serving'] + argv\n"
    "    runpy.run_module('sglang.benchmark.serving', run_name='__main__', alter_sys=True)\n"
)


def bench_serving_argv(base_url, model, conc, n_req, sw, out):
    """The arguments of one level, as `python -m sglang.benchmark.serving` takes them."""
    argv = ["--backend", sw.get("backend") or "sglang-oai-chat",
            "--base-url", base_url,
            "--dataset-name", "random-ids",
            "--tokenizer", sw["tokenizer"],
            "--num-prompts", str(n_req),
            "--random-input-len", str(sw.get("input_len") or 128),
            "--random-output-len", str(sw.get("output_len") or 128),
            "--random-range-ratio", "1",
            "--max-concurrency", str(conc),
            "--warmup-requests", str(sw.get("warmup_requests") or 1),
            "--seed", "1",
            "--disable-tqdm",
            # the answers too (generated_texts, output_lens): a sweep of garbage is no figure
            "--output-details",
            "--output-file", out]
    if model:
        argv += ["--model", model, "--served-model-name", model]
    return argv


def bench_serving_record(p, sw, conc, n_req, text):
    """One level's record from the JSON lines sglang.benchmark.serving wrote."""
    rec = parse_bench_serving_jsonl(text)
    details = bench_serving_answers(text)
    # random token ids make rambling prompts: only the rules that hold for any input
    rec["answer_problems"] = answers_check("concurrency sweep at %d (sglang.benchmark.serving)" % conc, [
        {"text": t, "asked": int(sw.get("output_len") or 128), "got": n} for t, n in details],
        min_run=p["garbage_min_run"], text_prompt=False)
    rec["concurrency"] = conc
    rec["errors"] = n_req - (rec.get("completed") or 0)
    return rec


def bench_serving_levels(p, base_url, model, levels, per, sw, api_key):
    """Every level's record, in level order, from one sglang.benchmark.serving process; raises
    RuntimeError naming the exit and the log's end when a level wrote nothing."""
    work = tempfile.mkdtemp(prefix="sglang-verify-bench-")
    plan = [(conc, max(conc * per, 2), os.path.join(work, "level-%d.jsonl" % i)) for i, conc in enumerate(levels)]
    argvs = os.path.join(work, "levels.json")
    with open(argvs, "w") as fh:
        json.dump([bench_serving_argv(base_url, model, conc, n, sw, out) for conc, n, out in plan], fh)
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.update(dict((k, str(v)) for k, v in (sw.get("env") or {}).items()))
    if api_key:
        env["OPENAI_API_KEY"] = api_key
    try:
        proc = subprocess.run([sw["python"], "-c", LEVELS_DRIVER, argvs], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, env=env, timeout=int(sw.get("timeout") or 600) * len(plan))
        log = proc.stdout.decode("utf-8", errors="replace")
        missing = [conc for conc, _, out in plan if not os.path.exists(out)]
        if proc.returncode != 0 or missing:
            raise RuntimeError("exit %s%s: %s" % (proc.returncode, " (no figures at %s)" % missing if missing else "",
                                                  log[-600:].strip()))
        records = []
        for conc, n_req, out in plan:
            with open(out) as fh:
                records.append(bench_serving_record(p, sw, conc, n_req, fh.read()))
        return records
    finally:
        shutil.rmtree(work, ignore_errors=True)


def answer_failures(levels):
    """The levels' answer checks, in level order."""
    return [f for lv in levels for f in lv.get("answer_problems") or []]


def run_sweep(client, model, p, base_url, api_key):
    sw = p["sweep"]
    levels = [int(c) for c in (sw.get("concurrency") or [1, 4, 16])]
    per = int(sw.get("requests_per_level") or 2)
    out_len = int(sw.get("output_len") or 128)
    tool = sw.get("tool") or "auto"
    note = None
    if tool in ("auto", "bench_serving"):
        missing = [k for k in ("python", "tokenizer") if not sw.get(k)]
        if not missing and not os.path.exists(sw["python"]):
            missing = ["python (%s not found)" % sw["python"]]
        if missing:
            note = "sglang.benchmark.serving not used: %s not set" % ", ".join(missing)
        else:
            try:
                res = bench_serving_levels(p, base_url, model, levels, per, sw, api_key)
                return {"tool": "sglang.benchmark.serving", "levels": res, "note": None}, answer_failures(res)
            except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as e:
                note = "sglang.benchmark.serving failed, own sweep used instead: %s" % str(e)[-600:]
        if tool == "bench_serving":
            return {"tool": None, "levels": [], "note": note}, ["concurrency sweep: " + note]
    res = [own_sweep_level(client, model, p, c, max(c * per, 2), out_len) for c in levels]
    failures = ["concurrency sweep at %d: %d of %d requests failed" % (
        r["concurrency"], r["errors"], r["errors"] + r["completed"]) for r in res if r["errors"]]
    failures += answer_failures(res)
    return {"tool": "own (sglang_probe)", "levels": res, "note": note}, failures

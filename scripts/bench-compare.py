#!/usr/bin/env python3
"""bench-compare.py - is the project's single-stream figure trustworthy? Compare it with
SGLang's own benchmark (python -m sglang.benchmark.serving) at concurrency 1, on the same server.

The two measurers run interleaved (A B A B ...) for --pairs pairs, because one run against one
run differs by 15-30% on a busy machine; the medians over the pairs are compared:
  - decode tokens/s after the first token: ours = (tokens after the first) / (last - first token
    time); bench_serving's = 1000 / median TPOT, TPOT = (latency - TTFT) / (output tokens - 1);
  - median TTFT (ms).
It prints a table and the ratio ours / bench_serving; it asserts nothing (figures, not a test).

The project's side is the exact code the sglang_verify role runs on the host
(plugins/module_utils/verify/client.py, verify/stats.py). bench_serving needs the `datasets` package and a local
tokenizer (the model directory) in the Python given by --bench-python.

usage:
  scripts/bench-compare.py --url http://127.0.0.1:30000 --bench-python /root/ml-env/bin/python
      [--tokenizer MODEL_DIR] [--pairs 12] [--requests 4] [--output-len 256] [--input-len 16]
      [--env PYTHONPATH=/extra] [--json out.json]
  against a local container host (ours from the controller, bench_serving inside the host):
  scripts/bench-compare.py --url http://172.17.0.2:30000 --exec-prefix 'docker exec sglang-local-1'
      --bench-url http://127.0.0.1:30000
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

# the collection's own client and statistics (importable from the venv: scripts/collections.sh)
from ansible_collections.sglang.deploy.plugins.module_utils.verify.client import Client, single_stream
from ansible_collections.sglang.deploy.plugins.module_utils.verify.stats import parse_bench_serving_jsonl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROMPT = "Tell me a story about a lighthouse keeper."


def ours(client, model, args):
    summary, _ = single_stream(client, model, PROMPT, args.output_len, args.requests, 1)
    if summary["errors"]:
        raise RuntimeError("our client: %s" % summary["error_messages"])
    return {"decode_tps": summary["decode_tps"], "ttft_ms": summary["ttft_ms"],
            "itl_ms_p50": summary["itl_ms_p50"], "e2e_tps": summary["e2e_tps"]}


def bench_serving(args, model, tokenizer):
    fd, out = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    os.unlink(out)
    cmd = shlex.split(args.exec_prefix) + [
           args.bench_python, "-m", "sglang.benchmark.serving", "--backend", args.backend,
           "--base-url", args.bench_url or args.url, "--dataset-name", "random-ids", "--tokenizer", tokenizer,
           "--model", model, "--served-model-name", model,
           "--num-prompts", str(args.requests), "--random-input-len", str(args.input_len),
           "--random-output-len", str(args.output_len), "--random-range-ratio", "1",
           "--max-concurrency", "1", "--warmup-requests", "1", "--seed", "1", "--disable-tqdm",
           "--output-file", out]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    for kv in args.env:
        k, v = kv.split("=", 1)
        env[k] = v
    prefix = shlex.split(args.exec_prefix)
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=900)
        if prefix:  # the file is on the host bench_serving ran on
            got = subprocess.run(prefix + ["cat", out], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            text = got.stdout.decode(errors="replace") if got.returncode == 0 else None
            subprocess.run(prefix + ["rm", "-f", out], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            text = open(out).read() if os.path.exists(out) else None
        if proc.returncode != 0 or not text:
            raise RuntimeError("bench_serving exit %s:\n%s" % (proc.returncode,
                                                              proc.stdout.decode(errors="replace")[-2000:]))
        rec = parse_bench_serving_jsonl(text)
    finally:
        if os.path.exists(out):
            os.unlink(out)
    return {"decode_tps": rec["decode_tps_from_tpot"], "ttft_ms": rec["median_ttft_ms"],
            "itl_ms_p50": rec["median_itl_ms"], "e2e_tps": rec["output_throughput"],
            "completed": rec["completed"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:30000")
    # the hosts' python (roles/sglang_defaults: sglang_defaults_python), as the role runs it
    ap.add_argument("--bench-python", default="/root/ml-env/bin/python")
    ap.add_argument("--tokenizer", help="model directory (default: /server_info model_path)")
    ap.add_argument("--backend", default="sglang-oai-chat")
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--requests", type=int, default=4, help="measured requests per run")
    ap.add_argument("--output-len", type=int, default=256)
    ap.add_argument("--input-len", type=int, default=16, help="bench_serving prompt tokens (ours is ~16)")
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for bench_serving")
    ap.add_argument("--exec-prefix", default="",
                    help="run bench_serving through this, e.g. 'docker exec sglang-local-1' (then --env "
                         "is not passed in: use 'docker exec -e K=V ...')")
    ap.add_argument("--bench-url", help="server URL as bench_serving sees it (default --url), e.g. "
                                        "http://127.0.0.1:30000 inside the container")
    ap.add_argument("--json", help="write all figures here")
    args = ap.parse_args()

    client = Client(args.url, None, 300)
    status, text = client.get("/server_info", timeout=30)
    if status != 200:
        sys.exit(f"{args.url}/server_info answered {status}: {text[:300]}")
    info = json.loads(text)
    model = info.get("served_model_name") or info["model_path"]
    tokenizer = args.tokenizer or info.get("tokenizer_path") or info["model_path"]
    rows = []
    t0 = time.time()
    for i in range(args.pairs):
        a = ours(client, model, args)
        b = bench_serving(args, model, tokenizer)
        rows.append({"pair": i + 1, "ours": a, "bench_serving": b})
        print("pair %d: ours %.1f tok/s TTFT %.1f ms | bench_serving %.1f tok/s TTFT %.1f ms" % (
            i + 1, a["decode_tps"], a["ttft_ms"], b["decode_tps"], b["ttft_ms"]), flush=True)

    def med(side, key):
        return statistics.median(r[side][key] for r in rows)

    print()
    print("server %s, sglang %s, %d pairs x %d requests x %d tokens, %.0f s" % (
        args.url, info.get("version"), args.pairs, args.requests, args.output_len, time.time() - t0))
    print("%-34s %12s %14s %8s" % ("median over pairs", "ours", "bench_serving", "ratio"))
    summary = {}
    for key, label in (("decode_tps", "decode tok/s (after 1st token)"), ("ttft_ms", "TTFT ms"),
                       ("itl_ms_p50", "ITL p50 ms"), ("e2e_tps", "end-to-end tok/s")):
        o, b = med("ours", key), med("bench_serving", key)
        summary[key] = {"ours": o, "bench_serving": b, "ratio": o / b if b else None}
        print("%-34s %12.2f %14.2f %8.3f" % (label, o, b, o / b if b else float("nan")))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"url": args.url, "version": info.get("version"), "pairs": rows, "median": summary,
                       "requests": args.requests, "output_len": args.output_len}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

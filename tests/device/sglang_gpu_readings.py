#!/usr/bin/env python3
"""A real SGLang server on the lent GPU, judged by the project's own verification code: the
figures production's quality and speed limits are set from (docs/quality-gate.md, "Measured on a
GPU").

Run on the GPU machine by tests/device/run_sglang_gpu.sh (which unpacks what
tests/device/carry_sglang.sh built and puts this checkout on the path as the collection
sglang.deploy). Every request and every comparison is the collection's code:
plugins/module_utils/quality/run.py (greedy runs alone, teacher-forced scores, batches
of several prompts in one /generate), quality/load.py (each generation in a batch against
its run alone, the verdict per batch size), quality/compare.py (an unchanged restart against the
recorded reference), verify/client.py and verify/concurrency.py (single stream and
throughput at concurrency). Nothing here re-implements a comparison.

Stages, in order, each skipped when the time left (--budget) cannot hold it; every stage's result
is written to OUT/readings.json as soon as it is known, so a call cut off keeps what it had:

  base      start the server (bf16, CUDA graphs, triton attention); /server_info, /model_info,
            /metrics and one /generate with logprobs kept as fixtures
  reference the quality prompts alone (the reference), then the same again twice on the same
            server (run-to-run, batch of one)
  buckets   every captured decode bucket from 2 to the largest, the prompts decoded in batches
            of that size, repeated: per bucket the exact generations, the near-tie divergences
            with their margins, |d logprob| before the first divergence, the verdict under the
            profile's tolerance; each pass over every bucket is one check at load
  sentinel  the serving sentinel's batch against the reference, --sentinel-asks times, while 3
            clients send their own generations (a false alarm is a wrong verdict here)
  speed     single-stream decode tok/s (runs of 256 tokens) and output tok/s at concurrency,
            interleaved repeats
  restart   the same flags started again: the quality verdict against the first reference, one
            check at load
  fault     tests/faults/batched_decode on the server's path: the check at load must fail,
            naming the batch size
  variant   each --variant ("name=flags"): its quality verdict and one check at load
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from ansible_collections.sglang.deploy.plugins.module_utils.quality import load
from ansible_collections.sglang.deploy.plugins.module_utils.quality import run as vq
from ansible_collections.sglang.deploy.plugins.module_utils.quality.batch import run_staggered
from ansible_collections.sglang.deploy.plugins.module_utils.verify.client import Client, single_stream
from ansible_collections.sglang.deploy.plugins.module_utils.verify.concurrency import own_sweep_level
from ansible_collections.sglang.deploy.plugins.module_utils.watchdog import sentinel as sen

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "roles", "model_files", "files", "tiny-qwen2")
PROMPTS = os.path.join(ROOT, "roles", "sglang_verify", "files", "quality-prompts.json")
FAULT = os.path.join(ROOT, "tests", "faults", "batched_decode")
BASE = ["--attention-backend", "triton", "--sampling-backend", "pytorch", "--dtype", "bfloat16",
        "--max-total-tokens", "131072", "--enable-metrics", "--mem-fraction-static", "0.5"]
PORT = 30000
URL = "http://127.0.0.1:%d" % PORT


class Run:
    """The readings so far, written after every stage; the time budget."""

    def __init__(self, out, budget):
        self.out, self.t0, self.budget = out, time.time(), budget
        self.data = {"stages": {}, "skipped": [], "errors": []}

    def left(self):
        return self.budget - (time.time() - self.t0)

    def put(self, stage, value):
        self.data["stages"][stage] = value
        self.save()

    def save(self):
        self.data["elapsed_s"] = round(time.time() - self.t0, 1)
        with open(os.path.join(self.out, "readings.json"), "w") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)

    def log(self, msg):
        print("[t+%5.1fs] %s" % (time.time() - self.t0, msg), flush=True)


class Server:
    def __init__(self, run, name, args, extra_path=None):
        self.run, self.name = run, name
        env = dict(os.environ)
        if extra_path:
            env["PYTHONPATH"] = extra_path + os.pathsep + env.get("PYTHONPATH", "")
        self.log = os.path.join(run.out, "server-%s.log" % name)
        cmd = [sys.executable, "-m", "sglang.launch_server", "--model-path", MODEL, "--host", "127.0.0.1",
               "--port", str(PORT)] + list(args)
        self.cmd = cmd
        self.t0 = time.time()
        with open(self.log, "w") as f:
            self.proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def wait(self, limit):
        """Seconds to a real generation (/health_generate 200), or None."""
        deadline = time.time() + limit
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return None
            try:
                with urllib.request.urlopen(URL + "/health_generate", timeout=10) as r:
                    if r.status == 200:
                        return round(time.time() - self.t0, 1)
            except Exception:  # not up yet: the port is closed until the server is ready
                pass
            time.sleep(1)
        return None

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(2)

    def tail(self, n=40):
        with open(self.log, errors="replace") as f:
            return f.read().splitlines()[-n:]


def get_json(client, path):
    status, text = client.get(path)
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def prompts():
    with open(PROMPTS) as f:
        return json.load(f)


def quality_q(release_dir, fact, reset, candidate, tolerance, same_limits, at_load=False):
    return {"prompts": prompts(), "max_tokens": 24, "top_k": 5, "reset": reset, "release_dir": release_dir,
            "release_fact": fact, "candidate_path": candidate, "same": same_limits["quality_same"],
            "tolerance": same_limits["quality_tolerance"], "load": at_load, "load_tolerance": tolerance,
            "load_same": same_limits["load_same"]}


def buckets_of(info, largest=None):
    for field in load.BUCKET_FIELDS:
        if isinstance(info.get(field), list) and info[field]:
            sizes = sorted(set(int(b) for b in info[field] if int(b) > 1))
            return [s for s in sizes if largest is None or s <= largest], field
    return [], None


def load_pass(client, ps, alone, sizes, generations, limits):
    """One check at load over ``sizes``: per size the verdict (load.judge_size) and, beyond it,
    every divergence's near-tie margin (how far under the top token alone the batched pick was)."""
    per_size, t0, requests = [], time.time(), 0
    for size in sizes:
        rows = []
        for batch in load.rounds(len(ps), size, generations):
            got = vq.generate_batch(client, [alone[i]["prompt_ids"] for i in batch], 24, 5)
            requests += 1
            for i, gen in zip(batch, got):
                row = load.compare_generation(alone[i]["out"], gen, limits["load_tolerance"]["divergence_margin"])
                row["prompt"] = {"id": ps[i]["id"], "text": ps[i]["text"]}
                rows.append(row)
        verdict = load.judge_size(size, rows, limits["load_same"], limits["load_tolerance"])
        margins = [round(r["diverged"]["alone_logprob"] - r["diverged"]["alone_logprob_of_batched"], 5)
                   for r in rows if r["diverged"] and r["diverged"].get("alone_logprob_of_batched") is not None]
        verdict["divergence_margins"] = sorted(margins)
        verdict["unexplained"] = [load.describe(size, r, "diverged") for r in rows
                                  if r["diverged"] and not r["diverged"].get("explained")][:3]
        per_size.append(verdict)
    out = load.summarize(per_size, 0.05, generations)
    out.update(seconds=round(time.time() - t0, 2), requests=requests)
    return out


def sentinel_asks(client, tmp, tolerance, asks, clients=3):
    """The serving sentinel's comparison (roles/sglang_watchdog: watchdog/sentinel.py on
    quality/batch.py's staggered batch), ``asks`` times against the recorded reference while
    ``clients`` threads send their own generations, so that its prompts land in batches the
    traffic makes: how many asks were right, the largest |d logprob|, seconds per ask, and the
    first wrong verdict described."""
    import threading
    with open(os.path.join(tmp, "r1", "quality.json")) as f:
        refs = sen.pick(json.load(f), 8)
    stop = threading.Event()

    def traffic():
        body = {"text": "Count slowly: one, two,", "sampling_params": {"temperature": 0, "max_new_tokens": 40}}
        while not stop.is_set():
            client.post_json("/generate", body)
    threads = [threading.Thread(target=traffic, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    right, worst, secs, wrong = 0, 0.0, [], []
    try:
        for _ in range(asks):
            t0 = time.time()
            rows, _ = run_staggered(client, refs, sen.lengths(refs), 5, float(tolerance.get("divergence_margin", 0.0)))
            v = sen.judge(rows, refs, tolerance)
            secs.append(time.time() - t0)
            right += bool(v["ok"])
            worst = max(worst, float(v.get("max_abs") or 0.0))
            if not v["ok"] and len(wrong) < 3:
                wrong.append(sen.describe(v))
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    return {"asks": asks, "right": right, "clients": clients, "max_abs_dlogprob": round(worst, 6),
            "seconds_median": round(statistics.median(secs), 3) if secs else None,
            "seconds_max": round(max(secs), 3) if secs else None, "wrong": wrong}


def alone_runs(client, ps):
    alone = []
    for p in ps:
        prompt_ids, _, out = vq.free_run(client, p["text"], 24, None, 5)
        alone.append({"prompt_ids": prompt_ids, "out": out})
    return alone


def quality_verdict(client, release_dir, fact, limits, candidate, at_load=False, info=None):
    """The quality gate as deploy.yml runs it (quality/run.py run_quality): against the recorded
    reference, and with ``at_load`` its check at load too (batches of staggered lengths through
    every size from the largest captured bucket down to 2, quality/run.py run_load)."""
    q = quality_q(release_dir, fact, False, candidate, limits["load_tolerance"], limits, at_load)
    res = vq.run_quality(client, q, MODEL, {"version": "device"}, server_info=info)
    out = {k: res.get(k) for k in ("level", "reasons", "summary", "worst", "requests", "seconds")}
    if at_load:
        ld = res.get("load") or {}
        out["load"] = {k: ld.get(k) for k in ("level", "reasons", "largest", "sizes_from", "sizes_missed", "requests",
                                              "tokens", "seconds", "generations", "exact", "diverged_near_tie",
                                              "wrong", "wrong_sizes", "max_abs_dlogprob", "mean_abs_dlogprob",
                                              "detect_probability", "passes")}
    return out


def record_reference(client, tmp, limits):
    """The first reference, recorded by run_quality as the gate records one, then made the
    current release's (a release directory and index of the same shape sglang_release keeps)."""
    cand = os.path.join(tmp, "candidate.json")
    q = quality_q(tmp, os.path.join(tmp, "index.json"), True, cand, limits["load_tolerance"], limits)
    res = vq.run_quality(client, q, MODEL, {"version": "device"})
    os.makedirs(os.path.join(tmp, "r1"), exist_ok=True)
    os.replace(cand, os.path.join(tmp, "r1", "quality.json"))
    with open(os.path.join(tmp, "index.json"), "w") as f:
        json.dump({"current": "r1"}, f)
    return res["level"]


def fixtures(client, run):
    fx = os.path.join(run.out, "fixtures")
    os.makedirs(fx, exist_ok=True)
    for name, path in (("server_info.json", "/server_info"), ("model_info.json", "/model_info"),
                       ("v1_models.json", "/v1/models")):
        _, body = get_json(client, path)
        with open(os.path.join(fx, name), "w") as f:
            json.dump(body, f, indent=1, sort_keys=True)
    _, text = client.get("/metrics")
    with open(os.path.join(fx, "metrics.txt"), "w") as f:
        f.write(text)
    status, gen = client.post_json("/generate", {
        "text": prompts()[0]["text"], "sampling_params": {"temperature": 0, "max_new_tokens": 24},
        "return_logprob": True, "logprob_start_len": 0, "top_logprobs_num": 5, "return_text_in_logprobs": True})
    with open(os.path.join(fx, "generate_logprobs.json"), "w") as f:
        json.dump(gen, f, indent=1, sort_keys=True)
    _, info = get_json(client, "/server_info")
    return info if isinstance(info, dict) else {}


def speed(client, model, rounds, concurrencies):
    single, levels = [], dict((c, []) for c in concurrencies)
    p = {"request_extra_body": {}, "garbage_min_run": 8}
    for _ in range(rounds):
        summary, _ = single_stream(client, model, "Tell me a story about a lighthouse keeper.", 256, 3, 1)
        single.append(summary)
        for c in concurrencies:
            lvl = own_sweep_level(client, model, p, c, 2 * c, 128)
            levels[c].append({k: lvl[k] for k in ("output_throughput", "median_ttft_ms", "p99_ttft_ms", "errors", "answer_problems")})
    tps = [v for s in single for v in s.get("decode_tps_runs") or []]
    ttft = [v for s in single for v in s.get("ttft_ms_runs") or []]

    def spread(values):
        values = [v for v in values if v is not None]
        return {"n": len(values), "median": round(statistics.median(values), 2) if values else None,
                "min": min(values) if values else None, "max": max(values) if values else None}
    return {"single_stream": single, "decode_tps": spread(tps), "ttft_ms": spread(ttft),
            "at_concurrency": dict((str(c), {"runs": v, "output_tps": spread([x["output_throughput"] for x in v]),
                                              "p99_ttft_ms": spread([x["p99_ttft_ms"] for x in v])})
                                   for c, v in levels.items())}


def endpoint_runs(run, runs, limits_file, expect_resolved):
    """playbooks/verify_endpoint.yml against the server started above (by hand, not by deploy.yml),
    as an operator of a server this project did not deploy runs it: the local profile's probes
    (the tiny model's questions), production's quality limits, ansible-core carried with the
    site (connection local). The first run records the endpoint's reference and baseline, each
    later one is judged against them. Each run's verdict and its report.json come back."""
    import glob
    import yaml
    with open(limits_file) as f:
        prof = yaml.safe_load(f)
    extra = dict((k, v) for k, v in prof.items() if k.startswith("sglang_verify_quality"))
    extra.update(sglang_verify_expect_resolved=expect_resolved, sglang_verify_plot=False,
                 sglang_verify_endpoint_url=URL)
    vars_file = os.path.join(run.out, "endpoint-vars.json")
    with open(vars_file, "w") as f:
        json.dump(extra, f, indent=1, sort_keys=True)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH="/tmp/ac", ANSIBLE_FORCE_COLOR="0")
    results = []
    for i in range(runs):
        if run.left() < 90:
            run.data["skipped"].append("endpoint run %d" % (i + 1))
            break
        t0 = time.time()
        proc = subprocess.run([sys.executable, "-m", "ansible.cli.playbook", "-i", "inventories/local",
                               "playbooks/verify_endpoint.yml", "-e", "@" + vars_file],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=max(60, run.left() - 30))
        reports = sorted(glob.glob(os.path.join(ROOT, "reports", "*", "report.json")), key=os.path.getmtime)
        entry = {"rc": proc.returncode, "seconds": round(time.time() - t0, 1),
                 "output_tail": (proc.stdout + proc.stderr).splitlines()[-25:]}
        if reports:
            with open(reports[-1]) as f:
                report = json.load(f)
            entry["report"] = reports[-1]
            with open(os.path.join(run.out, "endpoint-report-%d.json" % (i + 1)), "w") as f:
                json.dump(report, f, indent=1, sort_keys=True)
            summary = os.path.join(os.path.dirname(reports[-1]), "summary.md")
            if os.path.exists(summary):
                with open(summary) as src, open(os.path.join(run.out, "endpoint-summary-%d.md" % (i + 1)), "w") as dst:
                    dst.write(src.read())
        results.append(entry)
        run.put("endpoint", results)
        run.log("endpoint run %d: rc %s in %ss" % (i + 1, proc.returncode, entry["seconds"]))
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    ap.add_argument("--budget", type=float, default=540.0)
    ap.add_argument("--start-limit", type=float, default=300.0)
    ap.add_argument("--stages", default="base,reference,buckets,sentinel,speed,restart,fault,variant")
    ap.add_argument("--sentinel-asks", type=int, default=100)
    ap.add_argument("--endpoint-runs", type=int, default=3)
    ap.add_argument("--speed-rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=2, help="quality verdicts of the same server against its reference")
    ap.add_argument("--bucket-seconds", type=float, default=150.0,
                    help="time for repeated checks at load over every bucket (at least one pass)")
    ap.add_argument("--variant", action="append", default=[], help="name=extra flags (space-separated)")
    ap.add_argument("--load-passes", type=int, default=3)
    ap.add_argument("--limits", default=os.path.join(ROOT, "inventories", "production", "group_vars", "blackwell",
                                                     "verify.yml"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    run = Run(a.out, a.budget)
    stages = a.stages.split(",")
    import yaml  # the image's PyYAML
    with open(a.limits) as f:
        prof = yaml.safe_load(f)
    limits = {"quality_same": prof["sglang_verify_quality_same"], "quality_tolerance": prof["sglang_verify_quality_tolerance"],
              "load_same": prof["sglang_verify_quality_load_same"], "load_tolerance": prof["sglang_verify_quality_load_tolerance"]}
    run.data["limits"] = limits
    client = Client(URL, None, 120)
    tmp = tempfile.mkdtemp(prefix="sglang-gpu-")
    ps = prompts()
    srv = Server(run, "base", BASE)
    started = srv.wait(a.start_limit)
    run.put("base", {"start_s": started, "cmd": srv.cmd[3:], "log_tail": srv.tail(60 if started is None else 25)})
    if started is None:
        srv.stop()
        run.log("the server did not start")
        return 1
    run.log("base up in %ss" % started)
    info = fixtures(client, run)
    model = (get_json(client, "/v1/models")[1].get("data") or [{}])[0].get("id")
    keys = sorted(k for k in info if any(s in k for s in ("cuda_graph", "max_running", "max_total", "backend", "version")))
    run.data["server_info"] = dict((k, info.get(k)) for k in keys)
    run.save()
    try:
        alone = alone_runs(client, ps)
        if "reference" in stages:
            rec = record_reference(client, tmp, limits)
            reps = [quality_verdict(client, tmp, os.path.join(tmp, "index.json"), limits, None)
                    for _ in range(a.repeats)]
            run.put("reference", {"recorded": rec, "same_server_repeats": reps})
            run.log("reference: %s, repeats %s" % (rec, [r["level"] for r in reps]))
        sizes, field = buckets_of(info)
        run.data["buckets"] = {"field": field, "sizes": sizes}
        if "buckets" in stages and sizes:
            passes, gates, t_b = [], [], time.time()
            for i in range(a.load_passes):
                if i > 0 and (time.time() - t_b > a.bucket_seconds or run.left() < 150):
                    break
                passes.append(load_pass(client, ps, alone, sizes, 59, limits))
                gates.append(quality_verdict(client, tmp, os.path.join(tmp, "index.json"), limits, None, True, info))
                run.put("buckets", {"passes": passes, "gate_checks": gates})
                run.log("buckets pass %d: %s in %ss; the gate's check at load %s/%s in %ss" % (
                    i + 1, passes[-1]["level"], passes[-1]["seconds"], gates[-1]["level"],
                    gates[-1]["load"]["level"], gates[-1]["load"]["seconds"]))
        if "sentinel" in stages and "reference" in stages and run.left() > 150:
            run.put("sentinel", sentinel_asks(client, tmp, limits["load_tolerance"], a.sentinel_asks))
            run.log("sentinel: %s" % {k: run.data["stages"]["sentinel"][k] for k in ("asks", "right", "max_abs_dlogprob")})
        if "speed" in stages and run.left() > 150:
            run.put("speed", speed(client, model, a.speed_rounds, (1, 8, 32, 64)))
            run.log("speed: %s" % run.data["stages"]["speed"]["decode_tps"])
        if "endpoint" in stages:
            endpoint_runs(run, a.endpoint_runs, a.limits, {"attention_backend": "triton", "sampling_backend": "pytorch"})
    except Exception as exc:  # keep what was measured; name what broke
        run.data["errors"].append("base: %s: %s" % (type(exc).__name__, exc))
        run.save()
    srv.stop()
    for stage, args, path in (("restart", BASE, None), ("fault", BASE, FAULT)) + tuple(
            ("variant:" + v.split("=", 1)[0], BASE + v.split("=", 1)[1].split(), None) for v in a.variant):
        if stage.split(":")[0] not in stages:
            continue
        if run.left() < 120:
            run.data["skipped"].append(stage)
            run.save()
            continue
        srv = Server(run, stage.replace(":", "-"), args, path)
        started = srv.wait(min(a.start_limit, run.left() - 30))
        entry = {"start_s": started, "cmd": srv.cmd[3:]}
        try:
            if started is None:
                entry["log_tail"] = srv.tail(40)
            else:
                _, info2 = get_json(client, "/server_info")
                info2 = info2 if isinstance(info2, dict) else {}
                if "reference" in stages:
                    entry["quality"] = quality_verdict(client, tmp, os.path.join(tmp, "index.json"), limits, None,
                                                       True, info2)
                sizes2, _ = buckets_of(info2)
                alone2 = alone_runs(client, ps)
                entry["load"] = load_pass(client, ps, alone2, sizes2 or [2, 8, 32], 59, limits)
                if stage == "fault" and "sentinel" in stages:
                    entry["sentinel"] = sentinel_asks(client, tmp, limits["load_tolerance"], 3)
                entry["server_info"] = dict((k, info2.get(k)) for k in keys)
        except Exception as exc:
            entry["error"] = "%s: %s" % (type(exc).__name__, exc)
        srv.stop()
        run.put(stage, entry)
        run.log("%s: start %s, quality %s (gate at load %s), per bucket %s" % (
            stage, started, (entry.get("quality") or {}).get("level"),
            ((entry.get("quality") or {}).get("load") or {}).get("level"), (entry.get("load") or {}).get("level")))
    run.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())

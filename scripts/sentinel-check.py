#!/usr/bin/env python3
"""sentinel-check.py URL FLAG_FILE [CLIENTS [ASKS]] - the serving sentinel's comparison and the
check at load through every batch size, on a live SGLang server started with
tests/faults/batched_decode on its PYTHONPATH and SGLANG_TEST_FAULT_FILE=FLAG_FILE (the fault off
while the file is absent). Records the quality reference as plugins/module_utils/quality/run.py
does, asks the sentinel's batch ASKS times while CLIENTS threads send their own generations
(a false alarm is printed), then switches the fault on by writing a band into FLAG_FILE, and runs
the check at load with the fault off and on. docs/operations.md, "Wrong answers", gives what it
printed on the tiny model (inventories/local's server flags, on the controller)."""
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from ansible_collections.sglang.deploy.plugins.module_utils.quality import run as vq
from ansible_collections.sglang.deploy.plugins.module_utils.quality.batch import run_staggered
from ansible_collections.sglang.deploy.plugins.module_utils.watchdog import sentinel as sen

BASE = sys.argv[1].rstrip("/")
FLAG = sys.argv[2]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOL = {"max_abs_dlogprob": 0.01, "divergence_margin": 0.01}  # inventories/local's load tolerance

class C:
    def post_json(self, path, body):
        req = urllib.request.Request(BASE + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, {"error": e.read().decode()[:300]}

client = C()
prompts = json.load(open(os.path.join(ROOT, "roles/sglang_verify/files/quality-prompts.json")))
REF = FLAG + ".reference.json"
q = {"prompts": prompts, "max_tokens": 24, "top_k": 5, "reset": True, "candidate_path": REF}
t0 = time.time()
out = vq.run_quality(client, q, "/x", "local")
print("reference recorded:", out["level"], out["prompts"], "prompts", round(time.time() - t0, 1), "s", flush=True)
ref = json.load(open(REF))
refs = sen.pick(ref, 8)

stop = threading.Event()
def traffic():
    body = {"text": "Count slowly: one, two,", "sampling_params": {"temperature": 0, "max_new_tokens": 40}}
    while not stop.is_set():
        client.post_json("/generate", body)
clients = int(sys.argv[3]) if len(sys.argv) > 3 else 3
threads = [threading.Thread(target=traffic, daemon=True) for _ in range(clients)]
for t in threads:
    t.start()

def ask():
    t = time.time()
    rows, _ = run_staggered(client, refs, sen.lengths(refs), 5, TOL["divergence_margin"])
    v = sen.judge(rows, refs, TOL)
    v["seconds"] = round(time.time() - t, 3)
    return v

n = int(sys.argv[4]) if len(sys.argv) > 4 else 100
oks, worst, secs = 0, 0.0, []
for i in range(n):
    v = ask()
    oks += v["ok"]
    worst = max(worst, v["max_abs"])
    secs.append(v["seconds"])
    if not v["ok"]:
        print("FALSE ALARM:", sen.describe(v), flush=True)
print(f"unchanged server under {len(threads)} clients: {oks}/{n} sentinel asks right, max |d logprob| {worst}, "
      f"seconds per ask median {sorted(secs)[len(secs)//2]} max {max(secs)}", flush=True)
for band in ("2-8", "3-5", "8"):
    open(FLAG, "w").write(band)
    v = ask()
    print(f"fault on for {band}: ok={v['ok']}:", sen.describe(v), flush=True)
os.unlink(FLAG)
stop.set()
# the check at load, staggered, fault off then on for a band the two fixed sizes (32, 64) never saw
alone = []
for p in prompts:
    pid, _, o = vq.free_run(client, p["text"], 24, None, 5)
    alone.append({"prompt_ids": pid, "out": o})
ql = {"max_tokens": 24, "top_k": 5, "load_max_batch": 64, "load_same": {"max_abs_dlogprob": 0.001},
      "load_tolerance": TOL}
for band in (None, "9-16"):
    if band:
        open(FLAG, "w").write(band)
    r = vq.run_load(client, prompts, alone, ql, {"max_running_requests": 4096})
    print(f"check at load, fault {band or 'off'}: {r['level']}, sizes {min(r['sizes'])}-{max(r['sizes'])} "
          f"missed {r['sizes_missed']}, "
          f"{r['requests']} requests, {r['generations']} generations, {r['tokens']} tokens, {r['seconds']} s; "
          f"{(r['reasons'] or [''])[0][:300]}", flush=True)
if os.path.exists(FLAG): os.unlink(FLAG)

#!/usr/bin/env python3
"""Cold and warm starts of compiled GPU code with the sglang unit's cache environment.

Run on a GPU machine from the repository root (torch with CUDA installed; nothing else):

    python3 tests/device/warm_starts.py [--pairs 5]

The hardened unit points every compiler cache at /var/cache/<service>/<generation>
(sglang_server_hardening_env in roles/sglang_server/defaults/main.yml). This script reads that
mapping from the role's defaults, gives each start a cache directory as the unit would, and
starts a fresh process that torch.compile()s a small transformer block on the GPU and runs it:

* cold: an empty cache directory (the first start of a new ml_env generation);
* warm: the directory the previous cold start filled (a restart on the same generation).

Cold and warm alternate (interleaved pairs, so drift hits both alike); it prints each start and
the median and range of each kind. What it shows: the unit's cache variables are the ones torch
inductor and Triton honour, and a restart that finds them skips the compile. It is torch.compile
on one GPU, not an SGLang server start (SGLang's own JIT, FlashInfer, uses the same variables).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULTS = os.path.join(ROOT, "roles", "sglang_server", "defaults", "main.yml")
CACHE_VAR = "{{ _sglang_server_cache_dir }}"

CHILD = r"""
import sys, time
t0 = time.monotonic()
MODE, SHAPES = sys.argv[1], int(sys.argv[2])
import torch
from torch._dynamo.utils import counters
t_import = time.monotonic()
torch.manual_seed(0)
dim, heads = 1024, 16
block = torch.nn.TransformerEncoderLayer(dim, heads, 4 * dim, batch_first=True, norm_first=True)
block = block.to("cuda", torch.bfloat16).eval()
fn = torch.compile(block, dynamic=False, mode=MODE)
x = torch.randn(8, 256, dim, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
t_ready = time.monotonic()
with torch.no_grad():
    for n in range(256, 256 - 32 * SHAPES, -32):  # one graph per shape, as a server compiles per batch shape
        fn(x[:, :n])
torch.cuda.synchronize()
t_done = time.monotonic()
hits = counters["inductor"]["fxgraph_cache_hit"]
misses = counters["inductor"]["fxgraph_cache_miss"]
print("COMPILE %.2f" % (t_done - t_ready))
print("phases import %.1f setup %.1f compile+run %.1f; fx graph cache hits %d misses %d"
      % (t_import - t0, t_ready - t_import, t_done - t_ready, hits, misses))
"""


def unit_cache_env(cache_dir):
    """sglang_server_hardening_env's cache variables with the unit's cache directory filled in."""
    env, inside = {}, False
    with open(DEFAULTS, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("sglang_server_hardening_env:"):
                inside = True
                continue
            if inside:
                match = re.match(r'^  ([A-Z_]+): "(.*)"\s*$', line)
                if not match:
                    break
                if CACHE_VAR in match.group(2):
                    env[match.group(1)] = match.group(2).replace(CACHE_VAR, cache_dir)
    if "TORCHINDUCTOR_CACHE_DIR" not in env or "TRITON_CACHE_DIR" not in env:
        sys.exit("%s: sglang_server_hardening_env lacks TORCHINDUCTOR_CACHE_DIR or TRITON_CACHE_DIR" % DEFAULTS)
    return env


def start(cache_dir, mode, shapes):
    """(seconds of the whole process, seconds of its compile-and-first-run phase)."""
    env = dict(os.environ, **unit_cache_env(cache_dir))
    began = time.monotonic()
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(shapes)], env=env, capture_output=True, text=True, check=False)
    took = time.monotonic() - began
    if out.returncode != 0:
        sys.exit("the child failed:\n" + out.stdout + out.stderr[-3000:])
    lines = out.stdout.strip().splitlines()
    print("  process %.1f s; %s" % (took, lines[-1]), flush=True)
    return took, float(lines[-2].split()[1])


def summary(name, values):
    return "%s %.1f s median (%.1f-%.1f, n=%d)" % (name, statistics.median(values), min(values), max(values), len(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--shapes", type=int, default=6, help="sequence lengths compiled (one graph each, at most 8)")
    parser.add_argument("--mode", default="max-autotune-no-cudagraphs",
                        help="torch.compile mode (default: with autotuning, whose results are cached too)")
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="warm-starts-")
    print("cache variables of the unit:", ", ".join(sorted(unit_cache_env("<dir>"))))
    start(os.path.join(base, "warmup"), args.mode, args.shapes)  # the first CUDA context and imports of this machine
    cold, warm = [], []
    try:
        for i in range(args.pairs):
            generation = os.path.join(base, "generation-%d" % i)
            cold.append(start(generation, args.mode, args.shapes))
            warm.append(start(generation, args.mode, args.shapes))
            print("pair %d: compile+first run cold %.1f s, warm %.1f s; process cold %.1f s, warm %.1f s"
                  % (i + 1, cold[-1][1], warm[-1][1], cold[-1][0], warm[-1][0]), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for index, what in ((1, "compile and first run"), (0, "whole process")):
        c, w = [x[index] for x in cold], [x[index] for x in warm]
        print("%s (mode %s, %d graphs): %s; %s; warm faster in %d of %d pairs"
              % (what, args.mode, args.shapes, summary("cold", c), summary("warm", w), sum(b < a for a, b in zip(c, w)), len(c)))
    return 0 if statistics.median(x[1] for x in warm) < statistics.median(x[1] for x in cold) else 1


if __name__ == "__main__":
    sys.exit(main())

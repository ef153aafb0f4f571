#!/usr/bin/env python3
"""ml_env's smoke test, its kernels step, on a real GPU machine: one real kernel of each GPU
library installed here (torch's bf16 matmul, FlashInfer's and sgl-kernel's fp16 rmsnorm) against
a float32 torch reference (roles/ml_env/files/ml_env_smoke.py, roles/ml_env/README.md).

Run on a GPU machine from the repository root, with the python that has torch (no Ansible; the
smoke script runs as install.yml runs it in a generation: that python, its config as one JSON
argument):

    python tests/device/smoke_kernels.py

It prints two JSON lines, the smoke test's output for this GPU's SM with only the errors of its
kernels step (an import error of the second line is said again by that step):
  default:  ml_env_smoke_kernels as the defaults name them, ml_env_smoke_imports [torch];
  required: flashinfer and sgl_kernel also in the smoke imports (the production inventory's
            setting), so a library that is not installed is an error naming it, not a skip.
The lent GPU machine has torch 2.11 only (no FlashInfer, no SGLang/sgl-kernel): there only
torch's kernel runs, and FlashInfer and sgl_kernel are reported as not installed (skipped in the
first line, errors in the second), unless tests/device/carry_kernels.sh built them here and
tests/device/run_smoke_kernels.sh unpacked them there. Exits 0 when the default step passed.
"""

import json
import os
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMOKE = os.path.join(ROOT, "roles", "ml_env", "files", "ml_env_smoke.py")
KERNELS = ["torch", "flashinfer", "sgl_kernel"]  # ml_env_smoke_kernels (roles/ml_env/defaults/main.yml)


def run_smoke(cfg):
    """The smoke script's JSON line for `cfg`, run with this python as install.yml runs it."""
    proc = subprocess.run([sys.executable, SMOKE, json.dumps(cfg)], capture_output=True, text=True, check=False)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    if not torch.cuda.is_available():
        print("no CUDA device visible to torch %s" % torch.__version__)
        return 2
    sm = "%d.%d" % torch.cuda.get_device_capability(0)
    print("gpu: %s, SM %s, torch %s (CUDA %s)" % (torch.cuda.get_device_name(0), sm, torch.__version__,
                                                   torch.version.cuda))
    verdicts = {}
    for label, imports in (("default", ["torch"]), ("required", ["torch", "flashinfer", "sgl_kernel"])):
        out = run_smoke({"imports": imports, "expect_sm": sm, "kernels": KERNELS})
        out["errors"] = [e for e in out["errors"] if e.startswith("kernel")]
        verdicts[label] = out["ok"]
        print("%s: %s" % (label, json.dumps(out, sort_keys=True)))
    return 0 if verdicts["default"] else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""ml_env's CUDA-runtime check on a real GPU machine: the driver's CUDA version against the
runtime the installed wheels need, and a real kernel on the GPU
(docs/ml-env-checks.md, A reading on a GPU machine).

Run on a GPU machine from the repository root (torch with CUDA; no Ansible): the checks are
imported by their names in the collection, so link the checkout as scripts/collections.sh does:

    mkdir -p collections/ansible_collections/sglang
    ln -sfn ../../.. collections/ansible_collections/sglang/deploy
    PYTHONPATH=collections python3 tests/device/cuda_runtime_reading.py [--size 8192] [--reps 20]

It reads the driver's CUDA version twice (nvidia-smi's banner through gpu_host's parser, and
libcuda's cuDriverGetVersion), the runtime torch was built for and the CUDA wheels installed
beside it (their metadata), and applies ml_env's check to them
(plugins/module_utils/ml_env/cuda.py), then to a CUDA
13.2 and a CUDA 14 runtime on the same driver, to show the verdicts the role would give. It also
applies the FlashInfer-architecture check to the FlashInfer packages installed here, if any, for
the GPU's own SM. Last it multiplies two bf16 matrices on the GPU, compares the product with a
float32 one, and prints the time and TFLOP/s: the first kernel a generation runs.
"""

import argparse
import ctypes
import importlib.metadata
import json
import subprocess
import sys
import sysconfig
import time

import torch

from ansible_collections.sglang.deploy.plugins.module_utils.gpu import host_nvidia as nvidia
from ansible_collections.sglang.deploy.plugins.module_utils.ml_env import cuda
from ansible_collections.sglang.deploy.plugins.module_utils.ml_env import flashinfer


def libcuda_version():
    """cuDriverGetVersion: 13000 -> '13.0'; '' when libcuda cannot be loaded."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return ""
    version = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return ""
    return "%d.%d" % (version.value // 1000, (version.value % 1000) // 10)


def matmul(size, reps):
    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    c = a @ b  # warm-up (cuBLAS picks its kernel)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        c = a @ b
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / reps
    reference = a.float() @ b.float()
    rel = ((c.float() - reference).norm() / reference.norm()).item()
    return {"size": size, "reps": reps, "ms": round(seconds * 1e3, 3),
            "tflops": round(2 * size ** 3 / seconds / 1e12, 1), "rel_err_vs_fp32": float("%.3g" % rel),
            "finite": bool(torch.isfinite(c).all().item())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    banner = subprocess.run(["nvidia-smi"], capture_output=True, text=True, check=False).stdout
    driver = nvidia.parse_cuda_driver_version(banner)
    wheels = sorted("%s==%s" % (d.metadata["Name"], d.version) for d in importlib.metadata.distributions()
                    if d.metadata["Name"] and cuda.cuda_of(d.metadata["Name"], d.version))
    sources = ["torch==%s" % torch.__version__] + [w for w in wheels if not w.lower().startswith("torch==")]
    reading = {
        "gpu": torch.cuda.get_device_name(0), "sm": "%d.%d" % torch.cuda.get_device_capability(0),
        "driver_version": nvidia.parse_banner_driver_version(banner), "driver_cuda_nvidia_smi": driver,
        "driver_cuda_libcuda": libcuda_version(), "torch": torch.__version__, "torch_cuda": torch.version.cuda,
        "torch_arch_list": torch.cuda.get_arch_list(), "cuda_wheels": wheels,
    }
    print("reading: " + json.dumps(reading, sort_keys=True))
    here = cuda.check(sources, driver)
    print("check, this environment: ok=%s runtime=%s driver=%s newer_minor=%s newer_major=%s\n  %s"
          % (here["ok"], here["runtime"], here["driver"], here["newer_minor"], here["newer_major"], here["message"]))
    for label, lines in (("a CUDA 13.2 runtime (torch 2.15)", ["nvidia-cuda-runtime==13.2.51"]),
                         ("a CUDA 14 runtime", ["nvidia-cuda-runtime==14.0.10"])):
        verdict = cuda.check(lines, driver)
        print("check, %s on this driver: ok=%s\n  %s" % (label, verdict["ok"], verdict["message"]))
    site = sysconfig.get_paths()["purelib"]
    fi = flashinfer.judge(flashinfer.read_records(site), reading["sm"])
    print("flashinfer check for SM %s in %s: ok=%s judged=%s\n  %s" % (reading["sm"], site, fi["ok"], fi["judged"],
                                                                    fi["message"]))
    result = matmul(args.size, args.reps)
    print("matmul bf16 on the GPU: " + json.dumps(result, sort_keys=True))
    return 0 if here["ok"] and result["finite"] and result["rel_err_vs_fp32"] < 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())

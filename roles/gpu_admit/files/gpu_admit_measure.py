"""Admission measurement of a GPU host, run with the host's own ML environment python.

usage: python gpu_admit_measure.py [--repeat 3] [--burn-seconds 5] [--gemm-reference-fault 0]
Prints one JSON document on stdout (schema_version 1): per GPU the PCIe link, H2D/D2H pinned
copies, device memory copy and the GEMM burn-in; across GPUs all-reduce and peer copies; ECC,
Xid lines and DCGM where readable. Needs torch only (SGLang and DCGM are used where present).
Judging the figures is not done here: plugins/module_utils/gpu/admit_verdict.py does it.
The roles/gpu_admit README lists every key.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

# The siblings in this folder (bin/ on the host) import by name: Python puts the folder of the
# script it runs first on sys.path (`python gpu_admit_measure.py`, as roles/gpu_admit/tasks/admit.yml
# and tests/device/run_gpu_admit.sh run it), and the spawned ranks of gpu_admit_collective get
# the same sys.path. None of them imports torch at import time.
import gpu_admit_collective
import gpu_admit_device
import gpu_admit_health

# nvidia-smi's GPU order, so that index N here is nvidia-smi's GPU N; never NVLink multicast
# (set before torch is imported, in measure())
os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

SCHEMA_VERSION = 1


def run(argv, timeout=600):
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                              env=dict(os.environ, LC_ALL="C"))
        return proc.returncode, proc.stdout, proc.stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, "", str(exc)


def nvidia_smi():
    found = shutil.which("nvidia-smi")
    if found:
        return found
    fallback = "/usr/local/nvidia/bin/nvidia-smi"
    return fallback if os.access(fallback, os.X_OK) else None


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timings per figure (median, min, max)")
    parser.add_argument("--burn-seconds", type=float, default=5.0, help="GEMM burn-in per GPU")
    parser.add_argument("--gemm-n", type=int, default=8192)
    parser.add_argument("--gemm-tolerance", type=float, default=1e-2)
    parser.add_argument("--gemm-reference-fault", type=float, default=0.0,
                        help="moves every reference entry by this fraction of its scale: proves the check fails")
    parser.add_argument("--host-bytes", type=int, default=256 << 20)
    parser.add_argument("--device-bytes", type=int, default=2 << 30)
    parser.add_argument("--no-collective", action="store_true")
    parser.add_argument("--dcgm-level", type=int, default=1)
    parser.add_argument("--no-dcgm", action="store_true")
    parser.add_argument("--smoke-world", type=int, default=0,
                        help="also run the cross-GPU code with N ranks sharing the GPUs (gloo): not a measurement")
    return parser.parse_args(argv)


def measure(args):
    began = time.monotonic()
    smi = nvidia_smi()
    out = {"schema_version": SCHEMA_VERSION, "tool": "gpu_admit_measure.py",
           "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "host": platform.node(), "python": platform.python_version(), "repeat": args.repeat,
           "errors": []}
    try:
        import torch  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        out["errors"].append("torch does not import: %s" % exc)
        return out
    out.update(torch=torch.__version__, torch_cuda=torch.version.cuda,
               cuda_available=torch.cuda.is_available())
    world = torch.cuda.device_count() if torch.cuda.is_available() else 0
    out["world_size"] = world
    if world == 0:
        out["errors"].append("torch sees no CUDA device")
    opts = {"repeat": args.repeat, "host_bytes": args.host_bytes, "device_bytes": args.device_bytes,
            "gemm_n": args.gemm_n, "burn_seconds": args.burn_seconds, "gemm_tolerance": args.gemm_tolerance,
            "gemm_reference_fault": args.gemm_reference_fault}
    gpus = []
    for device in range(world):
        gpu = gpu_admit_device.measure_gpu(torch, device, opts)
        # read right after the GPU's own load: an idle GPU lowers its link speed
        gpu["pcie"] = gpu_admit_health.read_links(run, smi).get(
            device, {"why": "nvidia-smi did not report this GPU's link"})
        gpus.append(gpu)
    out["gpus"] = gpus
    if not args.no_collective:
        out["all_reduce"] = gpu_admit_collective.all_reduce(torch, world, args.repeat)
        out["peer"] = gpu_admit_collective.peer_copies(torch, world, args.repeat)
    if args.smoke_world > 1 and world:
        out["smoke"] = {"note": "plumbing smoke test, %d ranks on %d GPU(s), gloo: not a measurement of the bus"
                        % (args.smoke_world, world),
                        "all_reduce": gpu_admit_collective.all_reduce(torch, args.smoke_world, 1, 180, backend="gloo"),
                        "peer": gpu_admit_collective.peer_copies(torch, args.smoke_world, 1)}
    out["ecc"] = gpu_admit_health.read_ecc(run, smi)
    out["xid"] = gpu_admit_health.read_xid(run)
    out["dcgm"] = ({"available": False, "why": "skipped (--no-dcgm)"} if args.no_dcgm
                   else gpu_admit_health.read_dcgm(run, args.dcgm_level))
    out["wall_s"] = round(time.monotonic() - began, 1)
    return out


def main(argv=None):
    result = measure(parse_args(argv))
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

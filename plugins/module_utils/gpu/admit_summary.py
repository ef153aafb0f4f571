# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the admission keeps and shows: the key of its inputs, the compact summary (local fact,
verification report, sweep ordering) and the node exporter textfile.

Pure functions (tests/unit/test_gpu_admit_verdict.py). The key changes when the driver, the
CUDA version the driver supports, the GPUs and their slots, the GPU-pair topology, the IOMMU
mode, the ACS state or the ml_env generation changes: what the bus and the kernels depend on. The
PCIe link's current speed is left out (an idle GPU lowers it); its maximum is in.
"""

import hashlib
import json

from ansible_collections.sglang.deploy.plugins.module_utils.gpu.admit_verdict import all_reduce_at, gpu_figures, host_figures

GPU_KEYS = ("index", "name", "sm", "memory_mib", "bus_id", "pcie_gen_max", "pcie_width_max")
IMPLS = ("nccl", "symm_mem", "sglang_custom_all_reduce")


def admission_inputs(host_facts, ml_env_generation):
    """The inputs an admission is valid for (gpu_host_facts + the ml_env generation)."""
    facts = host_facts or {}
    return {
        "driver_version": facts.get("driver_version"),
        "cuda_driver_version": facts.get("cuda_driver_version"),
        "gpus": [{k: g.get(k) for k in GPU_KEYS} for g in facts.get("gpus") or []],
        "topology": (facts.get("interconnect") or {}).get("matrix") or {},
        "iommu_mode": (facts.get("iommu") or {}).get("mode"),
        "acs_state": (facts.get("acs") or {}).get("state"),
        "ml_env_generation": ml_env_generation or "",
    }


def admission_key(inputs):
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode("utf-8")).hexdigest()[:12]


def changed_inputs(old, new):
    """The input names whose value differs ("never admitted" when there is no old record)."""
    if not old:
        return ["never admitted"]
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


def _min(values):
    vals = [v for v in values if v is not None]
    return min(vals) if vals else None


def summarize(measured, verdict, small_bytes, large_bytes):
    """The compact figures: worst GPU per figure, the links, the cross-GPU figures, health."""
    gpus = measured.get("gpus") or []
    per_gpu = [gpu_figures(g) for g in gpus]
    links = sorted({"Gen%s x%s" % ((g.get("pcie") or {}).get("gen_current"), (g.get("pcie") or {}).get("width_current"))
                    for g in gpus if (g.get("pcie") or {}).get("gen_current")})
    host = host_figures(measured, small_bytes, large_bytes)
    ecc, xid, dcgm = measured.get("ecc") or {}, measured.get("xid") or {}, measured.get("dcgm") or {}
    out = {
        "admitted": verdict["admitted"],
        "measured_at": measured.get("started_at"),
        "wall_s": measured.get("wall_s"),
        "world_size": measured.get("world_size"),
        "gpu_names": sorted({g.get("name") for g in gpus if g.get("name")}),
        "links": links,
        "link_gbps": _min((g.get("pcie") or {}).get("theoretical_gbps") for g in gpus),
        "h2d_gbps_min": _min(f["h2d_gbps"] for f in per_gpu),
        "d2h_gbps_min": _min(f["d2h_gbps"] for f in per_gpu),
        "memory_gbps_min": _min(f["memory_gbps"] for f in per_gpu),
        "gemm_tflops_min": _min(f["gemm_tflops"] for f in per_gpu),
        "gemm_ok": all((g.get("gemm") or {}).get("ok") for g in gpus) if gpus else None,
        "p2p_gbps_min": host["p2p_gbps"],
        "allreduce_small_bytes": small_bytes,
        "allreduce_large_bytes": large_bytes,
        "allreduce_small_us": {i: all_reduce_at(measured, small_bytes, i)[0] for i in IMPLS
                               if all_reduce_at(measured, small_bytes, i)[0] is not None},
        "allreduce_busbw_gbps": host["allreduce_busbw_gbps"],
        "ecc": ("not readable" if not ecc.get("readable") else
                "uncorrectable %d" % sum(g.get("uncorrectable_volatile") or 0 for g in ecc.get("gpus") or [])),
        "xid": "not readable" if not xid.get("readable") else xid.get("count", 0),
        "dcgm": ("not available" if not dcgm.get("available") else "passed" if dcgm.get("passed") else "failed"),
        "refusals": len(verdict["refusals"]),
    }
    out["text"] = summary_text(out)
    return out


def _fmt(value, unit):
    return "-" if value is None else "%s %s" % (value, unit)


def summary_text(s):
    """One line: 'admitted: 1x NVIDIA H200 Gen5 x16 (63.0 GB/s), H2D 52.1 GB/s, ...'."""
    small = s.get("allreduce_small_us") or {}
    cross = ("all-reduce %d KiB %s, %d MiB busbw %s, P2P min %s" % (
        s["allreduce_small_bytes"] // 1024, _fmt(small.get("nccl"), "us"), s["allreduce_large_bytes"] >> 20,
        _fmt(s.get("allreduce_busbw_gbps"), "GB/s"), _fmt(s.get("p2p_gbps_min"), "GB/s"))
        if (s.get("world_size") or 0) > 1 else "cross-GPU not measured (world size 1)")
    return "%s: %sx %s %s (%s), H2D %s, D2H %s, memory %s, GEMM %s %s, %s; ECC %s, Xid %s, DCGM %s" % (
        "admitted" if s["admitted"] else "REFUSED", s.get("world_size"), "/".join(s.get("gpu_names") or ["?"]),
        "/".join(s.get("links") or ["link ?"]), _fmt(s.get("link_gbps"), "GB/s"), _fmt(s.get("h2d_gbps_min"), "GB/s"),
        _fmt(s.get("d2h_gbps_min"), "GB/s"), _fmt(s.get("memory_gbps_min"), "GB/s"),
        "ok" if s.get("gemm_ok") else "FAILED", _fmt(s.get("gemm_tflops_min"), "TFLOP/s"), cross,
        s.get("ecc"), s.get("xid"), s.get("dcgm"))


def _labels(**labels):
    return "{%s}" % ",".join('%s="%s"' % (k, str(v).replace("\\", "\\\\").replace('"', '\\"'))
                             for k, v in sorted(labels.items())) if labels else ""


# (metric, summary/figure name, scale to base units, help): Prometheus' base units, bytes and seconds
PER_GPU_METRICS = (
    ("gpu_admit_h2d_bytes_per_second", "h2d_gbps", 1e9, "host-to-device pinned copy"),
    ("gpu_admit_d2h_bytes_per_second", "d2h_gbps", 1e9, "device-to-host pinned copy"),
    ("gpu_admit_memory_copy_bytes_per_second", "memory_gbps", 1e9, "device memory copy, read + write"),
    ("gpu_admit_gemm_flop_per_second", "gemm_tflops", 1e12, "bf16 GEMM burn-in"),
)


def _num(value, scale):
    return "%.6g" % (value * scale)


def textfile(measured, summary, key, small_bytes):
    """node exporter textfile collector page (gpu_admit.prom): the admission's figures."""
    rows = [("gpu_admit_admitted", "1 when the host passed its last admission (roles/gpu_admit)",
             [({"key": key}, 1 if summary["admitted"] else 0)])]
    figures = [(gpu.get("index"), gpu_figures(gpu)) for gpu in measured.get("gpus") or []]
    for metric, name, scale, help_ in PER_GPU_METRICS:
        samples = [({"gpu": i}, _num(f[name], scale)) for i, f in figures if f[name] is not None]
        if samples:
            rows.append((metric, help_, samples))
    small = [({"impl": i, "bytes": small_bytes}, _num(v, 1e-6))
             for i, v in sorted((summary.get("allreduce_small_us") or {}).items())]
    if small:
        rows.append(("gpu_admit_allreduce_latency_seconds", "all-reduce latency at the small message size", small))
    for name, value, help_ in (("gpu_admit_p2p_min_bytes_per_second", summary.get("p2p_gbps_min"),
                                "slowest GPU pair's peer copy"),
                               ("gpu_admit_allreduce_busbw_bytes_per_second", summary.get("allreduce_busbw_gbps"),
                                "NCCL all-reduce bus bandwidth at the large message size")):
        if value is not None:
            rows.append((name, help_, [({}, _num(value, 1e9))]))
    rows.append(("gpu_admit_info", "the admission's context (value 1)", [(
        {"links": "/".join(summary.get("links") or []), "world_size": summary.get("world_size"),
         "measured_at": summary.get("measured_at"), "key": key}, 1)]))
    lines = []
    for name, help_, samples in rows:
        lines += ["# HELP %s %s" % (name, help_), "# TYPE %s gauge" % name]
        lines += ["%s%s %s" % (name, _labels(**labels), value) for labels, value in samples]
    return "\n".join(lines) + "\n"

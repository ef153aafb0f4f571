# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The admission verdict: a host's measured figures (files/gpu_admit_measure.py) against the
profile's expectations, each refusal with the figure, the expectation and the likely cause.

Pure functions, no Ansible and no I/O (tests/unit/test_gpu_admit_verdict.py; the module
plugins/modules/gpu_admit_record.py calls `judge`). Why each figure and each cause: docs/admission.md.

`expect` maps a figure name of FIGURES to {expect: number, tolerance: fraction}: a figure where
more is better is refused under expect x (1 - tolerance), a latency over expect x (1 + tolerance).
Without an expectation a figure is reported, not judged. Always judged: the GEMM reference check,
ECC state, the kernel log's Xid codes in `refuse_xids`, DCGM's diagnostic where it ran, a failed
measurement step, and H2D/D2H against `link_min_ratio` of what the negotiated link carries.
"""

# name: (unit, more is better, what it is)
FIGURES = {
    "h2d_gbps": ("GB/s", True, "host-to-device copy, pinned"),
    "d2h_gbps": ("GB/s", True, "device-to-host copy, pinned"),
    "memory_gbps": ("GB/s", True, "device memory copy, read + write"),
    "gemm_tflops": ("TFLOP/s", True, "bf16 GEMM burn-in"),
    "p2p_gbps": ("GB/s", True, "peer-to-peer copy, slowest GPU pair"),
    "allreduce_small_us": ("us", False, "NCCL all-reduce latency, small message"),
    "allreduce_busbw_gbps": ("GB/s", True, "NCCL all-reduce bus bandwidth, large message"),
}
PER_GPU = ("h2d_gbps", "d2h_gbps", "memory_gbps", "gemm_tflops")


def _median(node):
    return (node or {}).get("median") if isinstance(node, dict) else None


def gpu_figures(gpu):
    """{figure: median} of one GPU's measurement."""
    copies = gpu.get("host_copies") or {}
    return {"h2d_gbps": _median(copies.get("h2d_gbps")), "d2h_gbps": _median(copies.get("d2h_gbps")),
            "memory_gbps": _median((gpu.get("device_copy") or {}).get("gbps")),
            "gemm_tflops": _median((gpu.get("gemm") or {}).get("tflops"))}


def all_reduce_at(measured, nbytes, impl="nccl"):
    """(latency_us, busbw_gbps) medians of one implementation at one size, or (None, None)."""
    node = (measured.get("all_reduce") or {}).get(impl) or {}
    for row in node.get("sizes") or []:
        if row.get("bytes") == nbytes:
            return _median(row.get("latency_us")), _median(row.get("busbw_gbps"))
    return None, None


def host_figures(measured, small_bytes, large_bytes):
    """{figure: value} of the figures across GPUs (None where not measured)."""
    peer = measured.get("peer") or {}
    return {"p2p_gbps": peer.get("min_gbps") if peer.get("measured") else None,
            "allreduce_small_us": all_reduce_at(measured, small_bytes)[0],
            "allreduce_busbw_gbps": all_reduce_at(measured, large_bytes)[1]}


def limit_of(name, spec):
    """The refusal limit of a figure's {expect, tolerance}, or None when not judged."""
    if not isinstance(spec, dict) or spec.get("expect") in (None, ""):
        return None
    expect, tol = float(spec["expect"]), float(spec.get("tolerance") or 0)
    return round(expect * (1 - tol) if FIGURES[name][1] else expect * (1 + tol), 3)


def _link_text(pcie):
    return "Gen%s x%s" % (pcie.get("gen_current"), pcie.get("width_current"))


def cause(name, gpu, measured, host_facts):
    """The likely cause of a figure out of tolerance, in words an operator acts on."""
    facts = host_facts or {}
    iommu = (facts.get("iommu") or {}).get("mode")
    acs = facts.get("acs") or {}
    pcie = (gpu or {}).get("pcie") or {}
    if name in ("h2d_gbps", "d2h_gbps"):
        if pcie.get("gen_current") and (pcie.get("gen_current") < (pcie.get("gen_max") or 0)
                                        or (pcie.get("width_current") or 0) < (pcie.get("width_max") or 0)):
            return ("link width/gen: the link runs at %s under load, below its Gen%s x%s (reseat the card, "
                    "check the riser, the slot and the BIOS link settings)"
                    % (_link_text(pcie), pcie.get("gen_max"), pcie.get("width_max")))
        if iommu == "translated":
            return "IOMMU: it translates GPU DMA (boot with iommu=pt, or off)"
        return "host side or a bad GPU/slot: compare with the host's other GPUs and its NUMA placement"
    if name in ("p2p_gbps", "allreduce_small_us", "allreduce_busbw_gbps"):
        peer = measured.get("peer") or {}
        if peer.get("measured") and not peer.get("all_peer_access"):
            return "no peer access between some GPUs (P2P not supported or disabled): traffic goes through host memory"
        if acs.get("redirecting"):
            return "ACS: bridges %s redirect peer requests to the root complex (disable ACS on them)" % ", ".join(
                acs["redirecting"])
        if iommu == "translated":
            return "IOMMU: it translates peer DMA (boot with iommu=pt, or off)"
        return ("ACS or IOMMU by its effect: peer traffic is far below the link (check `lspci -vvv` ACSCtl "
                "and the IOMMU mode), or a link trained narrow")
    if name == "memory_gbps":
        return "a bad GPU: memory clock, thermal or power throttling, or memory errors"
    return "a bad GPU, or a slower part than the profile describes"


def _refusal(name, value, spec, limit, gpu_index, why):
    unit = FIGURES[name][0]
    where = "GPU %s " % gpu_index if gpu_index is not None else ""
    return {"figure": name, "gpu": gpu_index, "measured": value, "expected": spec.get("expect"),
            "limit": limit, "unit": unit,
            "line": "%s%s %s %s, expected %s (refused %s %s): likely cause: %s" % (
                where, FIGURES[name][2], value, unit, spec.get("expect"),
                "under" if FIGURES[name][1] else "over", limit, why)}


def _judge_figure(name, value, spec, gpu, measured, host_facts, out):
    limit = limit_of(name, spec)
    if limit is None:
        return
    index = gpu.get("index") if gpu else None
    if value is None:
        out["not_measured"].append("%s%s: expected %s %s, not measured" % (
            "GPU %s " % index if gpu else "", FIGURES[name][2], spec.get("expect"), FIGURES[name][0]))
        return
    if (value < limit) if FIGURES[name][1] else (value > limit):
        out["refusals"].append(_refusal(name, value, spec, limit, index, cause(name, gpu, measured, host_facts)))


def _health(measured, refuse_xids, out):
    ecc = measured.get("ecc") or {}
    if not ecc.get("readable"):
        out["notes"].append("ECC and retired pages: not readable (%s)" % ecc.get("why"))
    for gpu in ecc.get("gpus") or []:
        bad = [k for k in ("uncorrectable_volatile", "pending_retirement", "remap_pending", "remap_failure")
               if gpu.get(k)]
        if bad:
            out["refusals"].append({"figure": "ecc", "gpu": gpu.get("bus_id"), "measured": {k: gpu[k] for k in bad},
                                    "line": "GPU %s ECC: %s: likely cause: a bad GPU (memory errors; a pending "
                                            "retirement or remap needs a GPU reset)" % (
                                                gpu.get("bus_id"), ", ".join("%s=%s" % (k, gpu[k]) for k in bad))})
    xid = measured.get("xid") or {}
    if not xid.get("readable"):
        out["notes"].append("kernel log Xid lines: not readable (%s)" % xid.get("why"))
    hits = [x for x in xid.get("lines") or [] if x.get("xid") in set(refuse_xids or [])]
    if hits:
        out["refusals"].append({"figure": "xid", "gpu": hits[-1].get("pci"), "measured": len(hits),
                                "line": "%d NVIDIA Xid line(s) of a refused code since boot, the last: %s: "
                                        "likely cause: a bad GPU or its firmware" % (len(hits), hits[-1]["line"])})
    dcgm = measured.get("dcgm") or {}
    if not dcgm.get("available"):
        out["notes"].append("DCGM diagnostics: not available (%s)" % dcgm.get("why"))
    elif not dcgm.get("passed"):
        out["refusals"].append({"figure": "dcgm", "gpu": None, "measured": dcgm.get("failed_tests"),
                                "line": "dcgmi diag -r %s failed (rc %s): %s" % (
                                    dcgm.get("level"), dcgm.get("rc"), "; ".join(dcgm.get("failed_tests") or [])[:300])})


def _gpu_checks(gpu, measured, host_facts, link_min_ratio, expect, out):
    index = gpu.get("index")
    for err in gpu.get("errors") or []:
        out["refusals"].append({"figure": "measurement", "gpu": index, "measured": err,
                                "line": "GPU %s measurement failed: %s" % (index, err)})
    gemm = gpu.get("gemm") or {}
    if gemm and not gemm.get("ok"):
        out["refusals"].append({
            "figure": "gemm", "gpu": index, "measured": gemm.get("max_normalised_error"),
            "line": "GPU %s bf16 GEMM disagrees with its reference (worst normalised error %s, tolerance %s, %s "
                    "repeat mismatches): likely cause: a bad GPU" % (
                        index, gemm.get("max_normalised_error"), gemm.get("tolerance"), gemm.get("repeat_mismatches"))})
    figures = gpu_figures(gpu)
    pcie = gpu.get("pcie") or {}
    link = pcie.get("max_theoretical_gbps")
    for name in ("h2d_gbps", "d2h_gbps"):
        if link and link_min_ratio and figures[name] is not None and figures[name] < link * float(link_min_ratio):
            out["refusals"].append(_refusal(
                name, figures[name], {"expect": "%s of Gen%s x%s's %s GB/s" % (
                    link_min_ratio, pcie.get("gen_max"), pcie.get("width_max"), link)},
                round(link * float(link_min_ratio), 1), index, cause(name, gpu, measured, host_facts)))
    for name in PER_GPU:
        _judge_figure(name, figures[name], expect.get(name) or {}, gpu, measured, host_facts, out)


def judge(measured, expect=None, host_facts=None, link_min_ratio=0.6, refuse_xids=(),
          small_bytes=32768, large_bytes=268435456):
    """{"admitted", "refusals", "notes", "not_measured", "lines"} of one host's measurement."""
    expect = expect or {}
    out = {"refusals": [], "notes": [], "not_measured": []}
    for err in measured.get("errors") or []:
        out["refusals"].append({"figure": "measurement", "gpu": None, "measured": err,
                                "line": "the measurement failed: %s" % err})
    if not measured.get("gpus") and not measured.get("errors"):
        out["refusals"].append({"figure": "measurement", "gpu": None, "measured": None,
                                "line": "the measurement reported no GPU"})
    for gpu in measured.get("gpus") or []:
        _gpu_checks(gpu, measured, host_facts, link_min_ratio, expect, out)
    reduce = measured.get("all_reduce") or {}
    if (measured.get("world_size") or 0) < 2:
        out["notes"].append(reduce.get("why") or "world size 1 is not a measurement of the bus: cross-GPU "
                            "figures could not be measured")
    else:
        if reduce.get("error"):
            out["refusals"].append({"figure": "all_reduce", "gpu": None, "measured": reduce["error"],
                                    "line": "the all-reduce failed: %s" % reduce["error"]})
        elif reduce.get("measured") and not reduce.get("correct", True):
            out["refusals"].append({"figure": "all_reduce", "gpu": None, "measured": False,
                                    "line": "the all-reduce returned a wrong sum: likely cause: P2P path corrupting data"})
        for name, value in host_figures(measured, small_bytes, large_bytes).items():
            _judge_figure(name, value, expect.get(name) or {}, None, measured, host_facts, out)
    _health(measured, refuse_xids, out)
    out["admitted"] = not out["refusals"]
    out["lines"] = [r["line"] for r in out["refusals"]]
    return out

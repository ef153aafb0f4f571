"""One GPU's figures for the admission: host<->device copies over PCIe with pinned memory, a
large device-to-device copy (memory bandwidth) and a GEMM burn-in checked against a reference
computed another way.

The GEMM check: C = A @ B in bf16 on the GPU (cuBLAS, fp32 accumulation), with A and B drawn
from a seeded generator. A few entries of C are recomputed on the CPU in plain Python floats
(float64 sums of the same bf16 values, no torch arithmetic), and each difference is divided by
sum_k |A[i,k] B[k,j]|, the size the rounding can reach. bf16 output rounding is 2^-8 of that at
most; `tolerance` (1e-2) leaves room for fp32 accumulation and no room for a wrong product.
Every burn-in iteration must also equal the first bit for bit (same inputs, same kernel).
`check_products` is the pure comparison; `reference_fault` moves every reference entry by that
fraction of its scale, so that a run can prove the check fails (--gemm-reference-fault 0.05;
tests/unit/test_gpu_admit_health.py, and the device run).
"""

import statistics
import time


def stats(values, digits=2, keep_runs=True):
    """median, min, max (and the runs, or their number) of a figure's timings."""
    vals = [v for v in values if v is not None]
    if not vals:
        return {"median": None, "min": None, "max": None, "runs": []}
    out = {"median": round(statistics.median(vals), digits), "min": round(min(vals), digits),
           "max": round(max(vals), digits)}
    if keep_runs:
        out["runs"] = [round(v, digits) for v in vals]
    else:
        out["n"] = len(vals)
    return out


def check_products(got, reference, scale, tolerance):
    """(ok, worst normalised error, index of the worst entry) of got vs reference."""
    worst, where = 0.0, None
    for i, (g, r, s) in enumerate(zip(got, reference, scale)):
        err = abs(g - r) / s if s else abs(g - r)
        if err != err or err > worst:  # NaN counts as the worst
            worst, where = (float("inf") if err != err else err), i
    return worst <= tolerance, worst, where


def _timed(torch, fn, iters, device):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.device(device):
        fn()
        torch.cuda.synchronize(device)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize(device)
    return start.elapsed_time(end) / 1000.0 / iters


def host_copies(torch, device, nbytes, repeat, iters=5):
    """H2D and D2H GB/s (1e9) with pinned host memory, `repeat` timings each."""
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    host.fill_(1)
    dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
    h2d = [nbytes / 1e9 / _timed(torch, lambda: dev.copy_(host, non_blocking=True), iters, device)
           for _ in range(repeat)]
    d2h = [nbytes / 1e9 / _timed(torch, lambda: host.copy_(dev, non_blocking=True), iters, device)
           for _ in range(repeat)]
    del host, dev
    return {"bytes": nbytes, "h2d_gbps": stats(h2d), "d2h_gbps": stats(d2h)}


def device_copy(torch, device, nbytes, repeat, iters=10):
    """Device memory bandwidth: one large copy, read + write counted (GB/s, 1e9)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    src.fill_(3)
    dst = torch.empty_like(src)
    runs = [2 * nbytes / 1e9 / _timed(torch, lambda: dst.copy_(src), iters, device) for _ in range(repeat)]
    del src, dst
    return {"bytes": nbytes, "gbps": stats(runs, 1)}


def _pick(n, count):
    return sorted({(i * (n - 1)) // max(count - 1, 1) for i in range(count)})


def gemm_burn(torch, device, n=8192, seconds=5.0, tolerance=1e-2, reference_fault=0.0, samples=8):
    """bf16 GEMM burn-in for about `seconds`: TFLOP/s, bitwise repeatability and the reference check."""
    gen = torch.Generator(device="cpu").manual_seed(1234 + device)
    a_cpu = torch.randn(n, n, generator=gen).to(torch.bfloat16)
    b_cpu = torch.randn(n, n, generator=gen).to(torch.bfloat16)
    a, b = a_cpu.to(device), b_cpu.to(device)
    with torch.cuda.device(device):
        first = a @ b
        torch.cuda.synchronize(device)
        iters, mismatches, runs = 0, 0, []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline or iters < 3:
            t = _timed(torch, lambda: torch.matmul(a, b), 5, device)
            runs.append(2.0 * n ** 3 / t / 1e12)
            again = a @ b
            iters += 6
            if not torch.equal(again, first):
                mismatches += 1
    rows, cols = _pick(n, samples), _pick(n, samples)
    a_rows = [[float(x) for x in a_cpu[i].float().tolist()] for i in rows]
    b_cols = [[float(x) for x in b_cpu[:, j].float().tolist()] for j in cols]
    got, reference, scale = [], [], []
    c_host = first.float().cpu()
    for ri, i in enumerate(rows):
        for ci, j in enumerate(cols):
            pairs = [x * y for x, y in zip(a_rows[ri], b_cols[ci])]
            size = sum(abs(p) for p in pairs)
            got.append(float(c_host[i, j]))
            reference.append(sum(pairs) + reference_fault * size)
            scale.append(size)
    ok, worst, where = check_products(got, reference, scale, tolerance)
    del a, b, first
    return {"dtype": "bfloat16", "n": n, "iterations": iters, "seconds": seconds, "tflops": stats(runs, 1, keep_runs=False),
            "repeat_mismatches": mismatches, "checked_entries": len(got), "tolerance": tolerance,
            "max_normalised_error": round(worst, 6) if worst != float("inf") else "inf",
            "worst_entry": None if where is None else [rows[where // len(cols)], cols[where % len(cols)]],
            "reference": "float64 sums in plain Python of %d x %d entries" % (len(rows), len(cols)),
            "reference_fault": reference_fault,
            "ok": ok and mismatches == 0}


def measure_gpu(torch, device, opts):
    """Every per-GPU figure of one device; errors are reported, not raised."""
    props = torch.cuda.get_device_properties(device)
    out = {"index": device, "name": props.name, "sm": "%d.%d" % (props.major, props.minor),
           "memory_mib": props.total_memory // (1 << 20), "errors": []}
    free = torch.cuda.mem_get_info(device)[0]
    steps = (("host_copies", lambda: host_copies(torch, device, opts["host_bytes"], opts["repeat"])),
             ("device_copy", lambda: device_copy(torch, device, min(opts["device_bytes"], free // 4), opts["repeat"])),
             ("gemm", lambda: gemm_burn(torch, device, opts["gemm_n"], opts["burn_seconds"],
                                        opts["gemm_tolerance"], opts["gemm_reference_fault"])))
    for name, step in steps:
        began = time.monotonic()
        try:
            out[name] = step()
            out[name]["wall_s"] = round(time.monotonic() - began, 2)
        except Exception as exc:  # noqa: BLE001 - a failing step is a finding of the admission
            out["errors"].append("%s: %s: %s" % (name, type(exc).__name__, str(exc)[:300]))
        torch.cuda.empty_cache()
    return out

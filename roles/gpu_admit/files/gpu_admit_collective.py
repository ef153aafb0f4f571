"""Figures across the GPUs of one host: all-reduce latency and bus bandwidth through
torch.distributed with NCCL (one process per GPU), the alternatives where they import (torch
symmetric memory, SGLang's custom all-reduce), and a peer-to-peer copy between every ordered
pair of GPUs.

Bus bandwidth is NCCL's own definition for all-reduce (nccl-tests' PERFORMANCE.md):
busbw = bytes / time x 2 (n - 1) / n, comparable across world sizes. A P2P copy far below what
the link carries while peer access is reported is how ACS or an IOMMU that routes peer traffic
through the root complex shows itself (NCCL's troubleshooting guide, "PCI Access Control
Services"). With one GPU nothing here is a measurement of the bus; it says so.
"""

import json
import os
import socket
import tempfile
import time
import traceback

from gpu_admit_device import stats

SIZES = (4 << 10, 32 << 10, 256 << 10, 2 << 20, 16 << 20, 64 << 20, 256 << 20)
SMALL_MAX = 256 << 10  # the alternatives are measured at the small sizes they exist for
ONE_GPU = ("world size 1 is not a measurement of the bus: one GPU has no peer, so the all-reduce "
           "and peer-to-peer figures could not be measured")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _time_op(torch, fn, device, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize(device)
    return start.elapsed_time(end) * 1000.0 / iters  # microseconds


def _series(torch, dist, fn_for, world, device, repeat, sizes):
    out = []
    for nbytes in sizes:
        fn = fn_for(nbytes)
        iters = 50 if nbytes <= (1 << 20) else 10
        lat = []
        for _ in range(repeat):
            dist.barrier()
            lat.append(_time_op(torch, fn, device, iters))
        busbw = [nbytes / (u / 1e6) / 1e9 * 2 * (world - 1) / world for u in lat]
        out.append({"bytes": nbytes, "latency_us": stats(lat, 1), "busbw_gbps": stats(busbw)})
    return out


def _symm_mem(torch, dist, world, device, repeat):
    try:
        import torch.distributed._symmetric_memory as symm_mem  # pylint: disable=import-outside-toplevel
        group = dist.group.WORLD
        buf = symm_mem.empty(SMALL_MAX // 2, dtype=torch.bfloat16, device="cuda:%d" % device)
        symm_mem.rendezvous(buf, group.group_name)

        def fn_for(nbytes):
            view = buf[: nbytes // 2]
            return lambda: torch.ops.symm_mem.one_shot_all_reduce(view, "sum", group.group_name)
        return {"available": True, "op": "torch.ops.symm_mem.one_shot_all_reduce",
                "sizes": _series(torch, dist, fn_for, world, device, repeat,
                                 [s for s in SIZES if s <= SMALL_MAX])}
    except Exception as exc:  # noqa: BLE001 - not available is a finding
        return {"available": False, "why": "%s: %s" % (type(exc).__name__, str(exc)[:200])}


def _sglang_custom(torch, dist, world, device, repeat):
    try:
        from sglang.srt.distributed.device_communicators.custom_all_reduce import (  # pylint: disable=import-outside-toplevel
            CustomAllreduce)
        cpu_group = dist.new_group(backend="gloo")
        comm = CustomAllreduce(group=cpu_group, device=torch.device("cuda", device), max_size=SMALL_MAX * 2)
        if getattr(comm, "disabled", False):
            return {"available": False, "why": "SGLang's CustomAllreduce disabled itself on this topology"}

        def fn_for(nbytes):
            inp = torch.ones(nbytes // 2, dtype=torch.bfloat16, device=device)
            return lambda: comm.custom_all_reduce(inp)
        return {"available": True, "op": "sglang CustomAllreduce.custom_all_reduce",
                "sizes": _series(torch, dist, fn_for, world, device, repeat,
                                 [s for s in SIZES if s <= SMALL_MAX])}
    except Exception as exc:  # noqa: BLE001 - not available is a finding
        return {"available": False, "why": "%s: %s" % (type(exc).__name__, str(exc)[:200])}


def _worker(rank, world, port, repeat, out_path, backend="nccl"):
    import torch  # pylint: disable=import-outside-toplevel
    import torch.distributed as dist  # pylint: disable=import-outside-toplevel
    device = rank % torch.cuda.device_count()  # one rank per GPU; the smoke test shares them
    torch.cuda.set_device(device)
    result = {}
    try:
        dist.init_process_group(backend, init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world,
                                **({"device_id": torch.device("cuda", device)} if backend == "nccl" else {}))
        check = torch.full((1024,), float(rank + 1), device=device)
        dist.all_reduce(check)
        want = world * (world + 1) / 2
        result["correct"] = bool(torch.all(check == want).item())

        def fn_for(nbytes):
            tensor = torch.ones(nbytes // 2, dtype=torch.bfloat16, device=device)
            return lambda: dist.all_reduce(tensor)
        result["nccl"] = {"sizes": _series(torch, dist, fn_for, world, device, repeat, SIZES),
                          "backend": backend, "version": ".".join(str(v) for v in torch.cuda.nccl.version())}
        result["symm_mem"] = _symm_mem(torch, dist, world, device, repeat)
        result["sglang_custom_all_reduce"] = _sglang_custom(torch, dist, world, device, repeat)
        dist.barrier()
        dist.destroy_process_group()
    except Exception as exc:  # noqa: BLE001 - a rank's failure is reported by rank 0's caller, not raised in a child
        result["error"] = "rank %d: %s: %s" % (rank, type(exc).__name__, str(exc)[:300])
        result["traceback"] = traceback.format_exc().splitlines()[-6:]
    if rank == 0 or "error" in result:
        with open("%s.%d" % (out_path, rank), "w", encoding="utf-8") as handle:
            json.dump(result, handle)


def all_reduce(torch, world, repeat, timeout_s=600, backend="nccl"):
    """All-reduce figures, one process per GPU; {"measured": False, "why": ...} with one GPU.
    backend "gloo" with more ranks than GPUs is the plumbing's smoke test, not a measurement."""
    if world < 2:
        return {"measured": False, "world_size": world, "why": ONE_GPU}
    import torch.multiprocessing as mp  # pylint: disable=import-outside-toplevel
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rank")
        ctx = mp.start_processes(_worker, args=(world, _free_port(), repeat, path, backend), nprocs=world,
                                 join=False, start_method="spawn")
        deadline = time.monotonic() + timeout_s
        while not ctx.join(timeout=5):
            if time.monotonic() > deadline:
                for proc in ctx.processes:
                    proc.kill()
                return {"measured": False, "world_size": world, "error": "timed out after %d s" % timeout_s}
        results = {}
        for name in sorted(os.listdir(tmp)):
            with open(os.path.join(tmp, name), encoding="utf-8") as handle:
                results[int(name.rsplit(".", 1)[1])] = json.load(handle)
    errors = [r["error"] for r in results.values() if r.get("error")]
    out = dict(results.get(0, {}), measured=not errors and 0 in results, world_size=world,
               wall_s=round(time.monotonic() - began, 1))
    if errors:
        out["error"] = "; ".join(errors)
    return out


def peer_copies(torch, world, repeat, nbytes=64 << 20, iters=5):
    """Every ordered GPU pair: can_device_access_peer and a timed copy (GB/s, 1e9). More ranks
    than GPUs (the smoke test) share them: rank r is GPU r % count."""
    if world < 2:
        return {"measured": False, "world_size": world, "why": ONE_GPU}
    count = torch.cuda.device_count()
    bufs = {r: torch.empty(nbytes, dtype=torch.uint8, device=r % count) for r in range(world)}
    pairs = []
    for src_rank in range(world):
        for dst_rank in range(world):
            if src_rank == dst_rank:
                continue
            src, dst = src_rank % count, dst_rank % count
            runs = []
            for _ in range(repeat):
                with torch.cuda.device(src):
                    bufs[dst_rank].copy_(bufs[src_rank])
                    torch.cuda.synchronize(src)
                    torch.cuda.synchronize(dst)
                    began = time.perf_counter()
                    for _ in range(iters):
                        bufs[dst_rank].copy_(bufs[src_rank], non_blocking=True)
                    torch.cuda.synchronize(src)
                    torch.cuda.synchronize(dst)
                    runs.append(nbytes * iters / (time.perf_counter() - began) / 1e9)
            pairs.append({"src": src, "dst": dst,
                          "can_access_peer": src == dst or torch.cuda.can_device_access_peer(src, dst),
                          "gbps": stats(runs)})
    medians = [p["gbps"]["median"] for p in pairs]
    return {"measured": True, "world_size": world, "bytes": nbytes, "pairs": pairs,
            "min_gbps": min(medians), "median_gbps": round(sorted(medians)[len(medians) // 2], 2),
            "all_peer_access": all(p["can_access_peer"] for p in pairs)}

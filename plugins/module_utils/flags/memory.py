"""Whether one pipeline/tensor-parallel group can hold the model: the rule
``group-too-small-for-model`` (``applies.weights_exceed_memory``).

Each GPU of a ``tp * pp`` group holds ``model weight bytes / (tp * pp)`` (dp replicas each hold
a whole copy on GPUs of their own; attention DP runs inside tp). SGLang gives weights plus the KV
cache and Mamba state pools ``mem_fraction_static`` of the GPU (its definition:
``srt/arg_groups/memory_hook.py``, ``handle_gpu_memory_settings``, SGLang 0.5.23). The check asks
that the weights leave at least ``min_kv_cache_gib`` of that for the pools.

``--mem-fraction-static`` when given; else the largest fraction SGLang 0.5.23 picks for the GPU:
on a GPU over 60 GiB the reserve is at least 10 GiB (``reserved_mem = max(reserved_mem, 10 * 1024)``),
so ``(memory - 10 GiB) / memory`` (0.895 on a 97887 MiB RTX PRO 6000 Blackwell); on a smaller GPU
its smallest reserve ``512 + 2048 * 1.5 + tp * pp / 8 * 1024`` MiB. The resolver's own reserve
(activations, CUDA graphs, a VLM's encoder) is larger, never smaller: what this refuses cannot
load; what it accepts may still need a lower fraction on the host.

The inputs (``memory`` of ``sglang_flags_check``): ``gpu_memory_mib`` (the smallest GPU of the
host), ``model_weight_bytes`` (the profile's stated figure; 0 or "" = not stated: the rule does
not judge), ``min_kv_cache_gib``.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.sglang.deploy.plugins.module_utils.flags import gpus as _gpus

MEM_FRACTION_FLAG = "mem-fraction-static"
GIB = 1024 ** 3
# SGLang 0.5.23 memory_hook.py: GPUs above 60 GiB reserve at least 10 GiB
_LARGE_GPU_MIB = 60 * 1024
_LARGE_GPU_RESERVE_MIB = 10 * 1024
DEFAULT_MIN_KV_CACHE_GIB = 4


def _number(value, name, kind=float):
    if value in (None, "", 0, "0"):
        return None
    try:
        number = kind(float(str(value).strip()))
    except ValueError as exc:
        raise AnsibleFilterError(f"{name}: {value!r} is not a number") from exc
    if number < 0:
        raise AnsibleFilterError(f"{name}: {value!r} is negative")
    return number or None


def inputs(memory) -> dict:
    """``memory`` checked: {gpu_memory_mib, model_weight_bytes, min_kv_cache_gib}, None where unknown."""
    memory = memory or {}
    if not isinstance(memory, dict):
        raise AnsibleFilterError("the memory inputs must be a mapping (gpu_memory_mib, model_weight_bytes)")
    kv = _number(memory.get("min_kv_cache_gib"), "sglang_flags_min_kv_cache_gib")
    return {
        "gpu_memory_mib": _number(memory.get("gpu_memory_mib"), "sglang_flags_gpu_memory_mib", int),
        "model_weight_bytes": _number(memory.get("model_weight_bytes"), "sglang_flags_model_weight_bytes", int),
        "min_kv_cache_gib": DEFAULT_MIN_KV_CACHE_GIB if kv is None else kv,
    }


def mem_fraction(args: dict, gpu_memory_mib: int) -> tuple[float, str]:
    """(fraction, where it comes from)."""
    given = args.get(MEM_FRACTION_FLAG)
    if given not in (None, True):
        try:
            return float(str(given)), f"--{MEM_FRACTION_FLAG} {given}"
        except ValueError as exc:
            raise AnsibleFilterError(
                f"sglang_server_args['{MEM_FRACTION_FLAG}'] = {given!r} is not a number") from exc
    lay = _gpus.layout(args)
    if gpu_memory_mib > _LARGE_GPU_MIB:
        reserve = _LARGE_GPU_RESERVE_MIB
    else:
        reserve = 512 + 2048 * 1.5 + lay["tp"] * lay["pp"] / 8 * 1024
    fraction = round((gpu_memory_mib - reserve) / gpu_memory_mib, 3)
    return fraction, f"mem-fraction-static unset: SGLang 0.5.23's largest default {fraction}"


def judge(args: dict, memory) -> tuple[str, dict] | None:
    """None when not judged (no weight figure, or one GPU's group); else (verdict, figures):
    verdict ``exceeds``, ``fits`` or ``unknown-gpu-memory``; figures fill the rule's message."""
    known = inputs(memory)
    weight = known["model_weight_bytes"]
    if weight is None:
        return None
    lay = _gpus.layout(args)
    group = lay["tp"] * lay["pp"]
    per_gpu = weight / group
    figures = {
        "model_weight_gib": f"{weight / GIB:.1f}",
        "group": (f"{_gpus.flag_name(args, _gpus.TP_FLAGS)} {lay['tp']} x "
                  f"{_gpus.flag_name(args, _gpus.PP_FLAGS)} {lay['pp']} = {group} GPUs"),
        "weights_per_gpu_gib": f"{per_gpu / GIB:.1f}",
        "min_kv_cache_gib": f"{known['min_kv_cache_gib']:g}",
        # the smallest group that leaves the KV reserve, filled in below when the memory is known
        "gpu_memory": "unknown", "usable_gib": "unknown", "mem_fraction": "unknown", "group_needed": "?",
    }
    mib = known["gpu_memory_mib"]
    if mib is None:
        return "unknown-gpu-memory", figures
    fraction, why = mem_fraction(args, mib)
    usable = mib * 1024 * 1024 * fraction
    room = usable - known["min_kv_cache_gib"] * GIB
    needed = next((n for n in (1, 2, 4, 8, 16, 32, 64) if room > 0 and weight / n <= room), None)
    figures.update(gpu_memory=f"{mib} MiB ({mib / 1024:.1f} GiB)", usable_gib=f"{usable / GIB:.1f}",
                   mem_fraction=why, group_needed=str(needed or "more than 64"))
    return ("exceeds" if per_gpu > room else "fits"), figures

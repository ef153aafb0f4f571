"""The parallel layout of a flag set, and how many GPUs one host must hold for it.

SGLang 0.5.23 counts a launch's GPUs as ``dp_size * tp_size * pp_size``
(``srt/server_args.py``, ``compute_world_size``: "Attention DP runs inside the TP group, so it
adds no GPUs"), spread over ``--nnodes`` (``tp * pp`` must divide by it:
``srt/arg_groups/validation_hook.py``, ``check_server_args``). The deprecated
``--dp-size N --enable-dp-attention`` is read as ``--attn-dp-size N`` with ``dp_size`` 1
(``srt/arg_groups/parallel_hook.py``, ``handle_deprecated_dp_attention``): then dp does not
multiply tp.

The rule ``tp-exceeds-gpu-count`` (``applies.gpus_exceed_count``) compares ``gpus_needed`` with
the GPUs the host declares; sglang_flags_conditions.py and sglang_flags_rules.py import this file.
The flags are read normalised (sglang_flags.py): full names, ``true`` for a bare switch.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

TP_FLAGS = ("tp", "tp-size", "tensor-parallel-size")
PP_FLAGS = ("pp", "pp-size", "pipeline-parallel-size")
DP_FLAGS = ("dp", "dp-size", "data-parallel-size")
ATTN_DP_FLAGS = ("attn-dp-size", "attention-data-parallel-size")
DP_ATTENTION_FLAG = "enable-dp-attention"
NNODES_FLAGS = ("nnodes",)


def _int_flag(args: dict, names, default: int) -> int:
    for name in names:
        if name in args and args[name] is not True:
            try:
                return int(str(args[name]))
            except ValueError as exc:
                raise AnsibleFilterError(
                    f"sglang_server_args['{name}'] = {args[name]!r} is not an integer"
                ) from exc
    return default


# the spelling a message names when the flag set leaves the flag to its default
_CANONICAL = {TP_FLAGS: "tp-size", PP_FLAGS: "pp-size", DP_FLAGS: "dp-size", ATTN_DP_FLAGS: "attn-dp-size",
              NNODES_FLAGS: "nnodes"}


def flag_name(args: dict, names) -> str:
    """The spelling of one of ``names`` the flag set uses, else the canonical one (``tp-size``)."""
    return next((n for n in names if n in args), _CANONICAL[names])


def layout(args: dict) -> dict:
    """The layout SGLang 0.5.23 resolves: ``tp``, ``pp``, ``dp`` (replicas), ``attn_dp`` (attention
    DP groups inside tp), ``nnodes``, ``dp_attention`` (the deprecated switch was given)."""
    tp = _int_flag(args, TP_FLAGS, 1)
    pp = _int_flag(args, PP_FLAGS, 1)
    dp = _int_flag(args, DP_FLAGS, 1)
    attn_dp = _int_flag(args, ATTN_DP_FLAGS, 1)
    dp_attention = args.get(DP_ATTENTION_FLAG) not in (None, False, "false", "False")
    if dp_attention and attn_dp == 1:  # handle_deprecated_dp_attention: dp moves to attn_dp
        attn_dp, dp = dp, 1
    nnodes = max(_int_flag(args, NNODES_FLAGS, 1), 1)
    return {"tp": tp, "pp": pp, "dp": dp, "attn_dp": attn_dp, "nnodes": nnodes,
            "dp_attention": dp_attention}


def gpus_needed(args: dict) -> int:
    """GPUs one host must hold for this flag set: dp * tp * pp / nnodes (rounded up)."""
    lay = layout(args)
    return -(-(lay["dp"] * lay["tp"] * lay["pp"]) // lay["nnodes"])


def layout_text(args: dict) -> str:
    """The figure as the messages write it: ``tp-size 4 x pp-size 1 x dp-size 4 = 16 GPUs``."""
    lay = layout(args)
    text = (f"{flag_name(args, TP_FLAGS)} {lay['tp']} x {flag_name(args, PP_FLAGS)} {lay['pp']} x "
            f"{flag_name(args, DP_FLAGS)} {lay['dp']}")
    if lay["attn_dp"] > 1:
        how = "enable-dp-attention" if lay["dp_attention"] else flag_name(args, ATTN_DP_FLAGS)
        text += f" (attention DP {lay['attn_dp']} by {how}, inside tp: no GPUs of its own)"
    if lay["nnodes"] > 1:
        text += f" / nnodes {lay['nnodes']}"
    return f"{text} = {gpus_needed(args)} GPUs"


class FilterModule:
    """Loaded by Ansible like every file here; no filter of its own (sglang_flags_rules.py
    uses it)."""

    def filters(self):
        return {}

# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parallel layout of an SGLang flag set, and how many GPUs one host must hold for it.

The one owner of that count: the offline rule ``tp-exceeds-gpu-count`` (through
plugins/module_utils/flags/gpus.py) and the on-host rule ``host-tp-exceeds-gpu-count``
(roles/sglang_flags/files/sglang_preflight.py, which receives this file's text from
roles/sglang_flags/tasks/host_validate.yml and runs it in the server's interpreter) both call
``gpus_needed`` and ``layout_text``. So it imports the standard library only.

SGLang 0.5.23 counts a launch's GPUs as ``dp_size * tp_size * pp_size``
(``srt/server_args.py``, ``compute_world_size``: "Attention DP runs inside the TP group, so it
adds no GPUs"), spread over ``--nnodes`` (``tp * pp`` must divide by it:
``srt/arg_groups/validation_hook.py``, ``check_server_args``). The deprecated
``--dp-size N --enable-dp-attention`` is read as ``--attn-dp-size N`` with ``dp_size`` 1
(``srt/arg_groups/parallel_hook.py``, ``handle_deprecated_dp_attention``): then dp does not
multiply tp. The flags are read normalised (full names, ``true`` for a bare switch).
"""

TP_FLAGS = ("tp", "tp-size", "tensor-parallel-size")
PP_FLAGS = ("pp", "pp-size", "pipeline-parallel-size")
DP_FLAGS = ("dp", "dp-size", "data-parallel-size")
ATTN_DP_FLAGS = ("attn-dp-size", "attention-data-parallel-size")
DP_ATTENTION_FLAG = "enable-dp-attention"
NNODES_FLAGS = ("nnodes",)

# SGLang's ServerArgs attribute of each flag the layout reads (the argparse dest)
SERVER_ARGS_ATTRS = {"tp-size": "tp_size", "pp-size": "pp_size", "dp-size": "dp_size",
                     "attn-dp-size": "attn_dp_size", DP_ATTENTION_FLAG: "enable_dp_attention",
                     "nnodes": "nnodes"}


class LayoutError(ValueError):
    """A layout flag whose value is not an integer >= 1 (a size counts GPUs, ranks or nodes)."""


def _int_flag(args, names, default):
    for name in names:
        if name in args and args[name] is not True:
            try:
                value = int(str(args[name]))
            except ValueError as exc:
                raise LayoutError("sglang_server_args['%s'] = %r is not an integer"
                                  % (name, args[name])) from exc
            if value < 1:
                raise LayoutError("sglang_server_args['%s'] = %r is not an integer >= 1: --%s counts GPUs, "
                                  "ranks or nodes" % (name, args[name], name))
            return value
    return default


# the spelling a message names when the flag set leaves the flag to its default
_CANONICAL = {TP_FLAGS: "tp-size", PP_FLAGS: "pp-size", DP_FLAGS: "dp-size", ATTN_DP_FLAGS: "attn-dp-size",
              NNODES_FLAGS: "nnodes"}


def flag_name(args, names):
    """The spelling of one of ``names`` the flag set uses, else the canonical one (``tp-size``)."""
    return next((n for n in names if n in args), _CANONICAL[names])


def layout(args):
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


def gpus_needed(args):
    """GPUs one host must hold for this flag set: dp * tp * pp / nnodes (rounded up)."""
    lay = layout(args)
    return -(-(lay["dp"] * lay["tp"] * lay["pp"]) // lay["nnodes"])


def layout_text(args):
    """The figure as the messages write it: ``tp-size 4 x pp-size 1 x dp-size 4 = 16 GPUs``."""
    lay = layout(args)
    text = "%s %d x %s %d x %s %d" % (flag_name(args, TP_FLAGS), lay["tp"], flag_name(args, PP_FLAGS),
                                      lay["pp"], flag_name(args, DP_FLAGS), lay["dp"])
    if lay["attn_dp"] > 1:
        how = "enable-dp-attention" if lay["dp_attention"] else flag_name(args, ATTN_DP_FLAGS)
        text += " (attention DP %d by %s, inside tp: no GPUs of its own)" % (lay["attn_dp"], how)
    if lay["nnodes"] > 1:
        text += " / nnodes %d" % lay["nnodes"]
    return "%s = %d GPUs" % (text, gpus_needed(args))


def flags_from_server_args(server_args):
    """The layout flags of a parsed SGLang ServerArgs (attributes it lacks are left out), as
    normalised flags, for ``gpus_needed`` and ``layout_text``."""
    flags = {}
    for flag, attr in SERVER_ARGS_ATTRS.items():
        value = getattr(server_args, attr, None)
        if value is not None and value is not False:
            flags[flag] = value
    return flags

"""How many GPUs one host must hold for a flag set: tensor parallel size times pipeline
parallel size, divided over the nodes (``tp * pp / nnodes``, rounded up).

The rule ``tp-exceeds-gpu-count`` (``applies.gpus_exceed_count``) compares it with the GPUs
the host declares; sglang_flags_rules.py loads this file by path. The flags are read
normalised (sglang_flags.py): full names, ``true`` for a bare switch.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

TP_FLAGS = ("tp", "tp-size", "tensor-parallel-size")
PP_FLAGS = ("pp", "pp-size", "pipeline-parallel-size")
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


def gpus_needed(args: dict) -> int:
    """GPUs one host must hold for this flag set: tp * pp / nnodes (rounded up)."""
    tp = _int_flag(args, TP_FLAGS, 1)
    pp = _int_flag(args, PP_FLAGS, 1)
    nnodes = max(_int_flag(args, NNODES_FLAGS, 1), 1)
    return -(-(tp * pp) // nnodes)


class FilterModule:
    """Loaded by Ansible like every file here; no filter of its own (sglang_flags_rules.py
    uses it)."""

    def filters(self):
        return {}

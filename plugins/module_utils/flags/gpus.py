"""The parallel layout of a flag set and the GPUs one host must hold for it, for the filters.

The count is plugins/module_utils/flags/parallel_layout.py's (its one owner, which the on-host
check roles/sglang_flags/files/sglang_preflight.py runs too); this file turns its LayoutError
into AnsibleFilterError. The rule ``tp-exceeds-gpu-count`` (``applies.gpus_exceed_count``)
compares ``gpus_needed`` with the GPUs the host declares; flags/conditions.py,
flags/memory.py and flags/rules.py import this file.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.sglang.deploy.plugins.module_utils.flags import parallel_layout as _layout
from ansible_collections.sglang.deploy.plugins.module_utils.flags.parallel_layout import (  # noqa: F401
    ATTN_DP_FLAGS, DP_ATTENTION_FLAG, DP_FLAGS, NNODES_FLAGS, PP_FLAGS, TP_FLAGS, flag_name)


def _wrapped(function):
    def call(args: dict):
        try:
            return function(args)
        except _layout.LayoutError as exc:
            raise AnsibleFilterError(str(exc)) from exc
    call.__name__ = function.__name__
    call.__doc__ = function.__doc__
    return call


layout = _wrapped(_layout.layout)
gpus_needed = _wrapped(_layout.gpus_needed)
layout_text = _wrapped(_layout.layout_text)

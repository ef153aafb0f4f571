"""sglang_release's remaining filter (sglang_release_public_args) drops exactly what the release
state drops (module_utils/sglang_release_state.py public_args): no secret flag, in any spelling."""

import os
import sys

from ansible.module_utils.sglang_flags_model import SECRET_FLAGS
from ansible.module_utils.sglang_release_state import public_args

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "roles", "sglang_release", "filter_plugins"))
from sglang_release import sglang_release_public_args  # noqa: E402


def test_the_filter_and_the_release_state_keep_the_same_flags():
    flags = {"model-path": "/m", "port": 30000, "tp": 2}
    for flag in SECRET_FLAGS:
        for spelling in (flag, flag.replace("-", "_"), "--" + flag):
            flags[spelling] = "secret"
    assert sglang_release_public_args(flags) == public_args(flags) == {"model-path": "/m", "port": 30000, "tp": 2}
    assert sglang_release_public_args(None) == public_args(None) == {}

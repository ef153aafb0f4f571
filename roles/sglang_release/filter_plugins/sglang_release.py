"""The flags a release may record, without secret values.

The role itself no longer uses a filter: library/sglang_release.py records releases through
module_utils/sglang_release_state.py (public_args). This filter stays for
tests/unit/test_sglang_server_keys.py and docs/security.md, which name it."""

from __future__ import annotations

import importlib.util
import os


def _secret_flags():
    """SECRET_FLAGS of module_utils/sglang_flags_model.py (loaded by path on the controller)."""
    path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                                         os.pardir, "module_utils", "sglang_flags_model.py"))
    spec = importlib.util.spec_from_file_location("_sglang_release_flags_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SECRET_FLAGS


SECRET_FLAGS = _secret_flags()


def sglang_release_public_args(flags) -> dict:
    """The flag set without secret flags (api-key, ...): what the release record (a world-readable
    local fact) may hold. Names are compared folded (api_key is api-key)."""
    return {name: value for name, value in (flags or {}).items()
            if str(name).lstrip("-").replace("_", "-") not in SECRET_FLAGS}


class FilterModule:
    def filters(self):
        return {"sglang_release_public_args": sglang_release_public_args}

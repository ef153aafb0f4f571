"""Which ml_env generation a release runs: read from the release's environment file; the
flags a release records, without secret values."""

from __future__ import annotations

import base64
import importlib.util
import os
import re

# sglang_server writes the generation into the environment file as SGLANG_DEPLOY_ML_ENV="<name>"
_GENERATION = re.compile(r'^SGLANG_DEPLOY_ML_ENV="([^"]+)"\s*$', re.MULTILINE)


def sglang_release_env_generation(env_text) -> str:
    """The generation an environment file names, or '' when it names none."""
    match = _GENERATION.search(env_text or "")
    return match.group(1) if match else ""


def sglang_release_generations(slurped) -> dict:
    """{release id: generation} from the `results` of a slurp loop over `<id>/env` files (the
    loop item is the id). Releases whose file could not be read or that name no generation
    are left out."""
    found = {}
    for result in slurped or []:
        if not isinstance(result, dict) or "content" not in result:
            continue
        text = base64.b64decode(result["content"]).decode("utf-8", errors="replace")
        generation = sglang_release_env_generation(text)
        if generation:
            found[str(result.get("item", ""))] = generation
    return found


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
        return {
            "sglang_release_env_generation": sglang_release_env_generation,
            "sglang_release_generations": sglang_release_generations,
            "sglang_release_public_args": sglang_release_public_args,
        }

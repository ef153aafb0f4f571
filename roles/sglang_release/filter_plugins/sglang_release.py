"""Which ml_env generation a release runs: read from the release's environment file."""

from __future__ import annotations

import base64
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


class FilterModule:
    def filters(self):
        return {
            "sglang_release_env_generation": sglang_release_env_generation,
            "sglang_release_generations": sglang_release_generations,
        }

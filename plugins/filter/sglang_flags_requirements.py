"""What ml_env's package lists say (``ml_env_packages``, ``ml_env_packages_nodeps``): the SGLang
version they pin and the distributions they install.

defaults/main.yml derives ``sglang_flags_sglang_version`` and
``sglang_flags_installed_packages`` from them; the rules (sglang_flags_rules.py) compare
package names in the form ``canonical_package`` gives.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError
from packaging.version import InvalidVersion, Version

# a requirement string naming sglang itself (not sglang-router, sglang-kernel, ...)
_REQ_PIN_RE = re.compile(r"^\s*sglang\s*(?:\[[^\]]*\])?\s*===?\s*(?P<v>[^\s;,#]+)", re.I)
_REQ_WHEEL_RE = re.compile(r"(?:^|[/@\s])sglang-(?P<v>\d[^-/\s]*)-(?:py|cp)\d", re.I)
_REQ_NAME_RE = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)")


def sglang_flags_version_from_spec(requirements) -> str:
    """The SGLang version pinned in ml_env's package lists, or "" when none is exact.

    Understands ``sglang==0.5.23``, ``sglang[all]==0.5.23``, ``sglang===0.5.24.dev0+g1a2b``,
    and wheel file names or URLs (``.../sglang-0.5.23-py3-none-any.whl``). A range
    (``sglang>=0.5``) or a source checkout (``-e python``) gives "".
    """
    if requirements is None:
        return ""
    if isinstance(requirements, str):
        requirements = [requirements]
    if not isinstance(requirements, (list, tuple)):
        raise AnsibleFilterError(
            "sglang_flags_version_from_spec: expected a list of requirement strings, "
            f"got {type(requirements).__name__}"
        )
    for req in requirements:
        text = str(req)
        for regex in (_REQ_PIN_RE, _REQ_WHEEL_RE):
            m = regex.search(text)
            if m:
                candidate = m.group("v")
                if candidate.endswith(".whl"):
                    continue
                try:
                    Version(candidate)  # PEP 440, as sglang_flags_version.py orders it
                except InvalidVersion:
                    continue
                return candidate
    return ""


def canonical_package(name: str) -> str:
    """A distribution name in PEP 503 form: ``Flash_Infer.Python`` -> ``flash-infer-python``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def sglang_flags_package_names(requirements) -> list:
    """Distribution names (PEP 503-normalised) of a list of requirement strings."""
    if requirements is None:
        return []
    if isinstance(requirements, str):
        requirements = [requirements]
    names = []
    for req in requirements:
        text = str(req).strip()
        if not text or text.startswith(("-", "#")):
            continue
        wheel = re.search(r"(?:^|/)([A-Za-z0-9_.]+?)-\d[^/]*\.whl$", text)
        if wheel:
            names.append(canonical_package(wheel.group(1)))
            continue
        m = _REQ_NAME_RE.match(text)
        if m:
            names.append(canonical_package(m.group("name")))
    return sorted(set(names))


class FilterModule:
    def filters(self):
        return {
            "sglang_flags_version_from_spec": sglang_flags_version_from_spec,
            "sglang_flags_package_names": sglang_flags_package_names,
        }

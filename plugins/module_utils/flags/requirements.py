"""What ml_env's package lists say (``ml_env_packages``, ``ml_env_packages_nodeps``): the SGLang
version they pin and the distributions they install.

defaults/main.yml derives ``sglang_flags_sglang_version`` and
``sglang_flags_installed_packages`` from them; the rules (flags/rules.py) compare
package names in the form ``canonical_package`` gives. A requirement line is parsed here, by
``packaging`` (a dependency of ansible-core), for every reader on the controller: this file's
filters, flags/deploy.py, scripts/sglang_drift.py and scripts/flag_catalog.py.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

# pip's options after a requirement on the same line (``torch==2.9 --hash=sha256:...``)
_OPTIONS = re.compile(r"\s+--?[A-Za-z]")


def canonical_package(name: str) -> str:
    """A distribution name in PEP 503 form: ``Flash_Infer.Python`` -> ``flash-infer-python``."""
    return canonicalize_name(str(name))


def parse_requirement(line) -> Requirement | None:
    """The requirement a package-list line names, or None: an option line (``-e python``,
    ``--index-url``), a comment, a bare path or URL, or a line packaging cannot parse."""
    text = str(line).split(" #", 1)[0].strip()
    if not text or text.startswith(("-", "#")):
        return None
    try:
        return Requirement(_OPTIONS.split(text, 1)[0])
    except InvalidRequirement:
        return None


def exact_pin(requirement: Requirement | None) -> str:
    """The version an ``==X`` / ``===X`` specifier pins (a valid PEP 440 version, no wildcard),
    else ""."""
    for spec in requirement.specifier if requirement is not None else ():
        if spec.operator in ("==", "===") and not spec.version.endswith(".*"):
            try:
                Version(spec.version)  # as flags/version.py orders it
            except InvalidVersion:
                continue
            return spec.version
    return ""


def wheel_of(text) -> tuple[str, str] | None:
    """(canonical name, version) of a wheel file name, path or URL (its last path part), or None.
    A wheel's name is ``<name>-<version>-<tags>.whl`` with ``-`` escaped in both (the tags are
    not checked: ``sgl_kernel-0.4.10-cp311-abi3.whl`` names sgl-kernel 0.4.10)."""
    name = str(text).strip().rsplit("/", 1)[-1]
    parts = name[:-len(".whl")].split("-") if name.endswith(".whl") else []
    if len(parts) < 3:
        return None
    try:
        Version(parts[1])
    except InvalidVersion:
        return None
    return canonical_package(parts[0]), parts[1]


def _as_list(requirements, what) -> list:
    if requirements is None:
        return []
    if isinstance(requirements, str):
        return [requirements]
    if not isinstance(requirements, (list, tuple)):
        raise AnsibleFilterError(f"{what}: expected a list of requirement strings, got {type(requirements).__name__}")
    return list(requirements)


def sglang_flags_version_from_spec(requirements) -> str:
    """The SGLang version pinned in ml_env's package lists, or "" when none is exact.

    Understands ``sglang==0.5.23``, ``sglang[all]==0.5.23``, ``sglang===0.5.24.dev0+g1a2b``,
    and wheel file names or URLs (``.../sglang-0.5.23-py3-none-any.whl``). A range
    (``sglang>=0.5``) or a source checkout (``-e python``) gives "".
    """
    for req in _as_list(requirements, "sglang_flags_version_from_spec"):
        parsed = parse_requirement(req)
        if parsed is not None and canonical_package(parsed.name) == "sglang":
            wheel = wheel_of(parsed.url) if parsed.url else None
            found = exact_pin(parsed) or (wheel[1] if wheel and wheel[0] == "sglang" else "")
        else:
            wheel = wheel_of(req) if parsed is None else None
            found = wheel[1] if wheel and wheel[0] == "sglang" else ""
        if found:
            return found
    return ""


def sglang_flags_package_names(requirements) -> list:
    """Distribution names (PEP 503-normalised) of a list of requirement strings."""
    names = set()
    for req in _as_list(requirements, "sglang_flags_package_names"):
        parsed = parse_requirement(req)
        wheel = wheel_of(req) if parsed is None else None
        if parsed is not None:
            names.add(canonical_package(parsed.name))
        elif wheel:
            names.add(wheel[0])
    return sorted(names)

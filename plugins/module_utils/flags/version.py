"""SGLang versions in PEP 440 order, with ``packaging.version`` (a dependency of ansible-core).

The rules table bounds rules by version (min inclusive, max exclusive) and the catalogs are
picked and ordered by version. A local part (``0.5.24.dev0+g1a2b``) is ignored: a build of a
commit sorts with its public version, and ``v0.5.23`` reads as ``0.5.23``.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version


def version_key(version) -> Version:
    """The public version of ``version`` as a ``packaging`` Version (orderable). Raises
    ``ValueError`` for anything that is not a PEP 440 version."""
    text = str(version).strip()
    try:
        parsed = Version(text)
    except InvalidVersion as exc:
        raise ValueError(f"not a PEP 440 version: {text!r}") from exc
    return Version(parsed.public)


def public_version(version) -> str:
    """``0.5.23+g1a2b`` / ``v0.5.23`` -> ``0.5.23``; text that is no version is returned
    stripped, "" for None."""
    text = str(version or "").strip()
    try:
        return str(version_key(text))
    except ValueError:
        return text.lstrip("v").split("+")[0]


def sglang_version_compare(a, b) -> int:
    """-1, 0 or 1 as version ``a`` sorts before, with or after ``b``."""
    ka, kb = version_key(a), version_key(b)
    return (ka > kb) - (ka < kb)


def version_in_range(version, vmin=None, vmax=None) -> bool:
    """``vmin <= version < vmax``; either bound may be empty."""
    key = version_key(version)
    if vmin not in (None, "") and key < version_key(vmin):
        return False
    if vmax not in (None, "") and key >= version_key(vmax):
        return False
    return True


def is_version(text) -> bool:
    try:
        version_key(text)
    except ValueError:
        return False
    return True

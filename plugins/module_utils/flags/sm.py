"""GPU compute capabilities (SM) as the rules name them: ``"major.minor"``.

``sglang_flags_gpu_sm`` (defaults/main.yml) and ``sglang_flags_simulate_sm`` may be written
``12``, ``"sm_120"``, ``"SM120"`` or ``"120"``; a rule's ``applies.sm`` lists patterns such as
``"12.*"`` (fnmatch).
"""

from __future__ import annotations

import fnmatch
import re

from ansible.errors import AnsibleFilterError

_SM_RE = re.compile(r"^\s*(?:sm[_ ]?)?(?P<major>\d+)(?:[._](?P<minor>\d+))?\s*$", re.I)


def sglang_flags_normalize_sm(value) -> str:
    """``"12.0"``, ``12``, ``"sm_120"``, ``"SM120"``, ``"120"`` -> ``"12.0"``; ``""`` if unknown."""
    if value is None or value == "":
        return ""
    if isinstance(value, float):
        value = f"{value:.1f}"
    text = str(value)
    m = _SM_RE.match(text)
    if not m:
        raise AnsibleFilterError(
            f"sglang_flags_gpu_sm: {value!r} is not a GPU compute capability; "
            "write it as major.minor, e.g. \"12.0\" for RTX PRO 6000 Blackwell"
        )
    major, minor = int(m.group("major")), m.group("minor")
    if minor is not None:
        return f"{major}.{int(minor)}"
    if major >= 20:  # "120", "sm_120", "sm_90": the last digit is the minor version
        return f"{major // 10}.{major % 10}"
    return f"{major}.0"  # "12", "9"


def sm_matches(sm: str, patterns) -> bool:
    """Whether a normalised SM matches one of a rule's ``sm`` patterns."""
    return any(fnmatch.fnmatchcase(sm, str(p)) for p in patterns)

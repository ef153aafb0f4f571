"""Which of the watchdog's files and directories differ from what this version installs
(roles/sglang_watchdog/tasks/install.yml): the install looks at every one of them with one
``ansible.builtin.find`` and writes only those this names, so a deploy with nothing to change costs
one remote task instead of one per file."""

from __future__ import annotations

import hashlib

from ansible.errors import AnsibleFilterError


def sglang_watchdog_stale(found, expected, owner="root", group="root") -> list:
    """Paths of ``expected`` whose installed copy is missing or differs.

    ``found`` is ``ansible.builtin.find``'s ``files`` (``file_type: any``, ``get_checksum: true``);
    ``expected`` a list of ``{path, mode[, content]}``: with ``content`` a regular file of that
    text (compared by SHA-1, what find returns), without it a directory. A path differs when it is
    absent, of the other kind (a link included), of another mode, owner or group, or of other
    content. The order of ``expected`` is kept."""
    if not isinstance(found, list) or not isinstance(expected, list):
        raise AnsibleFilterError("sglang_watchdog_stale: expected find's files and a list of {path, mode[, content]}")
    by_path = {entry.get("path"): entry for entry in found if isinstance(entry, dict)}
    stale = []
    for want in expected:
        if not isinstance(want, dict) or "path" not in want or "mode" not in want:
            raise AnsibleFilterError(f"sglang_watchdog_stale: an expected entry needs path and mode: {want!r}")
        have = by_path.get(want["path"])
        is_dir = want.get("content") is None
        if (have is None
                or bool(have.get("isdir")) != is_dir
                or (not is_dir and not have.get("isreg"))
                or have.get("islnk")
                or have.get("mode") != want["mode"]
                or have.get("pw_name") != owner
                or have.get("gr_name") != group
                or (not is_dir
                    and have.get("checksum") != hashlib.sha1(str(want["content"]).encode("utf-8"), usedforsecurity=False).hexdigest())):
            stale.append(want["path"])
    return stale

"""`make drift`'s list of retired flags the repository still mentions (scripts/sglang_drift.py).

SGLang retires deprecated flags in batches (SGLang PR 38375, merged 2026-09-07, cleared
seventeen that had a replacement; the committed catalogs show them gone from 0.5.20). A profile
that still sets one is refused by the lint; a doc, a sweep, a role default or a comment that
names one is not, and misleads the next reader. This module lists them, for the newest version:

* **retired**: a flag an older committed catalog has and the newest lacks (the catalogs'
  history, plugins/module_utils/flags/catalog.py ``flag_history``, with the replacement SGLang
  named when it deprecated the flag, or the one vars/main.yml ``sglang_flags_removed_flags``
  records);
* **deprecated**: a flag the newest catalog still accepts with a deprecation (the next batch).

and every tracked file that names one (``--flag`` in prose and commands, ``flag:`` as an
inventory key), except the catalogs themselves and the tests (which name them on purpose).
"""

from __future__ import annotations

import os
import re
import subprocess

from ansible_collections.sglang.deploy.plugins.module_utils.flags import catalog as C

SKIPPED = ("roles/sglang_flags/files/catalogs/", "tests/", "CHANGELOG.md")
TEXT = (".md", ".yml", ".yaml", ".j2", ".py", ".sh", ".cfg", ".toml", ".txt", ".json", ".ini", "")
MAX_PLACES = 6


def retired_flags(newest, removed=None, directory=None) -> dict:
    """{flag (no dashes): {status: retired|deprecated, gone|last, replacement}} for ``newest``."""
    out = {}
    for flag, hist in C.flag_history(newest, removed, directory).items():
        if hist.get("status") == "removed":
            out[flag] = {"status": "retired", "gone": hist["gone"], "last": hist["last"],
                         "replacement": hist.get("replacement") or ""}
    options = C.sglang_flags_catalog_of(newest, removed, directory).get("options") or {}
    for option, meta in options.items():
        said = meta.get("deprecated")
        if said and option.startswith("--") and not option.startswith("--no-"):
            out[option[2:]] = {"status": "deprecated", "last": newest,
                               "replacement": said if isinstance(said, str) else ""}
    return out


def _tracked(root) -> list:
    proc = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=False)
    if proc.returncode == 0:
        return [p for p in proc.stdout.splitlines() if p]
    found = []  # not a git checkout (a copy in a test): every file under it
    for base, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [os.path.relpath(os.path.join(base, f), root) for f in files]
    return found


def mentions(root, flags) -> dict:
    """{flag: ["path:line", ...]} of every tracked text file under ``root`` that names a flag."""
    if not flags:
        return {}
    names = sorted(flags, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w-])(?:--)?(" + "|".join(re.escape(n) for n in names) + r")(?![\w-])")
    found: dict = {}
    for rel in sorted(_tracked(root)):
        if rel.startswith(SKIPPED) or os.path.splitext(rel)[1] not in TEXT:
            continue
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as fh:
                lines = fh.readlines()
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(lines, 1):
            for match in pattern.finditer(line):
                token = match.group(0)
                # a bare name counts as an inventory key (`flag:`); in prose only with its dashes
                if token.startswith("--") or line[match.end():].startswith(":"):
                    found.setdefault(match.group(1), []).append(f"{rel}:{number}")
    return found


def report_lines(root, newest, removed=None, directory=None) -> list:
    """The report's lines: one per retired or deprecated flag the repository names."""
    flags = retired_flags(newest, removed, directory)
    places = mentions(root, flags)
    lines = []
    for flag in sorted(places):
        meta = flags[flag]
        where = sorted(set(places[flag]), key=lambda p: (p.rsplit(":", 1)[0], int(p.rsplit(":", 1)[1])))
        shown = ", ".join(where[:MAX_PLACES]) + (f" and {len(where) - MAX_PLACES} more" if len(where) > MAX_PLACES else "")
        state = (f"gone since {meta['gone']} (last in {meta['last']})" if meta["status"] == "retired"
                 else f"deprecated in {newest}, due for removal")
        instead = f"use {meta['replacement']}" if meta["replacement"] else "remove it (no replacement)"
        lines.append(f"  --{flag}: {state}; {instead}. Named in {shown}")
    head = (f"== retired and deprecated flags the repository still names (newest {newest}): "
            f"{len(lines)}" if lines else f"== retired and deprecated flags: none named (newest {newest})")
    return [head] + lines

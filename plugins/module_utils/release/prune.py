"""Which finished directories under a root to remove: the one choice behind ml_env's
generations and model_files' revisions.

A directory is a candidate only when it carries its marker file (a finished generation, a
verified revision); symlinks are never followed nor returned; a protected directory (compared by
real path) stays with its reason; of the other candidates the `keep` newest (by the marker's
time) stay; the rest are returned to be removed, oldest last. Standard library only; reads only.
"""

from __future__ import annotations

import os

from ansible_collections.sglang.deploy.plugins.module_utils.release.state import FACT, RELEASE_DIR

# The options every prune plan module takes: the root, how many unprotected ones to keep, more
# paths to protect, and where sglang_release keeps its records (whose generations and models
# are never removed).
PLAN_OPTIONS = dict(
    root=dict(type="path", required=True),
    keep=dict(type="int", required=True),
    protect=dict(type="list", elements="str", default=[]),
    release_fact=dict(type="path", default=FACT),
    release_dir=dict(type="path", default=RELEASE_DIR),
)


def choose(root, marker, keep, protected, keep_reason, skip=None, unfinished="not finished"):
    """(remove, kept): paths to remove and {path: why it stays} for every other directory.

    protected: {realpath: reason}; skip(name) -> reason or None leaves an entry out by name.
    """
    kept, candidates = {}, []
    if not os.path.isdir(root):
        return [], kept
    with os.scandir(root) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_symlink():
                if os.path.isdir(entry.path):
                    kept[entry.path] = "a symlink, never followed"
                continue
            if not entry.is_dir():
                continue
            why = skip(entry.name) if skip else None
            if why:
                kept[entry.path] = why
                continue
            mark = os.path.join(entry.path, marker)
            if os.path.islink(mark) or not os.path.isfile(mark):
                kept[entry.path] = "no %s: %s" % (marker, unfinished)
                continue
            real = os.path.realpath(entry.path)
            if real in protected:
                kept[entry.path] = protected[real]
                continue
            candidates.append((os.stat(mark).st_mtime, entry.path))
    candidates.sort(key=lambda c: (-c[0], c[1]))  # newest first, then by name
    for _, path in candidates[:max(keep, 0)]:
        kept[path] = keep_reason
    return [path for _, path in candidates[max(keep, 0):]], kept

# -*- coding: utf-8 -*-
"""What a model directory holds, and the stamp that says it was fetched and verified.

Standard library only: the module that uses this (plugins/modules/model_files_fetch.py)
may run with the host's python3.

* manifest: ``{relative path: {"sha256": hex, "size": bytes}}`` of every file under the directory,
  sorted, paths with ``/``. Left out (bookkeeping, not model files): the stamp and any other
  top-level ``.sglang-deploy-*`` file, and the top-level ``.cache/`` folder the Hugging Face
  client keeps in a ``local_dir`` download. A download's partial directory is a sibling of the
  revision directory, never inside it.
* digest: sha256 of the manifest as compact JSON with sorted keys
  (``json.dumps(files, sort_keys=True, separators=(",", ":"))``).
* stamp: ``<dir>/.sglang-deploy-model.json``: ``repo``, ``revision``, ``source``,
  ``manifest_digest``, ``files_count``, ``bytes``, ``verified_at`` (UTC, ISO 8601, the time of
  the last full hash of every file), ``files`` (the manifest itself) and what the writer adds
  (model_files_fetch.py: the ``allow_patterns`` that selected the files).

SGLang's ``sglang.srt.utils.model_file_verifier`` (in the 0.5.23 wheel) is not imported: it runs
in the ML environment (it needs tqdm, and huggingface_hub for its Hub mode) and only looks at the
top level of a model directory, skipping dot files, README and LICENSE. Its checksum file is
``{"files": {name: {"sha256", "size"}}}`` and it reads nothing but ``files``, so the stamp keeps
the manifest under that same key: ``--model-checksum <revision dir>/.sglang-deploy-model.json``
makes the server verify the files against it when it loads them.

* content revision: a 40-hex id of a directory's files (sha1 of the digest), for a checkpoint
  that has no Hub commit (one trained or converted in-house, the project's tiny model): the same
  files always give the same revision, so it names a revision directory like a commit sha does.

* quick check: the stamp is readable, its digest matches its manifest, and every file is there
  with its recorded size. No file is read.
* full verify: every file of the manifest hashed again; the names of the missing, resized or
  changed ones are returned.
"""

import datetime
import fnmatch
import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.sglang.deploy.plugins.module_utils.sglang_files import write_text

STAMP = ".sglang-deploy-model.json"
BOOKKEEPING_PREFIX = ".sglang-deploy-"
CLIENT_DIR = ".cache"
CHUNK = 1 << 20


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def list_files(directory):
    """Sorted relative paths (``/``-separated) of the model files under `directory`."""
    found = []
    for current, dirs, files in os.walk(directory):
        rel_dir = os.path.relpath(current, directory)
        if rel_dir == ".":
            dirs[:] = [d for d in dirs if d != CLIENT_DIR]
            files = [f for f in files if not f.startswith(BOOKKEEPING_PREFIX)]
        for name in files:
            rel = name if rel_dir == "." else os.path.join(rel_dir, name)
            found.append(rel.replace(os.sep, "/"))
    return sorted(found)


def filter_names(names, patterns):
    """The names matching at least one fnmatch pattern (all of them when `patterns` is empty); a
    pattern ending in ``/`` means everything under that folder, as huggingface_hub's
    ``allow_patterns`` does."""
    if not patterns:
        return list(names)
    patterns = [p + "*" if p.endswith("/") else p for p in patterns]
    return [n for n in names if any(fnmatch.fnmatch(n, p) for p in patterns)]


def compute_manifest(directory, names=None, workers=4):
    """The manifest of `directory` (of `names` only when given; a missing one is left out)."""
    names = list_files(directory) if names is None else sorted(names)

    def one(name):
        path = os.path.join(directory, *name.split("/"))
        if not os.path.isfile(path):
            return name, None
        return name, {"sha256": sha256_file(path), "size": os.path.getsize(path)}

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(one, names))
    return {name: info for name, info in results if info is not None}


def manifest_digest(files):
    return hashlib.sha256(json.dumps(files, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def content_revision(files):
    return hashlib.sha1(manifest_digest(files).encode()).hexdigest()


def total_bytes(files):
    return sum(info["size"] for info in files.values())


def compare(expected, actual):
    """Sorted names of `expected` that `actual` lacks or holds with another size or sha256
    (an expected sha256 of None checks the size only)."""
    bad = []
    for name, want in expected.items():
        got = actual.get(name)
        if got is None or got["size"] != want["size"] or (want.get("sha256") and got["sha256"] != want["sha256"]):
            bad.append(name)
    return sorted(bad)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def make_stamp(files, repo, revision, source, verified_at=None, **extra):
    return dict(extra, **{
        "repo": repo,
        "revision": revision,
        "source": source,
        "manifest_digest": manifest_digest(files),
        "files_count": len(files),
        "bytes": total_bytes(files),
        "verified_at": verified_at or _now(),
        "files": {name: {"sha256": files[name]["sha256"], "size": files[name]["size"]} for name in sorted(files)},
    })


def write_stamp(directory, files, repo, revision, source, verified_at=None, **extra):
    """Write the stamp atomically (temporary file, then rename); returns it."""
    stamp = make_stamp(files, repo, revision, source, verified_at, **extra)
    # the temporary file (.sglang-deploy-model.json.*.tmp) is bookkeeping the manifest leaves out
    write_text(os.path.join(directory, STAMP), json.dumps(stamp, indent=2, sort_keys=True) + "\n", mode=0o644)
    return stamp


def read_stamp(directory):
    """The stamp of `directory`, or None when it is missing, unreadable or its digest does not
    match its manifest."""
    try:
        with open(os.path.join(directory, STAMP), encoding="utf-8") as handle:
            stamp = json.load(handle)
    except (OSError, ValueError):
        return None
    files = stamp.get("files") if isinstance(stamp, dict) else None
    if not isinstance(files, dict) or stamp.get("manifest_digest") != manifest_digest(files):
        return None
    return stamp


def quick_check(directory, stamp):
    """Sorted names of the stamp's files that are missing or of another size. Reads no file."""
    bad = []
    for name, info in stamp["files"].items():
        path = os.path.join(directory, *name.split("/"))
        try:
            if os.path.getsize(path) != info["size"]:
                bad.append(name)
        except OSError:
            bad.append(name)
    return sorted(bad)


def full_verify(directory, stamp, workers=4):
    """Sorted names of the stamp's files that are missing or differ from it, every file hashed."""
    return compare(stamp["files"], compute_manifest(directory, stamp["files"], workers))

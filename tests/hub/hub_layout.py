"""Model directories laid out as revisions of Hub repositories, the way tests/hub/hub_endpoint.py
serves them.

* layout: ``<root>/<org>/<name>/<revision sha>/<files>``; ``<root>/<org>/<name>/refs.json`` maps
  branch names to revision shas (``{"main": "<sha>"}``). Without it, ``main`` is the most recently
  modified revision directory.
* revision sha: sha1 of the sorted lines ``<path> <git blob id>\\n`` of the files (git blob id as
  in ``git hash-object``). The same files always give the same 40-hex id, as a git commit of that
  tree would be stable; it is not the id git itself would give (no commit object, no history).
* LFS: files whose suffix is in ``LFS_SUFFIXES`` are listed and served as LFS files (ETag and
  ``lfs.oid`` the sha256 of the content; ``oid`` the git blob id of the LFS pointer), like the
  Hub's default ``.gitattributes``; every other file has its git blob id as ETag.
"""

import hashlib
import json
import os
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ansible_collections.sglang.deploy.plugins.module_utils.model_files import manifest as mf  # the role's own listing of a model directory

TINY_QWEN2 = os.path.join(ROOT, "roles", "model_files", "files", "tiny-qwen2")
TINY_QWEN2_REPO = "sglang-deploy/tiny-qwen2"
LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".onnx", ".msgpack", ".h5")


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256, size):
    return ("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n" % (sha256, size)).encode()


def list_files(directory):
    """Sorted relative paths (``/``-separated) of the model files under `directory`: the files a
    Hub repository of it would hold (model_files' stamp is bookkeeping, not a file of the repo)."""
    return mf.list_files(directory)


def file_entry(directory, path):
    """The Hub's tree entry of one file: type, path, size, oid and, for an LFS file, lfs."""
    with open(os.path.join(directory, path), "rb") as handle:
        data = handle.read()
    entry = {"type": "file", "path": path, "size": len(data), "oid": git_blob_id(data)}
    if path.endswith(LFS_SUFFIXES):
        sha256 = hashlib.sha256(data).hexdigest()
        pointer = lfs_pointer(sha256, len(data))
        entry.update(oid=git_blob_id(pointer), lfs={"oid": sha256, "size": len(data), "pointerSize": len(pointer)})
    return entry


def revision_id(directory):
    lines = "".join("%s %s\n" % (e["path"], e["oid"]) for e in (file_entry(directory, p) for p in list_files(directory)))
    return hashlib.sha1(lines.encode()).hexdigest()


def lay_out(src, root, repo_id=TINY_QWEN2_REPO, branch="main"):
    """Copy the model directory `src` to its revision under `root`, point `branch` at it; returns
    the revision sha."""
    sha = revision_id(src)
    repo_dir = os.path.join(root, *repo_id.split("/"))
    target = os.path.join(repo_dir, sha)
    if not os.path.isdir(target):
        shutil.copytree(src, target)
    refs_path = os.path.join(repo_dir, "refs.json")
    refs = read_refs(repo_dir)
    refs[branch] = sha
    with open(refs_path, "w", encoding="utf-8") as handle:
        json.dump(refs, handle, indent=2, sort_keys=True)
    return sha


def read_refs(repo_dir):
    try:
        with open(os.path.join(repo_dir, "refs.json"), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def resolve(root, repo_id, revision):
    """The revision sha `revision` (a sha, or a branch of refs.json, or ``main``) names in
    `repo_id`, or None."""
    repo_dir = os.path.join(root, *repo_id.split("/"))
    if not os.path.isdir(repo_dir) or revision.startswith("."):
        return None
    if len(revision) == 40 and os.path.isdir(os.path.join(repo_dir, revision)):
        return revision
    sha = read_refs(repo_dir).get(revision)
    if sha is None and revision == "main":
        shas = [d for d in os.listdir(repo_dir) if len(d) == 40 and os.path.isdir(os.path.join(repo_dir, d))]
        sha = max(shas, key=lambda d: os.path.getmtime(os.path.join(repo_dir, d)), default=None)
    return sha

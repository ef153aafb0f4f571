# -*- coding: utf-8 -*-
"""The Hugging Face Hub side of plugins/modules/model_files_fetch.py, through the real
``huggingface_hub`` client (imported only when the Hub is the source, so that the ``path`` source
runs with any python3).

* listing: ``HfApi.model_info(repo, revision=..., files_metadata=True)``
  (``GET /api/models/<repo>/revision/<rev>?blobs=True``): the commit sha the revision names and
  every file with its size, its git blob id, and for an LFS file its sha256.
* download: ``snapshot_download(repo, revision=<sha>, local_dir=..., allow_patterns=...)``. The
  client keeps its bookkeeping in ``<local_dir>/.cache/huggingface`` and skips a file it already
  finished at this commit, so a rerun after a failure fetches only the unfinished files. Inside
  one run a connection cut mid-file is resumed with a ``Range`` request; a file cut off when the
  run itself ends is fetched again from byte 0 on the next run: the client writes each transfer
  to a temporary file of its own (``<etag>.<random>.incomplete`` under ``download/``) and never
  reuses one. tests/integration/test_model_fetch_hub.py shows both. ``drop_orphans`` removes
  the temporary files a killed run leaves behind.
* check: a file matches the Hub when its size does, and its sha256 equals the LFS sha256 (LFS
  files) or its git blob id equals the Hub's (other files).

The token is given to the client as a parameter only; it is never put in the environment, in a
file, or in a message. An endpoint may carry credentials (``https://user:token@mirror``): stamps
and messages name it without them (``public_endpoint``).
"""

import glob
import hashlib
import os
import re
import shutil
import sys
from urllib.parse import unquote, unquote_plus

from ansible_collections.sglang.deploy.plugins.module_utils.model_files.manifest import CHUNK, CLIENT_DIR, filter_names
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_http import public_url

COMMIT_SHA = re.compile(r"^[0-9a-f]{40}$")
# RFC 3986, appendix B: the parts of any URL, one that urlsplit refuses too ("http://u:p@[::1/")
_URL_PARTS = re.compile(r"^(?:[^:/?#]+:)?(?://([^/?#]*))?[^?#]*(?:\?([^#]*))?(?:#(.*))?$", re.S)


class HubError(Exception):
    """A failure to report as is (no traceback): missing client, unknown repo or revision."""


def is_commit_sha(revision):
    return bool(COMMIT_SHA.match(revision or ""))


def client():
    """The huggingface_hub module, or HubError naming the interpreter that lacks it."""
    try:
        import huggingface_hub
        from huggingface_hub.utils import disable_progress_bars
    except ImportError as exc:
        raise HubError(
            "huggingface_hub cannot be imported by %s (Python %d.%d): %s. The hub source runs the real "
            "Hugging Face client on the host: run this task with ansible_python_interpreter set to the ML "
            "environment's python (it has huggingface_hub, an SGLang dependency), or use source: path."
            % (sys.executable, sys.version_info[0], sys.version_info[1], exc))
    disable_progress_bars()
    return huggingface_hub


def public_endpoint(url):
    """``url`` without its user information, query and fragment (``https://user:pw@mirror/hf`` and
    ``https://mirror/hf?token=x`` -> ``https://mirror/hf``): what stamps (``source``) and messages show. A URL that cannot be
    parsed is shown as ``<endpoint>``."""
    shown = public_url(url)  # the one HTTP client's rule (plugins/module_utils/sglang_http.py)
    return "<endpoint>" if shown == "<url>" else shown


def _scrub(text, token, endpoint=None):
    """``text`` (a client's error) without the token and the endpoint's credentials."""
    text = text.replace(token, "<token>") if token else text
    public = public_endpoint(endpoint)
    if endpoint and public != endpoint:
        text = text.replace(endpoint, public)
        netloc, query, fragment = (part or "" for part in _URL_PARTS.match(endpoint).groups())
        userinfo = netloc.rsplit("@", 1)[0] if "@" in netloc else ""
        values = [v for pair in (query + "&" + fragment).split("&") for v in pair.split("=", 1)[1:]]
        # a bare user (https://user@mirror) is its userinfo; the client quotes these decoded too
        # (user%40corp as user@corp, tok%2B as tok+)
        user, _, password = userinfo.partition(":")
        found = {userinfo, user, password, query, fragment, *values}
        found |= {decode(v) for v in found for decode in (unquote, unquote_plus)}
        for secret in sorted(found, key=len, reverse=True):
            if secret:
                text = text.replace(secret, "<credentials>")
    return text


def listing(repo_id, revision, allow_patterns, endpoint=None, token=None):
    """(commit sha, {name: {"size", "sha256" (LFS files, else None), "blob_id"}}) of the files of
    `repo_id` at `revision` that `allow_patterns` selects."""
    hub = client()
    try:
        info = hub.HfApi(endpoint=endpoint).model_info(
            repo_id, revision=revision, files_metadata=True, token=token)
    except Exception as exc:  # the client's errors: unknown repo or revision, HTTP, connection
        raise HubError("cannot read %s at revision %s from %s: %s: %s" % (
            repo_id, revision, public_endpoint(endpoint) or "the Hub (HF_ENDPOINT or huggingface.co)",
            type(exc).__name__, _scrub(str(exc), token, endpoint)))
    if not info.sha or not is_commit_sha(info.sha):
        raise HubError("%s: the Hub gave no commit sha for revision %s" % (repo_id, revision))
    siblings = {s.rfilename: s for s in info.siblings or []}
    files = {}
    for name in filter_names(sorted(siblings), allow_patterns):
        sib = siblings[name]
        if sib.size is None:
            raise HubError("%s@%s: no size for %s in the Hub's file listing" % (repo_id, info.sha, name))
        files[name] = {"size": sib.size, "sha256": sib.lfs.sha256 if sib.lfs else None, "blob_id": sib.blob_id}
    return info.sha, files


def download(repo_id, sha, local_dir, names, endpoint=None, token=None):
    """Fetch `names` of `repo_id` at commit `sha` into `local_dir` (allow_patterns limited to
    exactly those names)."""
    hub = client()
    try:
        hub.snapshot_download(
            repo_id, revision=sha, local_dir=local_dir,
            # the host-wide cache is neither read nor written: the model lives under local_dir only
            cache_dir=os.path.join(local_dir, CLIENT_DIR, "huggingface", "hub"),
            allow_patterns=[glob.escape(n) for n in names], endpoint=endpoint, token=token)
    except Exception as exc:  # the client's errors, and OSError (disk)
        raise HubError("download of %s@%s into %s failed: %s: %s" % (
            repo_id, sha, local_dir, type(exc).__name__, _scrub(str(exc), token, endpoint)))


def drop_orphans(local_dir):
    """Remove the temporary files of transfers a killed run left (the client never reuses them);
    returns their total size."""
    freed = 0
    for path in glob.glob(os.path.join(glob.escape(local_dir), CLIENT_DIR, "huggingface", "download", "**",
                                       "*.incomplete"), recursive=True):
        freed += os.path.getsize(path)
        os.unlink(path)
    return freed


def drop_client_dir(local_dir):
    shutil.rmtree(os.path.join(local_dir, CLIENT_DIR), ignore_errors=True)


def git_blob_id(path):
    """git's object id of the file's content (sha1 of ``blob <size>\\0<content>``)."""
    digest = hashlib.sha1(b"blob %d\0" % os.path.getsize(path))
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def mismatches(directory, expected, manifest):
    """Sorted names of `expected` (a listing) that the directory's `manifest` lacks or that differ
    from what the Hub reported."""
    bad = []
    for name, want in expected.items():
        got = manifest.get(name)
        if got is None or got["size"] != want["size"]:
            bad.append(name)
        elif want["sha256"]:
            if got["sha256"] != want["sha256"]:
                bad.append(name)
        elif want["blob_id"] and git_blob_id(os.path.join(directory, *name.split("/"))) != want["blob_id"]:
            bad.append(name)
    return sorted(bad)

"""The offline check of a host's model_files settings (tasks/lint.yml, run by playbooks/lint.yml and
so by deploy.yml before any host is contacted).

What tasks/fetch.yml would refuse on the host, refused on the controller first, with the variable,
the host and the fix:

* ``model-files-revision``: source hub without a pinned revision: empty, the placeholder
  ``PIN-ME`` an inventory ships until someone pins it, or (``model_files_require_sha``) anything
  but a 40-hex commit sha. The fix says how to find the sha;
* ``model-files-repo``: source hub without an ``org/name`` repository, or one that huggingface_hub's
  validate_repo_id refuses (a trailing newline, ``..``, ``--``: plugins/module_utils/
  sglang_input_guard.py, which plugins/modules/model_files_fetch.py applies on the host too);
* ``model-files-name``: a ``model_files_name`` that is not one directory name (``../../../etc``
  would put the revision in ``/etc/<sha>``);
* ``model-files-model-path``: a revision whose directory (``<root>/<name>/<revision>``) is not the
  server's model-path (the server would load another directory than the one fetched);
* ``model-files-path``: ``model_files_root``, ``model_files_shared_root`` (when set) or, for
  source path, ``model_files_src_path`` not absolute.
"""

from __future__ import annotations

import re

from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as _guard

PLACEHOLDER = "PIN-ME"
SOURCE = "docs/models.md"
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_REPO_RE = re.compile(r"[^/\s]+/[^/\s]+")


def _finding(rule, variable, value, message, fix, host=""):
    where = f"{host}: " if host else ""
    return {"rule": rule, "severity": "error", "status": "violation", "flag": variable, "value": value,
            "message": message, "fix": fix, "source": SOURCE,
            "msg": f"{where}{variable} [{rule}] {message}. Fix: {fix} (source: {SOURCE})"}


def _sha_fix(repo):
    repo = repo or "<org>/<name>"
    return (f"set model_files_revision to the commit sha of the revision to serve: the Hub page's "
            f"commit history (https://huggingface.co/{repo}/commits/main), or "
            f"`python -c \"from huggingface_hub import HfApi; print(HfApi().model_info('{repo}').sha)\"` "
            "(the newest commit of main); then give the same sha to every host")


def _revision_findings(settings, host):
    repo, revision = str(settings.get("repo_id") or ""), str(settings.get("revision") or "")
    if not revision:
        return [_finding("model-files-revision", "model_files_revision", revision,
                         f"model_files_source hub needs a revision of {repo or 'the repository'}, and none "
                         "is set", _sha_fix(repo), host)]
    if PLACEHOLDER in revision:
        return [_finding("model-files-revision", "model_files_revision", revision,
                         f"{revision!r} is the placeholder of an unpinned revision: nothing says which "
                         f"revision of {repo or 'the repository'} the fleet serves", _sha_fix(repo), host)]
    if settings.get("require_sha", True) and not _SHA_RE.match(revision):
        return [_finding("model-files-revision", "model_files_revision", revision,
                         f"{revision!r} is not a 40-hex commit sha: a branch or tag moves, and a rollout "
                         "must put the same bytes on every host (model_files_require_sha)",
                         _sha_fix(repo) + " (or model_files_require_sha: false outside production)", host)]
    return []


def model_files_lint_findings(settings, host="") -> list:
    """Every error of one host's model_files settings. ``settings``: source, repo_id, revision,
    require_sha, root, name, shared_root, src_path and dest (the server's model-path), as
    tasks/lint.yml passes them; ``host`` names the host in each finding's ``msg``."""
    settings = settings if isinstance(settings, dict) else {}
    source = str(settings.get("source") or "")
    if source not in ("hub", "path"):
        return []
    findings = []
    if source == "hub":
        repo = str(settings.get("repo_id") or "")
        if not _REPO_RE.fullmatch(repo) or _guard.repo_id_problem(repo):
            findings.append(_finding("model-files-repo", "model_files_repo_id", repo,
                                     f"{repo!r} is not a Hub repository (org/name) "
                                     f"{_guard.repo_id_problem(repo) or ''}".rstrip(),
                                     "set model_files_repo_id, e.g. nvidia/Qwen3.5-397B-A17B-NVFP4", host))
        findings += _revision_findings(settings, host)
    name = settings.get("name")
    if name not in (None, "") and _guard.dir_name_problem(name):
        findings.append(_finding("model-files-name", "model_files_name", name,
                                 f"{str(name)!r} {_guard.dir_name_problem(name)}: the revision goes into "
                                 "<model_files_root>/<model_files_name>/<revision>",
                                 "give the model's directory name, e.g. Qwen3.5-397B-A17B-NVFP4", host))
    paths = [("model_files_root", settings.get("root"))]
    if settings.get("shared_root"):
        paths.append(("model_files_shared_root", settings.get("shared_root")))
    if source == "path":
        paths.append(("model_files_src_path", settings.get("src_path")))
    for variable, value in paths:
        if not str(value or "").startswith("/"):
            findings.append(_finding("model-files-path", variable, value, f"{value!r} is not an absolute path",
                                     "give an absolute directory", host))
    revision, root, name = (str(settings.get(k) or "") for k in ("revision", "root", "name"))
    if revision and PLACEHOLDER not in revision and root.startswith("/"):
        wanted = f"{root}/{name}/{revision}"  # the comparison of tasks/fetch.yml, exactly
        dest = str(settings.get("dest") or "")
        if dest != wanted:
            findings.append(_finding(
                "model-files-model-path", "sglang_server_args['model-path']", dest,
                f"the server loads {dest or '(no model-path)'}, but model_files puts revision {revision} "
                f"in {wanted}", f"set model-path to {wanted} (write it with {{{{ model_files_revision }}}}, "
                "so that a change of revision changes the unit and rolls host by host)", host))
    return findings

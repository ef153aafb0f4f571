#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the host. The Hub source needs huggingface_hub (run it with the ML environment's python);
# the path source needs the standard library only. Manifest and stamp:
# plugins/module_utils/model_files/manifest.py; Hub client: model_files/hub.py beside it.

DOCUMENTATION = r"""
---
module: model_files_fetch
short_description: Put one revision of a model on the host, verified and stamped
description:
  - The revision lives in I(root)/I(name)/<commit sha>. It is built in I(root)/I(name)/.<sha>.partial
    and renamed into place once every file is verified and the stamp C(.sglang-deploy-model.json)
    (the manifest, sha256 and size of every file) is written.
  - With the stamp there and every file of its size, nothing is read or fetched (C(changed=false)).
    I(verify=full) hashes every file again and fetches only the missing or changed ones. Before any
    byte is fetched, the bytes to fetch are compared with the free space under I(root). A failed run
    keeps the partial directory; the next run fetches only the files it lacks.
options:
  source: {type: str, choices: [hub, path], default: hub,
           description: "C(hub) (the Hugging Face Hub or a mirror at I(endpoint)) or C(path) (a revision directory at I(src_path))."}
  repo_id: {type: str, description: "Hub repository (C(org/name)). Required for C(hub); for C(path) taken from the source's stamp."}
  revision: {type: str, description: "Commit sha, or (without I(require_sha)) a branch or tag, resolved to its sha.
             For C(path), defaults to the source stamp's."}
  src_path: {type: path, description: "For C(path), the source revision directory (shared storage, or a peer's copy on this host)."}
  root: {type: path, required: true, description: "Directory holding the models (e.g. C(/data/models))."}
  name: {type: str, description: "Directory of the model under I(root); defaults to the last part of I(repo_id)."}
  allow_patterns: {type: list, elements: str, default: [], description: "Only the files matching one of these fnmatch patterns (all when empty)."}
  endpoint: {type: str, description: "Hub endpoint (as C(HF_ENDPOINT)), for a mirror; default: the client's. Credentials in it (C(https://user:token@mirror)) are left out of the stamp's C(source) and of messages."}
  token: {type: str, description: "Hub token, given to the client as a parameter; never written or logged."}
  require_sha: {type: bool, default: false, description: "Refuse a revision that is not a 40-hex commit sha."}
  verify: {type: str, choices: [quick, full], default: quick, description: "C(quick) (stamp and sizes) or C(full) (hash every file, repair)."}
  min_free_bytes: {type: int, default: 0, description: "Free space that must remain under I(root) after the fetch."}
  free_bytes_override: {type: int, description: "Test only: the free space figure used instead of the file system's."}
  progress_file: {type: path, description: "While files are fetched or copied: what is being filled, for
                  C(model_files_follow) to measure (the task runs async); removed when the run ends."}
author: [sglang_deploy contributors]
"""

EXAMPLES = r"""
- name: Put the pinned revision of the model on the host
  sglang.deploy.model_files_fetch:
    repo_id: nvidia/Qwen3.5-397B-A17B-NVFP4
    revision: "{{ model_files_revision }}"
    root: /data/models
    require_sha: true
  vars:
    ansible_python_interpreter: /root/ml-env/bin/python
  register: model_files_fetched

- name: Copy a verified revision from the shared storage
  sglang.deploy.model_files_fetch:
    source: path
    src_path: "/mnt/models/Qwen3.5-397B-A17B-NVFP4/{{ model_files_revision }}"
    root: /data/models
"""

RETURN = r"""
path: {description: The revision directory., type: str, returned: always}
revision: {description: The commit sha., type: str, returned: always}
fetched_bytes: {description: Bytes of the files written by this run (a resumed file counts whole)., type: int, returned: always}
seconds: {description: Wall time of the run., type: float, returned: always}
repaired: {description: Files found missing or changed and fetched again., type: list, elements: str, returned: always}
manifest_digest: {description: sha256 of the manifest (model_files/manifest.py)., type: str, returned: always}
preflight: {description: "C(need_bytes), C(free_bytes): bytes to fetch and free space (null when nothing was needed).", type: dict,
            returned: always}
files_count: {description: Files in the manifest., type: int, returned: always}
pending: {description: "In check mode: files would be fetched or repaired (the play's quick check before a background job).", type: bool,
          returned: in check mode, and when the revision was found in place}
bytes: {description: Bytes in the manifest., type: int, returned: always}
"""

import os
import shutil
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.model_files import hub
from ansible_collections.sglang.deploy.plugins.module_utils.model_files import progress
from ansible_collections.sglang.deploy.plugins.module_utils.model_files import manifest as mf
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as guard

ARGUMENT_SPEC = dict(
    source=dict(type="str", choices=["hub", "path"], default="hub"),
    repo_id=dict(type="str"),
    revision=dict(type="str"),
    src_path=dict(type="path"),
    root=dict(type="path", required=True),
    name=dict(type="str"),
    allow_patterns=dict(type="list", elements="str", default=[]),
    endpoint=dict(type="str"),
    token=dict(type="str", no_log=True),
    require_sha=dict(type="bool", default=False),
    verify=dict(type="str", choices=["quick", "full"], default="quick"),
    min_free_bytes=dict(type="int", default=0),
    free_bytes_override=dict(type="int"),
    progress_file=dict(type="path"),
)
DEFAULTS = {k: v.get("default") for k, v in ARGUMENT_SPEC.items()}
COPY_TMP = progress.COPY_TMP


class FetchError(Exception):
    def __init__(self, msg, **result):
        super(FetchError, self).__init__(msg)
        self.result = result


class Fetch(object):
    """One run: the source's side (listing, filling a directory) and the destination's."""

    def __init__(self, params):
        self.p = p = dict(DEFAULTS, **params)
        self.started, self.fetched = time.time(), 0
        self.preflight = self.expected = self.sha = self.dest = None
        if not p["root"] or not os.path.isabs(p["root"]):
            raise FetchError("model_files_fetch: root=%r must be an absolute path" % p["root"])
        self.src_stamp = self._source_stamp() if p["source"] == "path" else None
        self.repo = p["repo_id"] or (self.src_stamp or {}).get("repo")
        if p["source"] == "hub" and not (self.repo and p["revision"]):
            raise FetchError("model_files_fetch: source hub needs repo_id and revision")
        if self.repo and guard.repo_id_problem(self.repo):
            raise FetchError("model_files_fetch: repo_id=%r %s" % (self.repo, guard.repo_id_problem(self.repo)))
        name = p["name"] or (self.repo or "").split("/")[-1]
        if not name or name.startswith(".") or guard.dir_name_problem(name):
            raise FetchError("model_files_fetch: name=%r: give name (or repo_id) for the model directory, "
                             "one directory name" % name)
        self.sha = self._revision()
        self.dest = os.path.join(p["root"], name, self.sha)
        self.partial = os.path.join(p["root"], name, "." + self.sha + ".partial")

    def _source_stamp(self):
        src = self.p["src_path"]
        if not src or not os.path.isdir(src):
            raise FetchError("model_files_fetch: source path needs src_path, a directory (got %r)" % src)
        if not os.path.exists(os.path.join(src, mf.STAMP)):
            return None
        stamp = mf.read_stamp(src)
        if stamp is None:
            raise FetchError("model_files_fetch: %s/%s is unreadable or does not match its manifest" % (src, mf.STAMP))
        return stamp

    def _revision(self):
        p, revision = self.p, self.p["revision"]
        if self.src_stamp:
            if revision and revision != self.src_stamp["revision"]:
                raise FetchError("model_files_fetch: revision %s asked, but %s holds %s (its stamp)"
                                 % (revision, p["src_path"], self.src_stamp["revision"]))
            revision = self.src_stamp["revision"]
        if not revision:
            raise FetchError("model_files_fetch: no revision: %s has no stamp, give revision" % p["src_path"])
        if hub.is_commit_sha(revision):
            return revision
        if p["require_sha"]:
            raise FetchError(
                "model_files_fetch: revision=%r is a branch or tag, not a 40-hex commit sha, and require_sha is "
                "on: a branch moves, and hosts fetched at different times would serve different weights. Set "
                "revision to the commit sha (the 'sha' of <endpoint>/api/models/%s/revision/%s)."
                % (revision, self.repo, revision))
        if p["source"] == "path":
            return revision
        sha, self.expected = self._hub(hub.listing, self.repo, revision, p["allow_patterns"], p["endpoint"], p["token"])
        return sha

    def _hub(self, call, *args):
        try:
            return call(*args)
        except hub.HubError as exc:
            raise FetchError("model_files_fetch: %s" % exc, **self.result(False))

    def source_label(self):
        p = self.p
        # an endpoint's credentials (https://user:token@mirror) never reach the stamp
        return "path:" + p["src_path"] if p["source"] == "path" else \
            "hub:" + hub.public_endpoint(p["endpoint"] or os.environ.get("HF_ENDPOINT") or "https://huggingface.co")

    def listing(self):
        """{name: {"size", "sha256" or None, ...}} of the source's files at this revision."""
        p = self.p
        if p["source"] == "hub":
            if self.expected is None:
                self.expected = self._hub(hub.listing, self.repo, self.sha, p["allow_patterns"], p["endpoint"], p["token"])[1]
            return self.expected
        if self.src_stamp:
            files = self.src_stamp["files"]
        else:
            src = p["src_path"]
            files = {n: {"size": os.path.getsize(os.path.join(src, n)), "sha256": None} for n in mf.list_files(src)}
        return {n: files[n] for n in mf.filter_names(sorted(files), p["allow_patterns"])}

    def fill(self, directory, names, sizes):
        """Fetch or copy `names` ({name: size} in `sizes`) into `directory`."""
        hub_source = self.p["source"] == "hub"
        progress.start(self.p["progress_file"], directory, dict((n, sizes[n]) for n in names),
                       "%s@%s" % (self.repo, self.sha[:12]) if hub_source else "from %s" % self.p["src_path"],
                       "fetch" if hub_source else "copy")
        if hub_source:
            self._hub(hub.download, self.repo, self.sha, directory, names, self.p["endpoint"], self.p["token"])
            return
        # a copy, not sglang_files' write: the file streams into COPY_TMP, the name the
        # progress callback measures, and is renamed into place once whole
        tmp = os.path.join(directory, COPY_TMP)
        for name in names:
            target = os.path.join(directory, *name.split("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(os.path.join(self.p["src_path"], *name.split("/")), tmp)
            os.replace(tmp, target)

    @staticmethod
    def remove(directory, names):
        for name in names:
            path = os.path.join(directory, *name.split("/"))
            if os.path.lexists(path):
                os.unlink(path)

    @staticmethod
    def tidy(directory):
        """Remove the client's bookkeeping and a copy cut short."""
        hub.drop_client_dir(directory)
        Fetch.remove(directory, [COPY_TMP])

    def check_preflight(self, need):
        free = self.p["free_bytes_override"]
        if free is None:
            probe = self.p["root"]
            while not os.path.exists(probe):
                probe = os.path.dirname(probe)
            free = shutil.disk_usage(probe).free
        self.preflight = {"need_bytes": need, "free_bytes": free}
        if need + self.p["min_free_bytes"] > free:
            raise FetchError(
                "model_files_fetch: not enough space for %s@%s under %s: need %d bytes (%.2f GiB) plus "
                "min_free_bytes %d, free %d bytes (%.2f GiB). Nothing was fetched."
                % (self.repo, self.sha, self.p["root"], need, need / 2.0 ** 30, self.p["min_free_bytes"], free,
                   free / 2.0 ** 30), **self.result(False))

    def bad_files(self, directory, expected, names):
        manifest, want = mf.compute_manifest(directory, names), {n: expected[n] for n in names}
        return manifest, (hub.mismatches(directory, want, manifest) if self.p["source"] == "hub" else mf.compare(want, manifest))

    def result(self, changed, stamp=None, repaired=()):
        return dict(changed=changed, path=self.dest, revision=self.sha, fetched_bytes=self.fetched,
                    seconds=round(time.time() - self.started, 3), repaired=sorted(repaired),
                    manifest_digest=(stamp or {}).get("manifest_digest"), preflight=self.preflight,
                    files_count=(stamp or {}).get("files_count"), bytes=(stamp or {}).get("bytes"))

    def run(self, check_mode=False):
        stamp = mf.read_stamp(self.dest)
        if stamp is not None and stamp.get("revision") == self.sha:
            return self.keep(stamp, check_mode)
        if os.path.exists(self.dest):
            raise FetchError("model_files_fetch: %s exists without a valid stamp (%s): it was not put there by this "
                             "module; move it away to fetch the revision" % (self.dest, mf.STAMP), **self.result(False))
        return self.fresh(check_mode)

    def keep(self, stamp, check_mode):
        """The revision is in place: check it, repair what is missing or changed."""
        if sorted(stamp.get("allow_patterns") or []) != sorted(self.p["allow_patterns"]):
            raise FetchError("model_files_fetch: %s holds the files of allow_patterns %s, not %s: remove it (or give "
                             "another name) to fetch the revision again" % (self.dest, stamp.get("allow_patterns") or [],
                                                                              self.p["allow_patterns"]), **self.result(False, stamp))
        bad = mf.quick_check(self.dest, stamp)
        if not bad and self.p["verify"] == "quick":
            return dict(self.result(False, stamp), pending=False)
        bad = mf.full_verify(self.dest, stamp)
        if not bad or check_mode:
            return dict(self.result(bool(bad), stamp, bad), pending=bool(bad))
        self.check_preflight(sum(stamp["files"][n]["size"] for n in bad))
        self.remove(self.dest, bad)
        try:
            self.fill(self.dest, bad, dict((n, stamp["files"][n]["size"]) for n in bad))
        finally:
            self.tidy(self.dest)
        still = mf.compare({n: stamp["files"][n] for n in bad}, mf.compute_manifest(self.dest, bad))
        if still:
            raise FetchError("model_files_fetch: %s: still missing or different after fetching them again: %s"
                             % (self.dest, ", ".join(still)), **self.result(False, stamp))
        self.fetched = sum(stamp["files"][n]["size"] for n in bad)
        stamp = mf.write_stamp(self.dest, stamp["files"], stamp["repo"], self.sha, self.source_label(),
                               allow_patterns=self.p["allow_patterns"])
        return self.result(True, stamp, bad)

    def fresh(self, check_mode):
        expected = self.listing()
        if not expected:
            raise FetchError("model_files_fetch: allow_patterns %s select no file of %s@%s"
                             % (self.p["allow_patterns"], self.repo, self.sha), **self.result(False))
        present = {}
        if os.path.isdir(self.partial):
            hub.drop_orphans(self.partial)  # before the preflight: their space is free again
            present = {n: os.path.getsize(os.path.join(self.partial, n)) for n in mf.list_files(self.partial)}
        todo = [n for n in expected if present.get(n) != expected[n]["size"]]
        self.check_preflight(sum(expected[n]["size"] for n in todo))
        if check_mode:
            return dict(self.result(True), pending=True)
        os.makedirs(self.partial, exist_ok=True)
        self.remove(self.partial, set(present) - set(expected))
        sizes = dict((n, expected[n]["size"]) for n in expected)
        self.fill(self.partial, sorted(expected) if self.p["source"] == "hub" else todo, sizes)
        self.fetched = sum(expected[n]["size"] for n in todo)
        manifest, bad = self.bad_files(self.partial, expected, sorted(expected))
        if bad:  # once more, for exactly those files
            self.remove(self.partial, bad)
            self.fill(self.partial, bad, sizes)
            self.fetched += sum(expected[n]["size"] for n in bad)
            again, bad = self.bad_files(self.partial, expected, bad)
            manifest.update(again)
        if bad:  # removed, so that the next run fetches them again
            self.remove(self.partial, bad)
            raise FetchError("model_files_fetch: %s@%s: these files differ from the source after fetching them twice: "
                             "%s" % (self.repo, self.sha, ", ".join(bad)), **self.result(False))
        self.tidy(self.partial)
        stamp = mf.write_stamp(self.partial, manifest, self.repo, self.sha, self.source_label(),
                               allow_patterns=self.p["allow_patterns"])
        os.rename(self.partial, self.dest)
        return self.result(True, stamp)


def run(params, check_mode=False):
    """The module's result for these parameters (defaults filled in); FetchError on failure."""
    progress.finish(dict(DEFAULTS, **params)["progress_file"])  # a killed run's record
    try:
        return Fetch(params).run(check_mode)
    finally:
        progress.finish(dict(DEFAULTS, **params)["progress_file"])


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    endpoint = module.params["endpoint"]
    if endpoint and hub.public_endpoint(endpoint) != endpoint:
        # credentials in the endpoint (user:token@, ?token=): masked in the result, its invocation
        # (shown at -vvv) and the async job's file, as a no_log option's value is
        module.no_log_values.add(endpoint)
    try:
        result = run(module.params, module.check_mode)
    except FetchError as exc:
        module.fail_json(msg=str(exc), **exc.result)
    except Exception as exc:  # noqa: BLE001  never a traceback (stderr, the async job's file) that quotes the endpoint
        module.fail_json(msg="model_files_fetch: %s: %s" % (type(exc).__name__, hub._scrub(
            str(exc), module.params["token"], endpoint)))
    module.exit_json(**result)


if __name__ == "__main__":
    main()

#!/usr/bin/python
"""Choose the model revisions to remove, and say why every other directory stays (read-only)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: model_files_prune_plan
short_description: Choose the model revisions under a model's directory that can be removed
description:
  - Lists the directories directly under I(root)/I(name). Only a verified revision (a 40-hex
    commit sha directory carrying model_files' stamp) can be removed; a partial download (kept
    for its resume), a symlink or anything else stays.
  - Never removed, compared by real path; every path of I(protect) (the revision this run puts
    in place); every revision named in the server's unit I(unit_path) (what runs now); the
    model directory of every release sglang_release records (current, previous, its history;
    C(protected_model_paths) of plugins/module_utils/release/state.py).
  - Of the other revisions the I(keep) newest (by their stamp's time) stay; the rest are
    returned in C(remove). Reads only; never reports a change.
options:
  root: {description: Directory holding the models (C(model_files_root)), type: path, required: true}
  name: {description: The model's directory name under I(root), type: str, required: true}
  keep: {description: Unprotected revisions kept besides the protected ones, type: int, required: true}
  protect: {description: More revision paths never to remove, type: list, elements: str, default: []}
  in_use:
    description: Revision paths never to remove because a host of the inventory names them (model_files_revision).
    type: list
    elements: str
    default: []
  unit_path: {description: "The server's unit; a revision its text names is in use.", type: path}
  release_fact: {description: "sglang_release's index; missing: protects nothing more; unreadable or malformed: the prune fails.", type: path,
                 default: /etc/ansible/facts.d/sglang_release.fact}
  release_dir: {description: "sglang_release's release directory.", type: path, default: /var/lib/sglang-deploy/releases}
  keep_variable: {description: The variable that set I(keep), named in the reasons, type: str, default: model_files_keep_revisions}
author: sglang-deploy
"""

EXAMPLES = r"""
- name: Choose the revisions of this model that nothing uses
  sglang.deploy.model_files_prune_plan:
    root: /data/models
    name: Qwen3.5-397B-A17B-NVFP4
    keep: 1
    protect: ["{{ model_files_fetched.path }}"]
    unit_path: /etc/systemd/system/sglang.service
  register: _model_files_prune

- name: Remove them
  ansible.builtin.file:
    path: "{{ item }}"
    state: absent
  loop: "{{ _model_files_prune.remove }}"
"""

RETURN = r"""
remove:
  description: Revision directories to remove, oldest last.
  type: list
  elements: str
  returned: always
kept:
  description: Every other directory, with the reason it stays.
  type: dict
  returned: always
msg:
  description: One line summary.
  type: str
  returned: always
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.model_files.manifest import STAMP
from ansible_collections.sglang.deploy.plugins.module_utils.release.prune import PLAN_OPTIONS, choose
from ansible_collections.sglang.deploy.plugins.module_utils.release.state import (
    RELEASE_DIR, ReleaseStateError, protected_model_paths)

SHA = re.compile(r"^[0-9a-f]{40}$")


def protected_revisions(model_dir, protect=(), unit_path=None, release_fact=None, release_dir=RELEASE_DIR,
                        in_use=()):
    """{realpath: reason} of every revision under model_dir that must never be removed."""
    found = {}

    def add(path, reason):
        if path:
            found.setdefault(os.path.realpath(path), reason)

    for path in protect:
        add(path, "put in place by this run")
    for path in in_use:
        add(path, "named by a host of the inventory (model_files_revision)")
    unit = ""
    if unit_path:
        try:
            with open(unit_path, encoding="utf-8") as handle:
                unit = handle.read()
        except OSError:
            unit = ""
    if unit and os.path.isdir(model_dir):
        for entry in os.listdir(model_dir):
            path = os.path.join(model_dir, entry)
            if re.search(re.escape(path) + r"(?![0-9A-Za-z._-])", unit):
                add(path, "named by the server's unit %s (in use)" % unit_path)
    if release_fact:
        for path, ids in sorted(protected_model_paths(release_dir, release_fact).items()):
            add(path, "model of the recorded release%s %s" % ("s" if len(ids) > 1 else "", ", ".join(ids)))
    return found


def plan(root, name, keep, protect=(), unit_path=None, release_fact=None, release_dir=RELEASE_DIR, in_use=(),
         keep_variable="model_files_keep_revisions"):
    """(remove, kept) for the revisions of root/name."""
    model_dir = os.path.join(root, name)
    protected = protected_revisions(model_dir, protect, unit_path, release_fact, release_dir, in_use)
    return choose(model_dir, STAMP, keep, protected,
                  "one of the %d newest other revisions (%s)" % (keep, keep_variable),
                  skip=lambda entry: None if SHA.match(entry) else "not a revision (a partial download, or not ours)",
                  unfinished="not a verified revision")


ARGUMENT_SPEC = dict(PLAN_OPTIONS, name=dict(type="str", required=True), unit_path=dict(type="path"),
                     in_use=dict(type="list", elements="str", default=[]),
                     keep_variable=dict(type="str", default="model_files_keep_revisions"))


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    if not os.path.isabs(p["root"]) or os.path.realpath(p["root"]) == "/" or not p["name"] or "/" in p["name"]:
        module.fail_json(msg="model_files_prune_plan: root=%r must be an absolute path other than / and "
                             "name=%r one directory name (model_files_root, model_files_name)" % (p["root"], p["name"]))
    try:
        remove, kept = plan(p["root"], p["name"], p["keep"], [x for x in p["protect"] if x], p["unit_path"],
                            p["release_fact"], p["release_dir"], [x for x in p["in_use"] if x], p["keep_variable"])
    except ReleaseStateError as exc:  # an unreadable release index: nothing is removed
        module.fail_json(msg="model_files_prune_plan: %s" % exc, release_fact=p["release_fact"])
    module.exit_json(changed=False, remove=remove, kept=kept,
                     msg="under %s/%s: %d revision(s) to remove, %d kept" % (p["root"], p["name"], len(remove), len(kept)))


if __name__ == "__main__":
    main()

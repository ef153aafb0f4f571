#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the host, read-only: decides which ml_env generations prune.yml removes. The
# generations of sglang_release's releases come from plugins/module_utils/release/state.py.
# Standard library only.

DOCUMENTATION = r"""
---
module: ml_env_prune_plan
short_description: Choose the ml_env generations to remove, and say why every other directory stays
description:
  - Lists the directories directly under I(root). Only a directory that carries the record a
    finished install writes (I(record), C(ml-env-generation.json)) is a generation and can be
    removed; anything else (C(logs), a partial install, data that is not ml_env's) is kept.
  - Never removed, compared by real path (so a I(root) reached through a symlink, or a link
    that points through one, is recognised), the generation I(link) points at, the
    C(previous_dir) of I(state_fact), every path of I(protect), the C(active_dir) recorded in
    I(state_fact), and the generation of every release sglang_release records (current,
    previous, its history; read from each release's C(release.json) and environment copy under
    I(release_dir) and from the index I(release_fact), C(protected_generations) of
    plugins/module_utils/release/state.py).
  - Of the other generations the I(keep) newest (by the time of their record) are kept; the
    rest are returned in C(remove). Symlinks under I(root) are never followed nor returned.
  - Reads only; never changes anything (C(changed) is always false).
options:
  root:
    description: Directory holding the generations (C(ml_env_root)).
    type: path
    required: true
  link:
    description: Symlink to the active generation (C(ml_env_link)).
    type: path
    required: true
  keep:
    description: Unprotected generations kept besides the protected ones.
    type: int
    required: true
  record:
    description: File name that marks a finished generation.
    type: str
    default: ml-env-generation.json
  protect:
    description: More generation paths (or names under I(root)) never to remove.
    type: list
    elements: str
    default: []
  state_fact:
    description: ml_env's local fact (C(active_dir), C(previous_dir)); a missing file protects nothing more.
    type: path
    default: /etc/ansible/facts.d/ml_env.fact
  release_fact:
    description: sglang_release's local fact (its index); a missing file protects nothing more, an unreadable or malformed one fails the prune.
    type: path
    default: /etc/ansible/facts.d/sglang_release.fact
  release_dir:
    description: sglang_release's release directory (C(sglang_release_dir)); a missing one protects what the index names.
    type: path
    default: /var/lib/sglang-deploy/releases
author:
  - sglang_deploy contributors
"""

EXAMPLES = r"""
- name: Choose the generations to remove (and say why the others stay)
  sglang.deploy.ml_env_prune_plan:
    root: /root/ml-envs
    link: /root/ml-env
    keep: 2
  register: _ml_env_prune_plan

- name: Remove them
  ansible.builtin.file:
    path: "{{ item }}"
    state: absent
  loop: "{{ _ml_env_prune_plan.remove }}"
"""

RETURN = r"""
remove:
  description: Generation directories (as paths under I(root)) to remove, oldest last.
  type: list
  elements: str
  returned: always
kept:
  description: Every other directory under I(root), with the reason it stays.
  type: dict
  returned: always
msg:
  description: One line summary.
  type: str
  returned: always
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.release.prune import PLAN_OPTIONS, choose
from ansible_collections.sglang.deploy.plugins.module_utils.release.state import (
    RELEASE_DIR, ReleaseStateError, protected_generations)


def _read_json(path):
    """The JSON object in `path`, or {} when it is missing or not a JSON object."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _under(root, name_or_path):
    """A generation name is a directory under root; an absolute path stays as it is."""
    return name_or_path if os.path.isabs(name_or_path) else os.path.join(root, name_or_path)


def protected_paths(root, link, protect=(), state_fact=None, release_fact=None, release_dir=RELEASE_DIR):
    """{realpath: reason} of every generation that must never be removed."""
    found = {}

    def add(path, reason):
        if path:
            found.setdefault(os.path.realpath(_under(root, path)), reason)

    if os.path.islink(link):
        add(link, "active (%s points at it)" % link)
    for path in protect:
        add(path, "built in this run")
    state = _read_json(state_fact) if state_fact else {}
    add(state.get("active_dir") or "", "active generation recorded in %s" % state_fact)
    add(state.get("previous_dir") or "", "previous generation recorded in %s" % state_fact)
    if release_fact:
        for generation, ids in sorted(protected_generations(release_dir, release_fact).items()):
            plural = "s" if len(ids) > 1 else ""
            add(generation, "generation of the recorded release%s %s" % (plural, ", ".join(ids)))
    return found


def plan(root, link, keep, record="ml-env-generation.json", protect=(), state_fact=None, release_fact=None,
         release_dir=RELEASE_DIR):
    """(remove, kept): the generation paths to remove and {path: why it stays} for the rest."""
    protected = protected_paths(root, link, protect, state_fact, release_fact, release_dir)
    return choose(root, record, keep, protected,
                  "one of the %d newest other generations (ml_env_keep_generations)" % keep,
                  unfinished="not a finished generation")


ARGUMENT_SPEC = dict(
    PLAN_OPTIONS,
    link=dict(type="path", required=True),
    record=dict(type="str", default="ml-env-generation.json"),
    state_fact=dict(type="path", default="/etc/ansible/facts.d/ml_env.fact"),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    if not os.path.isabs(p["root"]) or os.path.realpath(p["root"]) == "/":
        module.fail_json(msg="ml_env_prune_plan: root=%r must be an absolute path other than / "
                             "(ml_env_root)" % p["root"])
    if not os.path.isabs(p["link"]):
        module.fail_json(msg="ml_env_prune_plan: link=%r must be an absolute path (ml_env_link)" % p["link"])
    try:
        remove, kept = plan(p["root"], p["link"], p["keep"], p["record"], [x for x in p["protect"] if x],
                            p["state_fact"], p["release_fact"], p["release_dir"])
    except ReleaseStateError as exc:  # an unreadable release index: nothing is removed
        module.fail_json(msg="ml_env_prune_plan: %s" % exc, release_fact=p["release_fact"])
    module.exit_json(changed=False, remove=remove, kept=kept,
                     msg="under %s: %d generation(s) to remove, %d kept" % (p["root"], len(remove), len(kept)))


if __name__ == "__main__":
    main()

#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the host: records, finds and lists the releases of roles/sglang_release. The state
# itself (release directory, release.json, the index in the local fact) is
# plugins/module_utils/release/state.py. Standard library only.

DOCUMENTATION = r"""
---
module: sglang_release
short_description: Record, resolve and list the releases (unit + environment + ml_env generation) of an SGLang host
description:
  - A release is the unit file and environment file of sglang_server, kept as
    C(<release_dir>/<id>/unit), C(<release_dir>/<id>/env) and C(<release_dir>/<id>/release.json)
    (C(id), C(generation), C(args) without secret flags, C(recorded_at)). The id is the first 12 hex
    characters of the sha256 of base64(unit), a newline and base64(env).
  - The local fact I(fact) is the index (C(current), C(previous), C(current_generation),
    C(previous_generation), C(current_args), C(previous_args), C(history), C(generations)),
    written atomically.
  - I(state=record) keeps the files at I(unit_path) and I(env_path) as a release and makes it
    C(current) (the old current becomes C(previous)); the history keeps I(keep) ids.
  - I(state=resolve) finds I(target) (C(current), C(previous) or an id) and returns its
    generation and its own args; fails, naming the fix, when it is not recorded or its copies are gone.
  - I(state=mark_current) makes I(target) current after a restore, with its own generation and args.
  - I(state=list) returns the index and the releases it names; I(state=protected) the ml_env
    generations of every release the index names.
  - In check mode C(record) and C(mark_current) report C(changed) and write nothing; the other
    states only read.
options:
  state:
    description: What to do.
    type: str
    choices: [record, resolve, mark_current, list, protected]
    default: list
  release_dir:
    description: Directory holding one subdirectory per release.
    type: path
    default: /var/lib/sglang-deploy/releases
  fact:
    description: The index (a local fact).
    type: path
    default: /etc/ansible/facts.d/sglang_release.fact
  unit_path:
    description: The unit file in place (I(state=record)).
    type: path
  env_path:
    description: The environment file in place (I(state=record)).
    type: path
  generation:
    description:
      - The ml_env generation the environment file names (I(state=record)). Empty reads it from
        the file's C(SGLANG_DEPLOY_ML_ENV) line; a different name there is refused.
    type: str
    default: ""
  args:
    description: The normalised launch flags (I(state=record)); secret flags are never written.
    type: dict
    default: {}
  quality:
    description:
      - A quality reference file the gate wrote (roles/sglang_verify, I(state=record)); it is moved
        into the release as C(quality.json) and follows it (restore, rollback). Empty or missing
        keeps the release's own reference, if it has one.
    type: path
    default: ""
  keep:
    description: Release ids kept in the history (I(state=record) and I(state=mark_current)).
    type: int
    default: 5
  target:
    description: C(current), C(previous) or a release id (I(state=resolve) and I(state=mark_current)).
    type: str
    default: current
author: [sglang_deploy]
"""

EXAMPLES = r"""
- name: Record the release the host serves now
  sglang.deploy.sglang_release:
    state: record
    unit_path: /etc/systemd/system/sglang.service
    env_path: /etc/sglang/sglang.env
    generation: 3f2a9c1d0e4b
    args: "{{ sglang_server_rendered_flags }}"

- name: Find the previous release
  sglang.deploy.sglang_release:
    state: resolve
    target: previous
  register: release
"""

RETURN = r"""
id:
  description: The release recorded, resolved or made current.
  type: str
  returned: record, resolve, mark_current
generation:
  description: Its ml_env generation ('' when its environment file names none).
  type: str
  returned: record, resolve, mark_current
args:
  description: Its launch flags, without secret flags ({} for a release recorded before release.json existed that is neither current nor previous).
  type: dict
  returned: record, resolve, mark_current
unit:
  description: Path of the release's unit copy.
  type: str
  returned: resolve, mark_current
env:
  description: Path of the release's environment copy.
  type: str
  returned: resolve, mark_current
state:
  description: The index as it is on the host after the call (unchanged in check mode).
  type: dict
  returned: always
releases:
  description: Every release the index names, newest first, with C(id), C(generation), C(args), C(recorded_at), C(present).
  type: list
  elements: dict
  returned: list
protected:
  description: "{generation: [release ids]}: the ml_env generations that must not be removed."
  type: dict
  returned: protected
msg:
  description: One line summary.
  type: str
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.release.state import (
    FACT, RELEASE_DIR, ReleaseStateError, env_generation, is_secret, list_releases, mark_current, protected_generations, public_args,
    read_index, record, resolve)


def run(p, check_mode):
    """The result of p["state"]; raises ReleaseStateError."""
    where, fact = p["release_dir"], p["fact"]
    if p["state"] == "record":
        missing = [name for name in ("unit_path", "env_path") if not p[name]]
        if missing:
            raise ReleaseStateError("state=record needs %s" % " and ".join(missing))
        changed, rid = record(where, fact, p["unit_path"], p["env_path"], p["generation"], p["args"], p["keep"],
                              check_mode=check_mode, quality=p["quality"])
        with open(p["env_path"], "rb") as handle:  # record() refused a generation the file contradicts
            generation = p["generation"] or env_generation(handle.read().decode("utf-8", "replace"))
        return dict(changed=changed, id=rid, generation=generation, args=public_args(p["args"]),
                    state=read_index(fact),
                    msg=("recorded release %s" if changed else "release %s is already recorded and current") % rid)
    if p["state"] == "mark_current":
        release = resolve(where, fact, p["target"])
        changed, _ = mark_current(where, fact, release["id"], p["keep"], check_mode=check_mode)
        return dict(release, changed=changed, state=read_index(fact), msg="current release: %s" % release["id"])
    if p["state"] == "resolve":
        release = resolve(where, fact, p["target"])
        return dict(release, changed=False, state=read_index(fact),
                    msg="%s release: %s (ml_env generation %s)" % (p["target"], release["id"],
                                                                   release["generation"] or "not named"))
    if p["state"] == "protected":
        protected = protected_generations(where, fact)
        return dict(changed=False, protected=protected, state=read_index(fact),
                    msg="%d protected generation(s)" % len(protected))
    index, releases = list_releases(where, fact)
    return dict(changed=False, state=index, releases=releases, msg="%d release(s) recorded" % len(releases))


ARGUMENT_SPEC = dict(
    state=dict(type="str", default="list", choices=["record", "resolve", "mark_current", "list", "protected"]),
    release_dir=dict(type="path", default=RELEASE_DIR),
    fact=dict(type="path", default=FACT),
    unit_path=dict(type="path"),
    env_path=dict(type="path"),
    generation=dict(type="str", default=""),
    args=dict(type="dict", default={}),
    keep=dict(type="int", default=5),
    quality=dict(type="path", default=""),
    target=dict(type="str", default="current"),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    # a secret flag given by mistake never shows in what the module returns (invocation included)
    module.no_log_values.update(str(value) for name, value in p["args"].items() if is_secret(name) and value)
    if p["keep"] < 1:
        module.fail_json(msg="sglang_release: keep=%d must be at least 1 (sglang_release_keep)" % p["keep"])
    try:
        module.exit_json(**run(p, module.check_mode))
    except ReleaseStateError as exc:
        module.fail_json(msg=str(exc), target=p["target"], release_dir=p["release_dir"], fact=p["fact"])


if __name__ == "__main__":
    main()

#!/usr/bin/python
"""Tell which of the server's planned files differ from what the host has, in one read-only call."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_server_files
short_description: Which of the server's files (unit, environment, keys) would a write change
description:
  - For each planned file, compares the host's file with the planned content's sha256, mode,
    owner and group (what C(ansible.builtin.template) would change), or, for C(state=absent),
    whether the file exists. One round trip for all of them, instead of one check-mode task per
    file on every run.
  - Read-only; never reports a change; runs the same in check mode.
options:
  files:
    description: The planned files.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: The file on the host.
        type: path
        required: true
      state:
        description: C(present) (compare) or C(absent) (it would be removed).
        type: str
        choices: [present, absent]
        default: present
      sha256:
        description: sha256 of the planned content (C(state=present)).
        type: str
      mode:
        description: Planned mode, octal string such as C(0644).
        type: str
      owner:
        description: Planned owner (name).
        type: str
      group:
        description: Planned group (name).
        type: str
      markers:
        description:
          - Lines that mark the file as the role's own (a line of the file starts with one of
            them).
          - "An existing file without any is reported in I(foreign): the role must not replace a
            file it did not write (a unit of the system's under the same name)."
        type: list
        elements: str
author: sglang-deploy
"""

EXAMPLES = r"""
- name: Would the unit change?
  sglang.deploy.sglang_server_files:
    files:
      - path: /etc/systemd/system/sglang.service
        sha256: "{{ lookup('ansible.builtin.template', 'sglang.service.j2') | hash('sha256') }}"
        mode: "0644"
        owner: root
        group: root
  register: pending
"""

RETURN = r"""
differ:
  description: The paths a write would change (content, mode, owner or group), or remove.
  type: list
  elements: str
  returned: always
why:
  description: For each path in I(differ), what differs (content, mode, owner, group, missing, present).
  type: dict
  returned: always
foreign:
  description: The existing files given I(markers) that carry none of them (the role did not write them).
  type: list
  elements: str
  returned: always
"""

import grp
import hashlib
import os
import pwd

from ansible.module_utils.basic import AnsibleModule


def _name(lookup, ident):
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def marked(content, markers):
    """Whether a line of ``content`` (bytes) starts with one of ``markers``."""
    lines = content.decode("utf-8", "replace").splitlines()
    return any(line.startswith(marker) for marker in markers for line in lines)


def foreign(spec):
    """Whether the host's file exists but carries none of spec's markers (no markers: never)."""
    if not spec.get("markers") or not os.path.lexists(spec["path"]):
        return False
    try:
        with open(spec["path"], "rb") as handle:
            return not marked(handle.read(), spec["markers"])
    except OSError:
        return True  # there, but not readable as the role's file


def differs(spec):
    """Why a write of spec would change the host's file ('' when it would not)."""
    path = spec["path"]
    if spec["state"] == "absent":
        return "present" if os.path.lexists(path) else ""
    try:
        st = os.lstat(path)
        with open(path, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return "missing"
    if digest != spec["sha256"]:
        return "content"
    if spec["mode"] and (st.st_mode & 0o7777) != int(spec["mode"], 8):
        return "mode"
    if spec["owner"] and _name(pwd.getpwuid, st.st_uid) != spec["owner"]:
        return "owner"
    if spec["group"] and _name(grp.getgrgid, st.st_gid) != spec["group"]:
        return "group"
    return ""


ARGUMENT_SPEC = dict(
    files=dict(type="list", elements="dict", required=True, options=dict(
        path=dict(type="path", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        sha256=dict(type="str"),
        mode=dict(type="str"),
        owner=dict(type="str"),
        group=dict(type="str"),
        markers=dict(type="list", elements="str"),
    )),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    differ, why, alien = [], {}, []
    for spec in module.params["files"]:
        if spec["state"] == "present" and not spec["sha256"]:
            module.fail_json(msg=f"{spec['path']}: sha256 is required for a present file")
        reason = differs(spec)
        if reason:
            differ.append(spec["path"])
            why[spec["path"]] = reason
        if foreign(spec):
            alien.append(spec["path"])
    module.exit_json(changed=False, differ=differ, why=why, foreign=alien)


if __name__ == "__main__":
    main()

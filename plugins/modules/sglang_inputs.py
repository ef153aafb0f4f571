#!/usr/bin/python
"""Refuse a role's inputs that cannot work, by their kinds (the action plugins/action/sglang_inputs.py
runs it on the controller; this file is its documentation)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_inputs
short_description: Refuse a role's inputs that cannot work, by the kind each option has
description:
  - Judges every option of a role that the host defines by its kind (roles/<role>/meta/input_kinds.yml; the
    catalogue of kinds is plugins/module_utils/inputs/), then the role's cross-checks, on the controller. No
    host is contacted.
  - Each refusal is one line naming the host, the variable (and the part of it), the rule, what is wrong and
    the fix. A secret's value is never quoted.
  - The first task of every entry point of every role (tag C(always)), and playbooks/lint.yml for every role
    at once (O(roles), O(report)).
options:
  role:
    description: The role whose kinds file judges the host's variables. Default the role the task is in.
    type: str
  roles:
    description: Several roles at once (the lint); overrides O(role).
    type: list
    elements: str
  report:
    description: Return the refusals (C(refusals), C(findings)) without failing.
    type: bool
    default: false
author: sglang-deploy
"""

EXAMPLES = r"""
- name: Refuse this role's inputs that cannot work (before anything is touched)
  sglang.deploy.sglang_inputs:
  tags: [always]

- name: Judge every role's inputs of this host (the lint)
  sglang.deploy.sglang_inputs:
    roles: [sglang_server, sglang_firewall]
    report: true
"""

RETURN = r"""
refusals:
  description: 'One line per refused input: "host: variable [rule] message Fix: fix".' 
  type: list
  returned: always
findings:
  description: The refusals as the lint's findings (rule, severity, flag, message, fix, source).
  type: list
  returned: always
checked:
  description: The roles whose kinds judged the host.
  type: list
  returned: always
"""

ARGUMENT_SPEC = {
    "role": {"type": "str"},
    "roles": {"type": "list", "elements": "str"},
    "report": {"type": "bool", "default": False},
}


def main():
    from ansible.module_utils.basic import AnsibleModule  # pylint: disable=import-outside-toplevel
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="sglang.deploy.sglang_inputs runs on the controller (its action plugin)")


if __name__ == "__main__":
    main()

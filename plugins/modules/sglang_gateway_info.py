#!/usr/bin/python
# -*- coding: utf-8 -*-
# PLACEHOLDER of the gateway branch's module: deploy.yml's two listing tasks call it by this
# interface so that the playbook parses; that branch's module replaces this file.

DOCUMENTATION = r"""
---
module: sglang_gateway_info
short_description: List the workers of the gateway (placeholder; the gateway branch implements it)
description:
  - Interface that deploy.yml's rollout uses, C(workers) as C([{url, healthy}]). This placeholder
    fails with a message saying so; it is replaced by the module of the gateway branch.
options:
  gateway_url: {description: Base URL of the gateway., type: str, required: true}
  api_key: {description: The gateway's control-plane key., type: str, no_log: true}
author: [sglang_deploy]
"""

EXAMPLES = r"""
- name: List the gateway's workers
  sglang.deploy.sglang_gateway_info:
    gateway_url: http://gateway.example:30000
  delegate_to: localhost
  register: listing
"""

RETURN = r"""
workers: {description: "The workers: [{url, healthy}].", returned: success, type: list, elements: dict}
"""

from ansible.module_utils.basic import AnsibleModule

ARGUMENT_SPEC = dict(
    gateway_url=dict(type="str", required=True),
    api_key=dict(type="str", no_log=True),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="sglang_gateway_info is a placeholder on this branch: the gateway branch's module "
                         "lists the workers; until it is merged, leave sglang_gateway_url empty")


if __name__ == "__main__":
    main()

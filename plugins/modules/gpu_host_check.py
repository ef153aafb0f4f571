#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: gpu_host_check
short_description: Compare gpu_host_facts with what the inventory expects of the host
description:
  - Fails, naming the variable, the expected and the found value, when the host does not match
    (GPU model, count, SM, driver branch, open kernel module, no GPU at all).
  - Emits Ansible warnings (not failures) for what only slows things down (IOMMU translating
    GPU DMA, PCIe ACS redirect, a PCIe link below its maximum).
  - Pure comparison (plugins/module_utils/gpu/host_verdict.py evaluate()); never changes anything.
options:
  facts:
    description: The gpu_host_facts dict returned by gpu_host_facts.
    type: dict
    required: true
  expected_gpu_name:
    description: Substring or regular expression every GPU name must match; empty skips.
    type: str
    default: ""
  expected_gpu_count:
    description: Exact number of GPUs; 0 means any number >= 1.
    type: int
    default: 0
  expected_sm:
    description: Compute capability every GPU must have, e.g. "12.0"; empty skips.
    type: str
    default: ""
  min_driver_branch:
    description: Lowest acceptable driver branch (major version); 0 skips.
    type: int
    default: 0
  require_open_kernel_module:
    description: Fail when the proprietary kernel module is loaded.
    type: bool
    default: false
  cpu_test_host:
    description: CPU-only test host; every GPU check is skipped.
    type: bool
    default: false
author:
  - sglang_deploy contributors
"""

EXAMPLES = r"""
- name: Check the host against the inventory
  sglang.deploy.gpu_host_check:
    facts: "{{ gpu_host_facts }}"
    expected_gpu_count: 8
    expected_sm: "12.0"
"""

RETURN = r"""
errors:
  description: Every mismatch found (the task fails when this is not empty).
  returned: always
  type: list
  elements: str
host_warnings:
  description: Conditions that slow the host down (also shown as Ansible warnings).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.gpu.host_verdict import evaluate


ARGUMENT_SPEC = dict(
    facts=dict(type="dict", required=True),
    expected_gpu_name=dict(type="str", default=""),
    expected_gpu_count=dict(type="int", default=0),
    expected_sm=dict(type="str", default=""),
    min_driver_branch=dict(type="int", default=0),
    require_open_kernel_module=dict(type="bool", default=False),
    cpu_test_host=dict(type="bool", default=False),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    expected = {
        "gpu_name": params["expected_gpu_name"],
        "gpu_count": params["expected_gpu_count"],
        "sm": params["expected_sm"],
        "min_driver_branch": params["min_driver_branch"],
        "require_open_kernel_module": params["require_open_kernel_module"],
    }
    errors, warnings = evaluate(params["facts"], expected, params["cpu_test_host"])
    for warning in warnings:
        module.warn(warning)
    if errors:
        module.fail_json(msg="GPU host preflight failed: " + " | ".join(errors),
                         errors=errors, host_warnings=warnings)
    module.exit_json(changed=False, errors=[], host_warnings=warnings)


if __name__ == "__main__":
    main()

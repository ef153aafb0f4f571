#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: gpu_host_facts
short_description: Read an NVIDIA GPU host's driver, GPUs, topology and IOMMU/ACS state
description:
  - Runs C(nvidia-smi --query-gpu), C(nvidia-smi), C(nvidia-smi topo -m) and, where present,
    C(lspci -vvv); reads /proc/driver/nvidia/version, /proc/cmdline and the IOMMU groups in /sys.
  - Read-only apart from the local fact file (I(local_fact_dir)), written in the same call when
    its content differs; check mode gathers the same and writes nothing.
  - "Parsing lives in plugins/module_utils/ (gpu/host_nvidia.py, gpu/host_interconnect.py, wired
    up by gpu/host_gather.py): pure functions with unit tests."
options:
  nvidia_smi:
    description: Name or path of nvidia-smi.
    type: str
    default: nvidia-smi
  version_file:
    description: The driver's version file (tells the open kernel module from the proprietary one).
    type: path
    default: /proc/driver/nvidia/version
  cpu_test_host:
    description: Skip every GPU probe and report gpu_count 0 (CPU-only test hosts).
    type: bool
    default: false
  local_fact_dir:
    description:
      - Also write the facts to I(local_fact_dir)/gpu_host.fact (C(ansible_local.gpu_host) on the
        next gathering).
      - "Empty: no file."
    type: path
author:
  - sglang_deploy contributors
"""

EXAMPLES = r"""
- name: Gather GPU host facts
  sglang.deploy.gpu_host_facts:
    local_fact_dir: /etc/ansible/facts.d
  register: _gpu_host_gathered
"""

RETURN = r"""
gpu_host_facts:
  description: The facts; see the role README for every key.
  returned: always
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.gpu.host_gather import gather
from ansible_collections.sglang.deploy.plugins.module_utils.gpu.host_nvidia import ParseError
from ansible_collections.sglang.deploy.plugins.module_utils.local_fact import write_local_fact


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except (IOError, OSError):
        return None


def _readlink(path):
    try:
        return os.readlink(path)
    except (IOError, OSError):
        return None


ARGUMENT_SPEC = dict(
    nvidia_smi=dict(type="str", default="nvidia-smi"),
    version_file=dict(type="path", default="/proc/driver/nvidia/version"),
    cpu_test_host=dict(type="bool", default=False),
    local_fact_dir=dict(type="path"),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    smi = module.params["nvidia_smi"]
    if os.path.isabs(smi):
        smi_path = smi if os.access(smi, os.X_OK) else None
    else:
        smi_path = module.get_bin_path(smi, opt_dirs=["/usr/local/nvidia/bin"])
    lspci = module.get_bin_path("lspci", opt_dirs=["/usr/sbin", "/sbin"])
    modinfo = module.get_bin_path("modinfo", opt_dirs=["/usr/sbin", "/sbin"])

    def run(argv):
        return module.run_command(argv, environ_update={"LC_ALL": "C"})

    try:
        facts = gather(run, _read, _listdir, _readlink, smi_path,
                       module.params["version_file"], lspci_path=lspci, modinfo_path=modinfo,
                       cpu_test_host=module.params["cpu_test_host"])
    except ParseError as exc:
        module.fail_json(msg="gpu_host_facts: could not parse nvidia-smi output: %s. The "
                             "output format may have changed; please report it with the "
                             "command's output." % exc)
    changed = False
    if module.params["local_fact_dir"]:
        changed = write_local_fact(module.params["local_fact_dir"], "gpu_host", facts,
                                   check_mode=module.check_mode)
    module.exit_json(changed=changed, gpu_host_facts=facts)


if __name__ == "__main__":
    main()

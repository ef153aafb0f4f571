#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the host, read-only: do a new ml_env generation's prebuilt FlashInfer kernels carry the
# declared SM? The judgement is plugins/module_utils/ml_env/flashinfer.py's. Standard library only.

DOCUMENTATION = r"""
---
module: ml_env_flashinfer_arch
short_description: Refuse a generation whose prebuilt FlashInfer kernels carry nothing for the GPU's SM
description:
  - Reads the files that C(flashinfer-cubin), C(flashinfer-jit-cache) and its per-architecture
    providers (C(flashinfer-jit-cache-sm120f), flashinfer 0.7.0 and later) installed into the
    generation I(venv) (each C(*.dist-info/RECORD) under its C(lib/python*/site-packages)) and the
    GPU architectures their kernel file names carry (C(..._sm100f.cubin), C(fmhaSm103aKernel_...),
    C(jit_cache/gemm_sm120/gemm_sm120.so), C(providers/sm120f/jit_cache/...)); never a version string
    (FlashInfer #3294, flashinfer-cubin 0.6.11 carried no sm_120 kernels).
  - Fails when one of those packages is installed and no kernel file of them serves I(sm), when a
    provider is installed without the shim, or when their versions do not match
    flashinfer-python's; the message names the distribution to install. Not judged (passes, saying
    why) when I(sm) is empty or no such package is installed.
  - Reads only; never changes anything (C(changed) is always false).
options:
  venv:
    description: The generation's directory (a venv, C(ml_env_root)/<generation>).
    type: path
    required: true
  sm:
    description: The GPU's compute capability (C(ml_env_expect_sm), e.g. C("12.0")); empty judges nothing.
    type: str
    default: ""
  cuda:
    description: torch's CUDA version (C(ml_env_expect_torch_cuda), e.g. C("13.0")), for the package a refusal names.
    type: str
    default: ""
author:
  - sglang_deploy contributors
"""

EXAMPLES = r"""
- name: Check that FlashInfer's prebuilt kernels carry the GPU's SM
  sglang.deploy.ml_env_flashinfer_arch:
    venv: /root/ml-envs/0123456789ab
    sm: "12.0"
"""

RETURN = r"""
judged:
  description: Whether a verdict was reached (an SM declared and a prebuilt kernel package installed).
  type: bool
  returned: always
sm:
  description: The SM judged, normalised (C("12.0")); empty when none was declared.
  type: str
  returned: always
dists:
  description: Per installed kernel package, its C(version), C(kernels) (kernel files), C(archs) (the SMs their names carry) and C(with_sm) (files for I(sm)).
  type: dict
  returned: always
versions:
  description: The FlashInfer packages found in the generation and their versions (flashinfer-python included).
  type: dict
  returned: always
msg:
  description: The verdict in words, naming each package's architectures.
  type: str
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.ml_env.flashinfer import judge, read_records

ARGUMENT_SPEC = dict(
    venv=dict(type="path", required=True),
    sm=dict(type="str", default=""),
    cuda=dict(type="str", default=""),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    venv = module.params["venv"]
    installed = read_records(os.path.join(venv, "lib*", "python*", "site-packages"))
    try:
        verdict = judge(installed, module.params["sm"], module.params["cuda"])
    except ValueError as exc:
        module.fail_json(msg="ml_env_flashinfer_arch: sm: %s" % exc)
    result = dict(changed=False, judged=verdict["judged"], sm=verdict["sm"], dists=verdict["dists"],
                  versions={name: info["version"] for name, info in sorted(installed.items())},
                  msg=verdict["message"])
    if not verdict["ok"]:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()

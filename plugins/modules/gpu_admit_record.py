#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: gpu_admit_record
short_description: Decide whether a GPU host's admission is due, judge it, keep its record
description:
  - Computes the key of the admission's inputs (driver, CUDA, GPUs and slots, topology, IOMMU,
    ACS, ml_env generation) from I(host_facts) and I(ml_env_generation), and reads the last
    record (I(fact_dir)/gpu_admit.fact and I(state_dir)/measurement.json).
  - "Without I(measured) - the admission is due (never admitted, inputs changed, I(force)):
    returns C(due=true) and writes nothing. Not due: judges the stored measurement again
    against I(expect) (a changed profile re-judges without measuring) and rewrites the record
    when the verdict changed."
  - "With I(measured) (the JSON of files/gpu_admit_measure.py): judges it, writes the
    measurement, the local fact and, where I(textfile_dir) exists, gpu_admit.prom for the node
    exporter's textfile collector. Check mode writes nothing and reports what would change."
options:
  host_facts: {description: gpu_host_facts., type: dict, required: true}
  ml_env_generation: {description: The ml_env generation the measurement runs (and the server will run)., type: str, default: ""}
  measured: {description: The measurement to judge and record., type: dict}
  force: {description: Admission due whatever the record says., type: bool, default: false}
  expect: {description: "Figure -> {expect, tolerance} (plugins/module_utils/gpu/admit_verdict.py FIGURES).", type: dict, default: {}}
  link_min_ratio: {description: Refuse H2D/D2H under this share of what the GPU's PCIe link carries., type: float, default: 0.6}
  refuse_xids: {description: Xid codes in the kernel log that refuse the host., type: list, elements: int, default: []}
  small_bytes: {description: All-reduce size whose latency is the small-message figure., type: int, default: 32768}
  large_bytes: {description: All-reduce size whose bus bandwidth is the large-message figure., type: int, default: 268435456}
  fact_dir: {description: Local facts directory (gpu_admit.fact)., type: path, default: /etc/ansible/facts.d}
  state_dir: {description: Directory of the full measurement (measurement.json)., type: path, required: true}
  textfile_dir: {description: Node exporter textfile directory; gpu_admit.prom is written only where it exists., type: path}
author:
  - sglang_deploy contributors
"""

EXAMPLES = r"""
- name: Is an admission due?
  sglang.deploy.gpu_admit_record:
    host_facts: "{{ gpu_host_facts }}"
    ml_env_generation: "{{ gpu_admit_ml_env_generation }}"
    state_dir: /var/lib/sglang-deploy/admission
  register: _gpu_admit_state

- name: Judge the measurement and keep it
  sglang.deploy.gpu_admit_record:
    host_facts: "{{ gpu_host_facts }}"
    measured: "{{ _gpu_admit_run.stdout | from_json }}"
    expect: "{{ gpu_admit_expect }}"
    state_dir: /var/lib/sglang-deploy/admission
    textfile_dir: /var/lib/prometheus/node-exporter
"""

RETURN = r"""
due: {description: A measurement is needed (and was not given)., returned: always, type: bool}
reason: {description: Why it is due (the changed inputs, never admitted, forced)., returned: always, type: list}
key: {description: The key of the inputs., returned: always, type: str}
verdict: {description: "admitted, refusals, notes, not_measured, lines (empty while due).", returned: always, type: dict}
summary: {description: The compact figures (also in the local fact)., returned: always, type: dict}
previous_key: {description: The key of the record found before this call (null when none)., returned: always, type: str}
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.gpu.admit_summary import (
    admission_inputs, admission_key, changed_inputs, summarize, textfile)
from ansible_collections.sglang.deploy.plugins.module_utils.gpu.admit_verdict import judge
from ansible_collections.sglang.deploy.plugins.module_utils.local_fact import write_if_changed, write_local_fact
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_files import read_json


ARGUMENT_SPEC = dict(
    host_facts=dict(type="dict", required=True),
    ml_env_generation=dict(type="str", default=""),
    measured=dict(type="dict"),
    force=dict(type="bool", default=False),
    expect=dict(type="dict", default={}),
    link_min_ratio=dict(type="float", default=0.6),
    refuse_xids=dict(type="list", elements="int", default=[]),
    small_bytes=dict(type="int", default=32768),
    large_bytes=dict(type="int", default=268435456),
    fact_dir=dict(type="path", default="/etc/ansible/facts.d"),
    state_dir=dict(type="path", required=True),
    textfile_dir=dict(type="path"),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    inputs = admission_inputs(p["host_facts"], p["ml_env_generation"])
    key = admission_key(inputs)
    previous = read_json(os.path.join(p["fact_dir"], "gpu_admit.fact")) or {}
    stored_path = os.path.join(p["state_dir"], "measurement.json")
    measured = p["measured"]
    reason = ["forced (gpu_admit_force)"] if p["force"] else changed_inputs(previous.get("inputs"), inputs)
    if measured is None:
        stored = read_json(stored_path) if previous.get("key") == key else None
        if p["force"] or previous.get("key") != key or stored is None:
            if previous.get("key") == key and stored is None and not p["force"]:
                reason = ["the stored measurement %s is missing" % stored_path]
            module.exit_json(changed=False, due=True, reason=reason, key=key, verdict={},
                             summary=previous.get("summary") or {}, previous_key=previous.get("key"))
        measured, reason = stored, []
    verdict = judge(measured, p["expect"], p["host_facts"], p["link_min_ratio"], p["refuse_xids"],
                    p["small_bytes"], p["large_bytes"])
    summary = summarize(measured, verdict, p["small_bytes"], p["large_bytes"])
    record = {"schema_version": 1, "key": key, "inputs": inputs, "summary": summary,
              "verdict": {k: verdict[k] for k in ("admitted", "lines", "notes", "not_measured")}}
    changed = False
    if p["measured"] is not None:
        changed |= write_if_changed(stored_path, json.dumps(measured, indent=1, sort_keys=True) + "\n",
                                     module.check_mode)
    changed |= write_local_fact(p["fact_dir"], "gpu_admit", record, check_mode=module.check_mode)
    if p["textfile_dir"] and os.path.isdir(p["textfile_dir"]):
        changed |= write_if_changed(os.path.join(p["textfile_dir"], "gpu_admit.prom"),
                                     textfile(measured, summary, key, p["small_bytes"]), module.check_mode)
    module.exit_json(changed=changed, due=False, reason=reason, key=key, verdict=verdict, summary=summary,
                     previous_key=previous.get("key"))


if __name__ == "__main__":
    main()

#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the controller (delegate_to: localhost): the batches of deploy.yml's rollout play, held
# to a floor of healthy workers read from the gateway's listing, and the check before each batch.
# The logic: plugins/module_utils/rollout/batches.py; the why: docs/rollout-growth.md.

DOCUMENTATION = r"""
---
module: sglang_rollout_batches
short_description: Plan capacity-safe rollout batches, or decide whether the next batch may leave
description:
  - "I(mode=plan): the batch sizes for the rollout play's C(serial:) (a list of ints, their sum the
    number of I(hosts)), from the serial spec as Ansible reads it (a percentage is of all I(hosts),
    rounded down, at least 1; the list's last item repeats), each batch shrunk where taking it out
    would leave fewer healthy workers than the floor. Refused (failed) when not even one host may
    leave, or when a floor is set but there is no gateway (I(workers) not given)."
  - "I(mode=batch): right before a batch starts, whether the healthy workers outside I(hosts) are
    at least the floor; failed with the reason when they are not."
  - A host is healthy when the gateway lists its URL (I(worker_urls)) as healthy; a host the
    gateway does not list is not serving. Workers already unhealthy count against the floor.
  - "The I(idle) hosts (no server running: a fresh host, a stopped one) serve nothing, so their
    restart takes nothing out of service: they go first, all in one batch (C(order) puts them
    first), and the serial spec applies to the other hosts from its first item."
  - Reads nothing but its options; the same in check mode.
options:
  mode: {description: "C(plan): the batches; C(batch): may this batch leave now?", type: str, choices: [plan, batch], default: plan}
  hosts: {description: "plan: the pending hosts in the play's order; batch: the hosts of this batch.", type: list, elements: str, required: true}
  serial: {description: "sglang_rollout_serial: an int >= 1, a percentage C(N%) (1..100) or a non-empty list of them (plan only).", type: raw, default: 1}
  min_serving: {description: "sglang_rollout_min_serving: an int >= 0 or a percentage C(N%) of the workers the gateway lists (rounded up); 0 = no floor. In batch mode, the plan's C(floor).", type: raw, default: 0}
  workers: {description: "The gateway's listing, C([{url, healthy}]). Not given: there is no gateway.", type: list, elements: dict}
  worker_urls: {description: "Host -> its worker URL as the gateway knows it (compared normalised).", type: dict, default: {}}
  idle: {description: "plan: the pending hosts whose server is not running (first, in one batch).", type: list, elements: str, default: []}
author: [sglang_deploy]
"""

EXAMPLES = r"""
- name: Plan the batches
  sglang.deploy.sglang_rollout_batches:
    hosts: [gpu-01, gpu-02, gpu-03]
    serial: [1, "10%", "25%"]
    min_serving: "75%"
    workers: "{{ listing.workers }}"
    worker_urls: {gpu-01: "http://10.0.0.1:30000", gpu-02: "http://10.0.0.2:30000", gpu-03: "http://10.0.0.3:30000"}
  delegate_to: localhost
  run_once: true
  register: plan

- name: May this batch leave?
  sglang.deploy.sglang_rollout_batches:
    mode: batch
    hosts: "{{ ansible_play_batch }}"
    min_serving: "{{ plan.floor }}"
    workers: "{{ listing.workers }}"
    worker_urls: "{{ urls }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
batches: {description: "plan: the batch sizes, for the play's serial (sum = number of hosts; [1] when there is none).", returned: mode plan, type: list, elements: int}
order: {description: "plan: the pending hosts in the order the batches take them (the idle ones first).", returned: mode plan, type: list, elements: str}
idle: {description: "plan: the idle pending hosts, the first batch (empty when there is none).", returned: mode plan, type: list, elements: str}
shrunk: {description: plan, whether a batch was made smaller than the serial spec asks to keep the floor., returned: mode plan, type: bool}
enforced: {description: plan, whether a floor was applied (false without a gateway)., returned: mode plan, type: bool}
healthy: {description: plan, the workers the gateway lists as healthy., returned: mode plan, type: int}
ok: {description: batch, whether the batch may leave now., returned: mode batch, type: bool}
staying: {description: batch, the healthy workers outside the batch., returned: mode batch, type: int}
floor: {description: "The floor as a count of workers (a percentage resolved against fleet, rounded up).", returned: always, type: int}
fleet: {description: The workers the gateway lists (0 without a gateway)., returned: always, type: int}
msg: {description: "The plan, the decision, or why the rollout is refused: the floor (variable, value, count of workers), the healthy workers, the unhealthy or unknown ones, the fix.", returned: always, type: str}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.rollout.batches import RolloutError, check_batch, plan


ARGUMENT_SPEC = dict(
    mode=dict(type="str", choices=["plan", "batch"], default="plan"),
    hosts=dict(type="list", elements="str", required=True),
    serial=dict(type="raw", default=1),
    min_serving=dict(type="raw", default=0),
    workers=dict(type="list", elements="dict"),
    worker_urls=dict(type="dict", default={}),
    idle=dict(type="list", elements="str", default=[]),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    try:
        if p["mode"] == "plan":
            result = plan(p["hosts"], p["serial"], p["min_serving"], p["workers"], p["worker_urls"], p["idle"])
        elif p["workers"] is None:
            result = {"ok": True, "staying": 0, "floor": 0, "fleet": 0,
                      "msg": "batch %s: no gateway, the floor is not enforced" % ", ".join(p["hosts"])}
        else:
            result = check_batch(p["hosts"], p["min_serving"], p["workers"], p["worker_urls"])
    except RolloutError as exc:
        module.fail_json(msg=str(exc))
    if p["mode"] == "batch" and not result["ok"]:
        module.fail_json(**result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()

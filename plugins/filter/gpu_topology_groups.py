# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: which GPUs form each data-parallel replica of one SGLang server, from the topology
roles/gpu_host gathered (plugins/module_utils/gpu/topology_groups.py does the grouping).

- gpu_topology_groups(gpu_host_facts, tp, pp=1, dp=1): a dict with groups,
  cuda_visible_devices (the groups concatenated: SGLang gives DP rank i the visible positions
  [i*tp*pp, (i+1)*tp*pp)), numa_node_arg (one NUMA node per visible GPU, the list
  --numa-node takes), replicas (gpus, numa_node, worst_link, reason per DP rank),
  crosses_sockets, cross_socket (the sentence when no grouping keeps each group within one
  socket) and unused.

- gpu_topology_env(gpu_host_facts, flags, env): plugins/module_utils/gpu/topology_env.py's
  gpu_order: whether the server gets CUDA_VISIBLE_DEVICES in the grouped order, the variable,
  the lines that say which GPUs each DP rank got and why, and the warnings. Used by
  roles/sglang_flags (defaults/main.yml, the server's environment; tasks/model.yml, the report).

- gpu_topology_candidate_env(gpu_host_facts, flags, env, pinned): the same for a sweep
  candidate (roles/sglang_sweep/tasks/candidate.yml): the canary's own order dropped unless
  pinned, the candidate's layout grouped anew; its env is the whole environment to launch with.

gpu_topology_groups itself is not in FilterModule.filters(): no role calls it (the collection's
contract, tests/unit/test_collection_layout.py, refuses a filter that no playbook, role or
template uses); gpu_topology_env is how the grouping reaches the roles.
Unit tests: tests/unit/test_gpu_topology_groups.py.
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sglang.deploy.plugins.module_utils.gpu.topology_env import candidate_env, gpu_order
from ansible_collections.sglang.deploy.plugins.module_utils.gpu.topology_groups import (
    GroupingError, plan_groups_from_facts)


def gpu_topology_groups(facts, tp=1, pp=1, dp=1):
    if not isinstance(facts, dict):
        raise AnsibleFilterError("gpu_topology_groups expects gpu_host_facts (a dict), got %s"
                                 % type(facts).__name__)
    try:
        return plan_groups_from_facts(facts, tp, pp, dp)
    except GroupingError as exc:
        raise AnsibleFilterError("gpu_topology_groups: %s" % exc)


def gpu_topology_env(facts, flags, env=None):
    if flags is not None and not isinstance(flags, dict):
        raise AnsibleFilterError("gpu_topology_env expects the launch flags (a dict), got %s"
                                 % type(flags).__name__)
    return gpu_order(facts, flags, env)


def gpu_topology_candidate_env(facts, flags, env, pinned=False):
    if not isinstance(flags, dict) or not isinstance(env, dict):
        raise AnsibleFilterError("gpu_topology_candidate_env expects the candidate's flags and environment (dicts)")
    return candidate_env(facts, flags, env, bool(pinned))


class FilterModule(object):
    """GPU grouping for data-parallel replicas (see above)."""

    def filters(self):
        return {"gpu_topology_env": gpu_topology_env, "gpu_topology_candidate_env": gpu_topology_candidate_env}

# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: which GPUs form each data-parallel replica of one SGLang server, from the topology
roles/gpu_host gathered (plugins/module_utils/gpu_topology_groups.py does the grouping).

- gpu_topology_groups(gpu_host_facts, tp, pp=1, dp=1): a dict with groups,
  cuda_visible_devices (the groups concatenated: SGLang gives DP rank i the visible positions
  [i*tp*pp, (i+1)*tp*pp)), numa_node_arg (one NUMA node per visible GPU, the list
  --numa-node takes), replicas (gpus, numa_node, worst_link, reason per DP rank),
  crosses_sockets, cross_socket (the sentence when no grouping keeps each group within one
  socket) and unused.

Not wired into a role yet, so not yet in FilterModule.filters(): the collection's contract
(tests/unit/test_collection_layout.py, test_every_filter_of_the_collection_is_used_outside_the_tests)
refuses a filter that no playbook, role or template uses. The change that renders
CUDA_VISIBLE_DEVICES adds ``"gpu_topology_groups": gpu_topology_groups`` to filters() and calls
it as ``gpu_host_facts | sglang.deploy.gpu_topology_groups(tp=4, dp=2)``.
Unit tests: tests/unit/test_gpu_topology_groups.py.
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sglang.deploy.plugins.module_utils.gpu_topology_groups import (
    GroupingError, plan_groups_from_facts)


def gpu_topology_groups(facts, tp=1, pp=1, dp=1):
    if not isinstance(facts, dict):
        raise AnsibleFilterError("gpu_topology_groups expects gpu_host_facts (a dict), got %s"
                                 % type(facts).__name__)
    try:
        return plan_groups_from_facts(facts, tp, pp, dp)
    except GroupingError as exc:
        raise AnsibleFilterError("gpu_topology_groups: %s" % exc)


class FilterModule(object):
    """GPU grouping for data-parallel replicas; exported once a role uses it (see above)."""

    def filters(self):
        return {}

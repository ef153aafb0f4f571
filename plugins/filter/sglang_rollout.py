# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of deploy.yml's rollout (docs/rollout-growth.md):

- sglang_rollout_worker_urls(hostnames, hostvars): host -> its worker URL as the gateway knows it
  (the one reading of sglang_router_worker_url and its default: sglang_monitoring_hosts.worker_url).
- sglang_rollout_batch_ok(workers, batch, min_serving, worker_urls): whether the batch may leave
  the gateway now (the `until:` of the listing before each batch; the decision and its message:
  plugins/module_utils/sglang_rollout_batches.py check_batch, module sglang_rollout_batches).

Pure functions (tests/unit/test_sglang_rollout_batches.py).
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sglang.deploy.plugins.filter import sglang_monitoring_hosts as _hosts
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_rollout_batches as _batches


def worker_urls(hostnames, hostvars):
    """{host: worker URL} of the given hosts."""
    return {name: _hosts.worker_url(name, hostvars[name]) for name in hostnames or []}


def batch_ok(workers, batch, min_serving=0, urls=None):
    """True when the healthy workers outside `batch` are at least the floor."""
    try:
        return _batches.check_batch(batch, min_serving, workers, urls)["ok"]
    except _batches.RolloutError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    """sglang rollout filters."""

    def filters(self):
        return {
            "sglang_rollout_worker_urls": worker_urls,
            "sglang_rollout_batch_ok": batch_ok,
        }

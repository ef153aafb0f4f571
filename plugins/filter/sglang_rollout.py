# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of deploy.yml's rollout (docs/rollout-growth.md):

- sglang_rollout_worker_urls(hostnames, hostvars): host -> its worker URL as the gateway knows it
  (the one reading of sglang_gateway_worker_url and its default: sglang_monitoring_hosts.worker_url).

Pure functions (tests/unit/test_sglang_rollout_batches.py).
"""

from ansible_collections.sglang.deploy.plugins.filter import sglang_monitoring_hosts as _hosts


def worker_urls(hostnames, hostvars):
    """{host: worker URL} of the given hosts."""
    return {name: _hosts.worker_url(name, hostvars[name]) for name in hostnames or []}


class FilterModule(object):
    """sglang rollout filters."""

    def filters(self):
        return {
            "sglang_rollout_worker_urls": worker_urls,
        }

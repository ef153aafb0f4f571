# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of deploy.yml's rollout (docs/rollout-growth.md):

- sglang_rollout_worker_urls(hostnames, hostvars): host -> its worker URL as the gateway knows it
  (the one reading of sglang_gateway_worker_url and its default: worker_url of monitoring/hosts.py).

- sglang_gateway_urls(hostnames, hostvars, default_port): the base URL of each gateway host
  (http://<ansible_host or name>:<its sglang_gateway_port, else default_port>), in the group's
  order: the default of roles/sglang_gateway's sglang_gateway_urls, the one answer to "which
  gateways front the SGLang hosts".

Pure functions (tests/unit/test_sglang_rollout_batches.py).
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sglang.deploy.plugins.module_utils.monitoring import hosts as _hosts


def worker_urls(hostnames, hostvars):
    """{host: worker URL} of the given hosts."""
    return {name: _hosts.worker_url(name, hostvars[name]) for name in hostnames or []}


def gateway_urls(hostnames, hostvars, default_port=30080):
    """[base URL] of the given gateway hosts, in their order."""
    out = []
    for name in hostnames or []:
        hv = hostvars[name]
        port = hv.get("sglang_gateway_port", default_port)
        try:
            port = int(port)
        except (TypeError, ValueError):
            raise AnsibleFilterError("%s: sglang_gateway_port %r is not a port number" % (name, port)) from None
        out.append("http://%s:%d" % (hv.get("ansible_host") or name, port))
    return out

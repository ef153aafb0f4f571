"""Filters of playbooks/verify_endpoint.yml over plugins/module_utils/sglang_endpoint.py."""

from ansible.errors import AnsibleFilterError
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_endpoint as _endpoint


def _wrap(fn):
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _endpoint.EndpointError as exc:
            raise AnsibleFilterError(str(exc))
    call.__doc__ = fn.__doc__
    return call


class FilterModule:
    def filters(self):
        return {
            "sglang_endpoint_id": _wrap(_endpoint.endpoint_id),
            "sglang_endpoint_base_url": _wrap(_endpoint.base_url),
            "sglang_endpoint_launch_flags": _wrap(_endpoint.launch_flags),
        }

# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter of the sglang_sweep role: the secret values of a sweep (API keys, credential variables
such as HF_TOKEN, a key inside a list value) among the canary's flags and environment and the
sweep file's base, axes and candidates, for the ``secrets`` option of sglang_sweep_plan and
sglang_sweep_record. Ansible then masks them in everything those modules return and log, their
arguments at -vvv included (plan_secrets in plugins/module_utils/sweep/redact.py; the
redaction there decides what is secret).

original | sglang_sweep_secrets(base, axes, candidates, catalog_options) -> [values], where
`original` is {flags, env}: the canary's current configuration, as the plan gets it.
"""

from ansible_collections.sglang.deploy.plugins.module_utils.sweep.redact import plan_secrets


def sweep_secrets(original, base=None, axes=None, candidates=None, options=None):
    original = original or {}
    return plan_secrets(original.get("flags"), original.get("env"), base, axes, candidates, options)


class FilterModule(object):
    """sglang_sweep secrets filter."""

    def filters(self):
        return {"sglang_sweep_secrets": sweep_secrets}

"""``sglang_server_env`` as a task's ``environment:`` (tasks/host_validate.yml runs the on-host
check with the server's environment).

The unit's EnvironmentFile is written from the same mapping by ``sglang_env_lines``
(sglang_flags.py); both drop ``null`` and write booleans as "1"/"0".
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def sglang_flags_env_dict(env) -> dict:
    """``sglang_server_env`` as a task ``environment:``: null dropped, values as strings
    (``true`` -> "1", ``false`` -> "0", as in the unit's EnvironmentFile)."""
    if env is None:
        return {}
    if not isinstance(env, dict):
        raise AnsibleFilterError("sglang_server_env must be a mapping of NAME -> value")
    out = {}
    for key, value in env.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "1" if value else "0"
        out[str(key)] = str(value)
    return out


class FilterModule:
    def filters(self):
        return {"sglang_flags_env_dict": sglang_flags_env_dict}

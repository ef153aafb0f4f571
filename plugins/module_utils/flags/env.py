"""``sglang_server_env`` as a task's ``environment:`` (tasks/host_validate.yml runs the on-host
check with the server's environment).

The unit's EnvironmentFile is written from the same mapping by ``sglang_env_lines``
(flags/render.py); both drop ``null`` and write booleans as "1"/"0".
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.sglang.deploy.plugins.module_utils.sglang_secrets import is_secret_env


def sglang_flags_env_dict(env, credentials=True) -> dict:
    """``sglang_server_env`` as a task ``environment:``: null dropped, values as strings
    (``true`` -> "1", ``false`` -> "0", as in the unit's EnvironmentFile). With
    ``credentials=False`` the variables whose value is a credential (``HF_TOKEN``, ``*_API_KEY``:
    ``is_secret_env``) are left out: a task's environment is part of the command line Ansible
    runs on the host (``ps`` shows it there) and prints at ``-vvv``."""
    if env is None:
        return {}
    if not isinstance(env, dict):
        raise AnsibleFilterError("sglang_server_env must be a mapping of NAME -> value")
    out = {}
    for key, value in env.items():
        if value is None or (not credentials and is_secret_env(key)):
            continue
        if isinstance(value, bool):
            value = "1" if value else "0"
        out[str(key)] = str(value)
    return out

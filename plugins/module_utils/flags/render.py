"""Render SGLang launch flags and environment from inventory data.

The flag model (``sglang_server_args``: names, values, argv, systemd quoting) is
plugins/module_utils/flags/model.py at the repository's root, shared with the modules that run
on the hosts; these filters expose it to templates and turn its errors into filter errors.

The environment (``sglang_server_env``) is a mapping of variable name to value; ``null``
omits the variable.
"""

from __future__ import annotations

import functools
import re

from ansible.errors import AnsibleFilterError

_ENV_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# the one flag model, shared with the modules (plugins/module_utils/flags/model.py)
from ansible_collections.sglang.deploy.plugins.module_utils.flags import model as MODEL
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as GUARD


def _filter(func):
    """The model's function, raising AnsibleFilterError with the model's message."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except MODEL.FlagModelError as exc:
            raise AnsibleFilterError(str(exc)) from exc
    return wrapper


normalize_flag = _filter(MODEL.normalize_flag)
sglang_normalize_args = _filter(MODEL.normalize_args)
sglang_argv = _filter(MODEL.argv)
systemd_quote = MODEL.systemd_quote
sglang_exec_lines = MODEL.exec_lines


def sglang_env_lines(env) -> list:
    """``KEY="value"`` lines for a systemd EnvironmentFile, sorted by name."""
    if env is None:
        return []
    if not isinstance(env, dict):
        raise AnsibleFilterError(
            f"sglang_server_env must be a mapping of NAME -> value, got {type(env).__name__}"
        )
    lines = []
    for key in sorted(env):
        value = env[key]
        if not isinstance(key, str) or not _ENV_RE.fullmatch(key):
            raise AnsibleFilterError(
                f"sglang_server_env: {key!r} is not a valid environment variable name "
                "(letters, digits and '_', not starting with a digit)"
            )
        if value is None:
            continue
        if isinstance(value, bool):
            value = "1" if value else "0"
        text = str(value)
        if GUARD.control_char(text):  # a line break (\n, \r, U+2028, U+0085...) splits the file's line
            raise AnsibleFilterError(f"sglang_server_env['{key}'] contains a newline or another control "
                                     f"character ({GUARD.control_char(text)}); not allowed")
        text = text.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'{key}="{text}"')
    return lines

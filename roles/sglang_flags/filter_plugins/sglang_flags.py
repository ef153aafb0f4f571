"""Render SGLang launch flags and environment from inventory data.

The flag model (inventory variable ``sglang_server_args``) is a mapping of flag name to value:

* the name is the long option without its leading dashes (``model-path``); underscores are
  accepted and folded to dashes, so ``model_path`` and ``model-path`` are the same flag and
  giving both is an error;
* ``true`` renders a bare flag (``--trust-remote-code``);
* ``false`` or ``null`` omits the flag;
* a list renders the flag once followed by every item (argparse ``nargs``);
* a mapping renders as one JSON argument (``--json-model-override-args '{"a": 1}'``);
* anything else is rendered with ``str()``.

The environment (``sglang_server_env``) is a mapping of variable name to value; ``null``
omits the variable.
"""

from __future__ import annotations

import json
import re

from ansible.errors import AnsibleFilterError

_FLAG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# characters that never need quoting in a systemd command line
_SYSTEMD_SAFE = re.compile(r"^[A-Za-z0-9_@+=:,./-]+$")


def normalize_flag(name) -> str:
    """``--model_path`` / ``model-path`` -> ``model-path``; rejects what argparse never accepts."""
    if not isinstance(name, str):
        raise AnsibleFilterError(
            f"sglang_server_args: flag name {name!r} is not a string; "
            "write the long option without dashes, e.g. 'model-path'"
        )
    flag = name.strip().lstrip("-").replace("_", "-")
    if not _FLAG_RE.match(flag):
        raise AnsibleFilterError(
            f"sglang_server_args: {name!r} is not a valid flag name; use the long option "
            "without leading dashes, letters, digits and '-' only (e.g. 'model-path')"
        )
    return flag


def _scalar(flag: str, value) -> str:
    if isinstance(value, bool):  # only reachable inside lists
        return "true" if value else "false"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    if isinstance(value, (list, tuple)):
        raise AnsibleFilterError(
            f"sglang_server_args['{flag}']: nested lists are not supported; give a flat list"
        )
    return str(value)


def sglang_normalize_args(args) -> dict:
    """Fold flag names and drop omitted flags; keeps the inventory's order."""
    if args is None:
        return {}
    if not isinstance(args, dict):
        raise AnsibleFilterError(
            f"sglang_server_args must be a mapping of flag -> value, got {type(args).__name__}"
        )
    out: dict = {}
    seen: dict = {}
    for name, value in args.items():
        flag = normalize_flag(name)
        if flag in seen:
            raise AnsibleFilterError(
                f"sglang_server_args: {name!r} and {seen[flag]!r} are the same flag --{flag}; keep one"
            )
        seen[flag] = name
        if value is None or value is False:
            continue
        out[flag] = value
    return out


def sglang_argv(args) -> list:
    """The argv tokens after ``-m sglang.launch_server``."""
    argv: list = []
    for flag, value in sglang_normalize_args(args).items():
        argv.append(f"--{flag}")
        if value is True:
            continue
        if isinstance(value, (list, tuple)):
            if not value:
                raise AnsibleFilterError(
                    f"sglang_server_args['{flag}'] is an empty list; use null to omit the flag"
                )
            argv.extend(_scalar(flag, v) for v in value)
        else:
            argv.append(_scalar(flag, value))
    return argv


def systemd_quote(token) -> str:
    """Quote one word for a systemd ExecStart= line (``%`` and ``$`` escaped)."""
    token = str(token)
    escaped = token.replace("%", "%%").replace("$", "$$")
    if token and _SYSTEMD_SAFE.match(token):
        return escaped
    escaped = escaped.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def sglang_exec_lines(argv) -> list:
    """Group argv into one line per flag (flag + its values), systemd-quoted."""
    lines: list = []
    for token in argv:
        quoted = systemd_quote(token)
        if str(token).startswith("--") or not lines:
            lines.append(quoted)
        else:
            lines[-1] += " " + quoted
    return lines


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
        if not isinstance(key, str) or not _ENV_RE.match(key):
            raise AnsibleFilterError(
                f"sglang_server_env: {key!r} is not a valid environment variable name "
                "(letters, digits and '_', not starting with a digit)"
            )
        if value is None:
            continue
        if isinstance(value, bool):
            value = "1" if value else "0"
        text = str(value)
        if "\n" in text:
            raise AnsibleFilterError(f"sglang_server_env['{key}'] contains a newline; not allowed")
        text = text.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'{key}="{text}"')
    return lines


class FilterModule:
    def filters(self):
        return {
            "sglang_normalize_args": sglang_normalize_args,
            "sglang_argv": sglang_argv,
            "sglang_exec_lines": sglang_exec_lines,
            "sglang_env_lines": sglang_env_lines,
            "systemd_quote": systemd_quote,
        }

"""A restored release passes the render checks a new one passes (docs/security.md, "Who refuses
what"): roles/sglang_release puts a recorded unit and environment file back as they are, so before
anything is written their text is read back into what the server's render guard judges (the
flags of ExecStart, the unit's user, directories, sandbox settings, the environment) and judged by
it (plugins/module_utils/flags/server_guard.py) and by sglang_server's kinds. A release recorded
before a check existed (``--enable-custom-logit-processor``, a ReadWritePaths= in a home) is
refused as a new deploy of it would be. Controller only (the filter sglang_release_restore_refusals)."""

from __future__ import annotations

import re
import shlex

from ansible_collections.sglang.deploy.plugins.module_utils.flags import server_guard as _guard
from ansible_collections.sglang.deploy.plugins.module_utils.inputs import catalogue as _catalogue

LAUNCH = ("-m", "sglang.launch_server")
# the unit's settings read back into sglang_server's variables (templates/sglang.service.j2)
_SINGLE = {"User": "sglang_server_user", "WorkingDirectory": "sglang_server_workdir", "UMask": "sglang_server_umask"}
_LISTED = {"ReadWritePaths": "sglang_server_read_write_paths", "DeviceAllow": "sglang_server_device_allow"}


def _directives(text):
    """[(key, value)] of a unit file, continuation lines joined."""
    out, pending = [], ""
    for raw in str(text or "").splitlines():
        line = pending + raw
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if "=" in line and not line.lstrip().startswith(("#", ";", "[")):
            key, value = line.split("=", 1)
            out.append((key.strip(), value.strip()))
    return out


def _flags(argv):
    """{flag: value} from the argv after ``-m sglang.launch_server`` (a bare flag is true, several
    values a list), the keys file's own --config left out."""
    tokens = argv[argv.index(LAUNCH[1]) + 1:] if LAUNCH[1] in argv else []
    flags, current = {}, None
    for token in tokens:
        if token.startswith("--"):
            current = token[2:]
            flags[current] = True
        elif current is not None:
            flags[current] = token if flags[current] is True else (
                flags[current] + [token] if isinstance(flags[current], list) else [flags[current], token])
    config = flags.get("config")
    if isinstance(config, str) and config.endswith("-keys.yaml"):
        del flags["config"]  # sglang_server gives its keys file so; judged as the keys are, not as a flag
    return flags


def restored_unit(unit_text, env_text) -> dict:
    """What a recorded unit and environment file render: {flags, env, unit: sglang_server's
    variables as the unit holds them}."""
    unit, env, launcher = {}, {}, ""
    for key, value in _directives(unit_text):
        if key == "ExecStart":
            words = [w.replace("%%", "%").replace("$$", "$") for w in shlex.split(value)]
            # the server's interpreter: the word before -m sglang.launch_server; since the
            # subreaper (roles/sglang_server/files/sglang_subreaper.py) the first word runs it
            at = next((i for i in range(1, len(words)) if tuple(words[i:i + 2]) == LAUNCH), 0)
            unit["sglang_server_python"] = words[at - 1] if at else (words[0] if words else "")
            launcher = words[0] if words else ""
            unit["flags"] = _flags(words)
        elif key in _SINGLE:
            unit[_SINGLE[key]] = value
        elif key in _LISTED:
            unit.setdefault(_LISTED[key], []).append(value)
        elif key == "CapabilityBoundingSet":
            unit["sglang_server_capabilities"] = value.split()
    for line in str(env_text or "").splitlines():
        match = re.match(r'^([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"$', line)
        if match:
            env[match.group(1)] = re.sub(r"\\(.)", r"\1", match.group(2))
    flags = unit.pop("flags", {})
    return {"flags": flags, "env": env, "unit": unit, "launcher": launcher or unit.get("sglang_server_python", "")}


def sglang_release_restore_refusals(release, context=None) -> list:
    """The lines the server's render guard and sglang_server's kinds refuse in a recorded release
    (``release``: {id, unit_text, env_text}); ``context``: the render guard's other inputs as the
    host has them now (allow_weaker, key_problems, key_lengths, allow_no_key, firewall_enabled,
    open_bind_ok). [] when it may be put back."""
    release = release if isinstance(release, dict) else {}
    read = restored_unit(release.get("unit_text"), release.get("env_text"))
    paths = read["unit"].get("sglang_server_read_write_paths") or []
    unit = dict(read["unit"], sglang_server_read_write_paths=[p for p in paths
                                                              if p != read["unit"].get("sglang_server_workdir")])
    lines = _guard.sglang_server_refusals(dict(context or {}, flags=read["flags"], env=read["env"], unit=unit))
    for python in dict.fromkeys([unit.get("sglang_server_python"), read["launcher"]]):
        lines += _catalogue.refusals("sglang_server", {"sglang_server_python": python})
    return [f"release {release.get('id', '?')}: {line}" for line in lines]

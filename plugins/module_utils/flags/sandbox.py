"""The hardened unit's settings that weaken its sandbox (docs/security.md, "Weakening the
sandbox"), judged offline.

roles/sglang_server's defaults give the sandbox of templates/sglang.service.j2: hardening on, no
capability, UMask 0077, only the NVIDIA character devices (read and write), nothing writable
outside its own directories. A host that changes one of these weakens it; lint refuses that
unless the inventory names the setting and why in ``sglang_server_allow_weaker_sandbox``
(setting -> reason), which turns the error into a warning. The weakenings that are active
(named there) are exported as ``sglang_flags_sandbox_weakenings`` (roles/sglang_flags/tasks/
model.yml) and listed in the verification report (roles/sglang_verify).

A umask that leaves files world-writable is refused whatever the override says.
"""

from __future__ import annotations

import re

from ansible_collections.sglang.deploy.plugins.module_utils.flags import owned as _owned

SOURCE = "plugins/module_utils/flags/sandbox.py"
OVERRIDE = "sglang_server_allow_weaker_sandbox"
# the settings judged here (roles/sglang_server/defaults/main.yml, "hardening")
SETTINGS = ("sglang_server_hardening", "sglang_server_read_write_paths", "sglang_server_device_allow",
            "sglang_server_capabilities", "sglang_server_umask")
# DeviceAllow= entries that need no override: the NVIDIA driver's character devices (a char-
# group or a /dev/nvidia* path), read and/or write. An entry without a mode is r, w and m (systemd
# src/core/load-fragment.c config_parse_device_allow, src/core/cgroup.c: no mode = all).
_NVIDIA_DEVICE = re.compile(r"^(?:char-nvidia[A-Za-z0-9_-]*|/dev/nvidia[A-Za-z0-9/_-]*) [rw]{1,2}$")
_MASK_ALL = 0o077


def _umask(value):
    try:
        return int(str(value), 8)
    except ValueError:
        return None  # not octal: input-umask (flags/inputs.py) reports it


def _bool(value):
    return value if isinstance(value, bool) else str(value).strip().lower() in ("true", "yes", "1", "on")


def _items(value):
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


def weakenings(sandbox) -> list:
    """[{setting, value, why}]: each way ``sandbox`` (setting -> value as the host sets it;
    None = the role's default) weakens the unit's sandbox."""
    sandbox = sandbox or {}
    out = []
    hardening = sandbox.get("sglang_server_hardening")
    if hardening is not None and not _bool(hardening):
        out.append(("sglang_server_hardening", hardening, "the unit runs without any sandbox"))
    for path in _items(sandbox.get("sglang_server_read_write_paths")):
        found = _owned.protected(path[1:] if path[:1] in "-+" else path)
        if found:
            out.append(("sglang_server_read_write_paths", path,
                        f"the server may write {found} (ReadWritePaths= undoes ProtectSystem=strict there)"))
    for device in _items(sandbox.get("sglang_server_device_allow")):
        if not _NVIDIA_DEVICE.match(device):
            out.append(("sglang_server_device_allow", device,
                        "a device beyond the NVIDIA driver's character devices, or the right to create "
                        "device nodes (m; an entry without a mode is rwm)"))
    for capability in _items(sandbox.get("sglang_server_capabilities")):
        out.append(("sglang_server_capabilities", capability, "the server holds this capability (as root)"))
    umask = _umask(sandbox.get("sglang_server_umask")) if sandbox.get("sglang_server_umask") is not None else None
    if umask is not None and umask & _MASK_ALL != _MASK_ALL:
        out.append(("sglang_server_umask", sandbox["sglang_server_umask"],
                    "files the server creates are readable or writable by others (more permissive than 0077)"))
    return [{"setting": s, "value": v, "why": why} for s, v, why in out]


def _world_writable(sandbox):
    value = (sandbox or {}).get("sglang_server_umask")
    umask = _umask(value) if value is not None else None
    return umask is not None and not umask & 0o002


def _reasons(allow):
    """The override as setting -> reason (a mapping; anything else is reported)."""
    return allow if isinstance(allow, dict) else {}


def _finding(severity, setting, value, message, fix, rule="sandbox-weakened"):
    return {"rule": rule, "severity": severity, "status": "violation" if severity == "error" else "waived",
            "flag": setting, "value": value, "message": message, "fix": fix, "source": SOURCE}


def sglang_flags_sandbox_findings(sandbox, allow=None) -> list:
    """Lint findings: an error per weakening the override does not name (a warning, with the
    reason, per one it names), an error for a world-writable umask, and errors for an override
    that is not a mapping of known setting -> non-empty reason."""
    reasons, findings = _reasons(allow), []
    if allow not in (None, {}) and not isinstance(allow, dict):
        findings.append(_finding("error", OVERRIDE, allow, f"{allow!r} is not a mapping of setting -> reason",
                                 "write it as {sglang_server_capabilities: 'why this host needs it'}"))
    for setting, reason in reasons.items():
        if setting not in SETTINGS:
            findings.append(_finding("error", OVERRIDE, setting, f"{setting!r} is not a sandbox setting",
                                     "name one of " + ", ".join(SETTINGS)))
        elif not str(reason or "").strip():
            findings.append(_finding("error", OVERRIDE, setting, f"{setting} has no reason",
                                     "say why this host needs the weaker sandbox"))
    if _world_writable(sandbox):
        value = sandbox["sglang_server_umask"]
        findings.append(_finding(
            "error", "sglang_server_umask", value, f"UMask={value} leaves the files the server creates "
            "world-writable: any local user could change its caches (compiled kernels it loads)",
            "mask at least 002 (the default 0077 keeps them the server's own)", "sandbox-umask-world-writable"))
    for weak in weakenings(sandbox):
        reason = str(reasons.get(weak["setting"]) or "").strip()
        if reason:
            findings.append(_finding("warning", weak["setting"], weak["value"],
                                     f"{weak['value']!r}: {weak['why']}; accepted in {OVERRIDE}: {reason} "
                                     "(the verification report lists it)", ""))
        else:
            findings.append(_finding(
                "error", weak["setting"], weak["value"], f"{weak['value']!r} weakens the unit's sandbox: {weak['why']}",
                f"keep the role's default, or name it with the reason in {OVERRIDE} "
                f"({{{weak['setting']}: 'why this host needs it'}}; docs/security.md)"))
    return findings


def sglang_flags_sandbox_active(sandbox, allow=None) -> list:
    """The active weakenings the override names, for the verification report:
    [{setting, value, why, reason}]."""
    reasons = _reasons(allow)
    return [dict(w, reason=str(reasons[w["setting"]]).strip()) for w in weakenings(sandbox)
            if str(reasons.get(w["setting"]) or "").strip()]

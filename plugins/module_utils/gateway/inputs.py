"""What roles/sglang_gateway refuses before it writes smg's unit, options and keys
(tasks/check.yml; docs/security.md, "Who refuses what"): the gateway under the server's rules.

* ``sglang_gateway_service``: a unit name of its own (not ``--help`` or ``../x``), not one the
  system has (RESERVED_UNITS of flags/owned.py), not the server's or the firewall's unit;
* ``sglang_gateway_venv``, ``sglang_gateway_config_dir``, ``sglang_gateway_python``: absolute, no
  ``..``, no control character or line separator (a newline would start an ``ExecStartPre=`` of
  smg's unit); the config dir, which the role creates and chmods, not a system directory;
* ``sglang_gateway_user``: a user name, not root (the unit's User= and Group=);
* ``sglang_gateway_extra_args``: a mapping whose names are not a credential option of smg 1.13 by
  any prefix (argparse takes an unambiguous one: ``control-plane-api``, ``api-k``), whose values
  carry no control character and no item that argparse would read as an option (``[x,
  --api-key, K]``). roles/sglang_gateway/files/smg_launcher.py refuses them again on the host,
  with smg's own parser (parse_router_args); and, where the role has a catalog of the pinned
  ``sglang_gateway_version`` (plugins/module_utils/gateway/options.py), no name that is not
  one of its options.
"""

from __future__ import annotations

from ansible_collections.sglang.deploy.plugins.module_utils.flags import owned as _owned
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as _guard
from ansible_collections.sglang.deploy.plugins.module_utils.gateway import options as _options

SOURCE = "plugins/module_utils/gateway/inputs.py"
PATHS = ("sglang_gateway_venv", "sglang_gateway_config_dir", "sglang_gateway_python")
_SMG_KEYS = tuple(o[2:] for o in _guard.SMG_KEY_OPTIONS)


def _extra_args_problems(extra, version=None):
    if extra in (None, ""):
        return []
    if not isinstance(extra, dict):
        return [("sglang_gateway_extra_args", "input-gateway-args", f"is a {type(extra).__name__}, not a mapping",
                 "write it as {option-without-dashes: value}")]
    out = []
    known = (_options.catalog(version) or {}).get("options")
    for name, value in extra.items():
        var = f"sglang_gateway_extra_args[{str(name)!r}]"
        key = _guard.refused_option(name, _SMG_KEYS)
        items = [str(v) for v in (value if isinstance(value, (list, tuple)) else [value]) if v is not True]
        if _guard.control_char(name) or any(_guard.control_char(v) for v in items):
            out.append((var, "input-control-char", "contains a control character or line separator",
                        "remove it"))
        elif key:
            out.append((var, "input-key-flag", f"is read by smg 1.13 as --{key}, a credential option",
                        "keys go into sglang_gateway_api_key / sglang_gateway_admin_api_key (the credential file)"))
        elif known is not None and _options.unknown(name, known):
            out.append((var, "input-gateway-option", f"is not an option of smg {version} ({_options.unknown(name, known)}; "
                        f"{_options.SOURCE.format(version=version)})", "use an option of the pinned smg"))
        elif _guard.dash_value(items) and _guard.dash_value(items) != "-":
            out.append((var, "input-dash-value", f"the value {_guard.dash_value(items)!r} starts with '-': smg's "
                        "argparse reads it as an option", "remove it; a value may start with '-' only as a number"))
    return out


def sglang_gateway_refusals(gateway) -> list:
    """Lines "variable [rule] message Fix: fix" for every refused input of ``gateway`` (the role's
    variables by name, and ``foreign``: the server's and the firewall's unit names); []: none."""
    gateway = gateway if isinstance(gateway, dict) else {}
    found = []
    service = gateway.get("sglang_gateway_service")
    if service is not None:
        problem = _guard.unit_name_problem(service, _owned.RESERVED_UNITS,
                                           gateway.get("foreign") or _guard.OTHER_UNITS["sglang_gateway_service"])
        if problem:
            found.append(("sglang_gateway_service", "input-unit-name", f"{str(service)!r} {problem}",
                          "a name of its own, e.g. smg"))
    for name in PATHS:
        value = gateway.get(name)
        if value is None:
            continue
        problem = _guard.path_problem(value)
        if not problem and name == "sglang_gateway_config_dir" and _owned.system_dir(value):
            problem = f"is the system directory {_owned.system_dir(value)}: the role creates and chmods it"
        if problem:
            found.append((name, "input-path", f"{str(value)!r} {problem}",
                          "an absolute directory of the gateway's own, e.g. /etc/smg"))
    user = gateway.get("sglang_gateway_user")
    if user is not None and _guard.user_problem(user, allow_root=False):
        found.append(("sglang_gateway_user", "input-user", f"{str(user)!r} {_guard.user_problem(user, False)}",
                      "a system user of its own, e.g. smg"))
    found += _extra_args_problems(gateway.get("sglang_gateway_extra_args"), gateway.get("sglang_gateway_version"))
    return [f"{var} [{rule}] {message} Fix: {fix} (source: {SOURCE})" for var, rule, message, fix in found]

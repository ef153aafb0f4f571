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

from urllib.parse import urlsplit

from ansible_collections.sglang.deploy.plugins.module_utils.flags import owned as _owned
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as _guard
from ansible_collections.sglang.deploy.plugins.module_utils.gateway import options as _options
from ansible_collections.sglang.deploy.plugins.module_utils.inputs import net as _net

SOURCE = "plugins/module_utils/gateway/inputs.py"
PATHS = ("sglang_gateway_venv", "sglang_gateway_config_dir", "sglang_gateway_python")
_SMG_KEYS = tuple(o[2:] for o in _guard.SMG_KEY_OPTIONS)
# smg 1.13's options that the deploy never takes from sglang_gateway_extra_args, by any prefix:
# option -> (why, fix)
UNSAFE_OPTIONS = {
    "worker-urls": ("lists workers the deploy does not register: smg forwards the clients' requests and key to "
                    "every worker, an outside one included", "leave it out: roles/sglang_gateway registers the "
                    "SGLang hosts of the inventory through smg's API"),
    "mm-allow-private-media-hosts": ("lets any client make smg fetch media from private addresses (the hosts' "
                                     "metrics, admin and cloud metadata endpoints)",
                                     "leave it out; list public media domains in mm-allowed-media-domains"),
}


def _url_credential(items) -> str:
    """The first item that is a URL carrying a credential (user:password@, ?password=), or ""."""
    for item in items:
        if "://" not in item:
            continue
        try:
            if _net.url_credentials(urlsplit(item)):
                return item
        except ValueError:
            continue
    return ""


def extra_args_problems(extra, version=None):
    """[(variable, rule, message, fix)] for ``sglang_gateway_extra_args`` (see the module's text)."""
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
        unsafe = _guard.refused_option(name, tuple(UNSAFE_OPTIONS))
        items = [str(v) for v in (value if isinstance(value, (list, tuple)) else [value]) if v is not True]
        if _guard.control_char(name) or any(_guard.control_char(v) for v in items):
            out.append((var, "input-control-char", "contains a control character or line separator",
                        "remove it"))
        elif key:
            out.append((var, "input-key-flag", f"is read by smg 1.13 as --{key}, a credential option",
                        "keys go into sglang_gateway_api_key / sglang_gateway_admin_api_key (the credential file)"))
        elif unsafe:
            why, fix = UNSAFE_OPTIONS[unsafe]
            out.append((var, "input-unsafe-option", f"is read by smg 1.13 as --{unsafe}, which {why}", fix))
        elif _url_credential(items):
            out.append((var, "input-url-credential", "holds a URL with a credential (user:password@ or a secret "
                        "query parameter): smg's options are written to args.json and shown in its argv",
                        "give smg the credential another way (its own environment file, root-only), or a URL "
                        "without one"))
        elif known is not None and _options.unknown(name, known):
            out.append((var, "input-gateway-option", f"is not an option of smg {version} ({_options.unknown(name, known)}; "
                        f"{_options.SOURCE.format(version=version)})", "use an option of the pinned smg"))
        elif _guard.dash_value(items) and _guard.dash_value(items) != "-":
            out.append((var, "input-dash-value", f"the value {_guard.dash_value(items)!r} starts with '-': smg's "
                        "argparse reads it as an option", "remove it; a value may start with '-' only as a number"))
    return out


def sglang_gateway_refusals(gateway) -> list:
    """Lines "variable [rule] message Fix: fix" for every refused input of ``gateway`` (the role's
    variables by name, and ``foreign``: the server's and the firewall's unit names); []: none. The
    kinds of roles/sglang_gateway/meta/input_kinds.yml judge them (plugins/module_utils/inputs/), the
    check every entry point of the role runs first."""
    from ansible_collections.sglang.deploy.plugins.module_utils.inputs import catalogue  # noqa: PLC0415
    values = {k: v for k, v in (gateway if isinstance(gateway, dict) else {}).items() if k != "foreign"}
    lines = catalogue.refusals("sglang_gateway", values)
    service = values.get("sglang_gateway_service")
    foreign = [str(f) for f in (gateway or {}).get("foreign") or [] if f]
    if service is not None and str(service).removesuffix(".service") in foreign:
        lines.append(f"sglang_gateway_service [input-unit-name] {str(service)!r} is the name of another unit of this "
                     "deploy Fix: a name of its own, e.g. smg")
    return lines

"""Offline checks of every input that ends up in the systemd unit, before any host is touched.

roles/sglang_server/templates/sglang.service.j2 writes one directive per line: a line break in
any value ends the directive there and can start a new one (``User=x\\nExecStartPre=/path``),
and ExecStart's flags continue over lines, so a value with a line break drops every later flag.
systemd_quote (plugins/module_utils/flags/render.py) quotes a value, but a line break stays one.
These checks turn each such input into a finding (host, variable or flag, rule, fix) for the
lint report, instead of a unit that systemd reads differently than the inventory says:

* flag names and values, environment names and values, paths: no control characters;
* flag names spelled in full, known to the host's SGLang version, values within literal
  choices (the catalog, plugins/module_utils/flags/catalog.py);
* ports 1-65535; tp/dp/ep/pp sizes and nnodes integers >= 1;
* environment names ``[A-Za-z_][A-Za-z0-9_]*``;
* no ``api-key``/``admin-api-key`` flag: sglang_server_api_key and sglang_server_admin_api_key
  carry them, outside the command line; no ``config`` flag: its file would set flags no check
  here reads (REFUSED_FLAGS);
* no flag value or list item that starts with ``-`` unless it is a number (``-1``): argv
  gives every item its own token, and SGLang's argparse reads ``--api-key`` among a list's
  items as the flag (DASH_VALUE);
* the sglang_server variables templated into the unit or its file names (UNIT_INPUTS):
  user name, absolute paths without ``..``, a unit name without ``/``, integers; and what the
  deploy owns (flags/owned.py): no system directory as a working, configuration or model
  directory, no unit name of the system's, a model revision that names one directory
  (MODEL_INPUTS).
"""

from __future__ import annotations

import re


# siblings of the collection, imported by name
from ansible_collections.sglang.deploy.plugins.module_utils.flags import catalog as _catalog
from ansible_collections.sglang.deploy.plugins.module_utils.flags import model as _model
from ansible_collections.sglang.deploy.plugins.module_utils.flags import render as _renderer
# the guards the renderers apply themselves (the lint reports the same answers)
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as _guard

UNIT_TEMPLATE = "roles/sglang_server/templates/sglang.service.j2"
CHECKS = "plugins/module_utils/flags/inputs.py"
# Every sglang_server variable that the unit, its environment file or their file names are
# made of (templates/sglang.service.j2, templates/sglang.env.j2, tasks/render.yml), and what it
# must be. ("int", N): an integer >= N.
UNIT_INPUTS = {
    "sglang_server_user": "user",
    "sglang_server_workdir": "rw-dir",
    "sglang_server_config_dir": "dir",
    "sglang_server_python": "path",
    "sglang_server_path": "search-path",
    "sglang_server_service_name": "unit-name",
    "sglang_server_ready_path": "url-path",
    "sglang_server_timeout_stop_sec": ("int", 0),
    "sglang_server_timeout_start_sec": ("int", 0),
    "sglang_server_restart_sec": ("int", 0),
    "sglang_server_start_limit_burst": ("int", 0),
    "sglang_server_start_limit_interval_sec": ("int", 0),
    "sglang_server_limit_nofile": ("int", 1),
    "sglang_server_ready_timeout": ("int", 1),
    "sglang_server_journal_lines": ("int", 0),
    # the hardened unit (sglang_server_hardening)
    "sglang_server_hardening": "bool",
    "sglang_server_read_write_paths": "path-list",
    "sglang_server_device_allow": "device-list",
    "sglang_server_capabilities": "capability-list",
    "sglang_server_umask": "umask",
    "sglang_server_hardening_env": "env-map",
}
# What the templates are made of besides UNIT_INPUTS, and the checked inputs each is derived from
# (tests/unit/test_unit_inputs_complete.py: a variable of a template in neither fails there).
UNIT_DERIVED = {
    "ansible_managed": "ansible.cfg (a comment line)",
    "sglang_server_description": "sglang_server_args served-model-name or model-path (the flag checks)",
    "sglang_server_exec_lines": "sglang_server_args (the flag checks), systemd-quoted",
    "sglang_server_env_path": "sglang_server_config_dir / sglang_server_service_name",
    "sglang_server_cache_dir": "sglang_server_service_name and the ml_env generation's name",
    "sglang_server_environment": "sglang_flags_server_env (sglang_server_env, cuda_toolkit_env, "
                                 "gpu_host_comm_env), sglang_server_hardening_env, sglang_server_path, "
                                 "the ml_env generation's name",
}
# the roles whose kinds file judges a variable, by its prefix
_ROLE_OF = (("sglang_server_", "sglang_server"), ("model_files_", "model_files"), ("sglang_firewall_", "sglang_firewall"))
# roles/model_files: the directories it fills and prunes, the revision it names as one
MODEL_INPUTS = {
    "model_files_revision": "revision",
    "model_files_root": "dir",
    "model_files_shared_root": "dir",
}
# SGLang's parallel sizes (option dests in the catalog; names where there is no catalog)
SIZE_DESTS = {"tp_size", "dp_size", "ep_size", "pp_size", "nnodes"}
SIZE_NAMES = {"tp", "tp-size", "tensor-parallel-size", "dp", "dp-size", "data-parallel-size",
              "ep", "ep-size", "expert-parallel-size", "pp", "pp-size", "pipeline-parallel-size",
              "nnodes"}
# Flags never taken from sglang_server_args: (rule, why, fix). The keys reach SGLang through a
# root-only file that roles/sglang_server gives with --config (tasks/render.yml); a --config of
# the inventory's own would set any flag from a file that the lint, the firewall and drift
# never read. The key values are secrets: never quoted in a finding.
_KEY_WHY = ("--{flag} on the command line shows in ps, /proc/*/cmdline, `systemctl cat/show` "
            "and the unit file")
_KEY_FIX = ("remove it from sglang_server_args and set {var} (vault-encrypted): it reaches SGLang "
            "through a root-only file given with --config")
REFUSED_FLAGS = {
    "api-key": ("input-key-flag", _KEY_WHY, _KEY_FIX.format(var="sglang_server_api_key")),
    "admin-api-key": ("input-key-flag", _KEY_WHY, _KEY_FIX.format(var="sglang_server_admin_api_key")),
    "config": ("input-config-flag", "--config FILE.yaml sets any SGLang flag from a file that the lint, the firewall "
               "and drift never read (and roles/sglang_server gives --config itself, for the keys file)",
               "remove it and write each flag of that file into sglang_server_args; the keys go into "
               "sglang_server_api_key / sglang_server_admin_api_key"),
}
# A value may start with '-' only as a number: SGLang 0.5.23 has flags whose value is -1
# (--mamba-max-states-per-path, --offload-group-size: default -1 in
# files/catalogs/sglang-0.5.23.json), and argparse reads a negative number as a value
# (_guard.dash_value).


def _finding(rule, what, value, message, fix, source=UNIT_TEMPLATE, flag=None):
    """One error. ``what``: the variable; ``flag``: the flag it sets, if any (the report shows
    ``--flag`` first, then the message names the variable)."""
    return {"rule": rule, "severity": "error", "status": "violation", "flag": flag or what,
            "value": value, "message": f"{what}: {message}" if flag else message, "fix": fix,
            "source": source}


_control = _guard.control_char  # control characters and the Unicode line separators


def _control_finding(what, value, flag=None):
    char = _control(value)
    if not char:
        return []
    return [_finding(
        "input-control-char", what, value,
        f"{str(value)!r} contains the control character {char}: a line break ends the line of "
        "the unit (or environment file) there, ExecStart drops every later flag and the rest "
        "is read as a directive of its own",
        "remove it (a YAML `|` block keeps a trailing newline: use `>-` or a plain scalar)",
        flag=flag)]


def _as_int(value):
    """An integer, or None (bools and text that is not a whole number are not integers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else None


def _int_finding(what, value, low, high=None, rule="input-integer", why="", flag=None):
    number = _as_int(value)
    if number is not None and number >= low and (high is None or number <= high):
        return []
    limits = f"{low}-{high}" if high is not None else f">= {low}"
    return [_finding(rule, what, value, f"{value!r} is not an integer {limits}{why}",
                     f"give an integer {limits}", CHECKS if flag else UNIT_TEMPLATE, flag)]


def unit_input_findings(name, value, kind=None, foreign=None):
    """The findings on one variable that a unit is made of, judged by the kind its role declares
    (roles/<role>/meta/input_kinds.yml, the catalogue of plugins/module_utils/inputs/: the check the
    role's entry points run). ``foreign``: the names of the deploy's other units (a unit name must
    not be one of them; default: the kinds file's). ``kind`` is not read (the kinds file says it)."""
    from ansible_collections.sglang.deploy.plugins.module_utils.inputs import catalogue  # noqa: PLC0415
    role = next((r for p, r in _ROLE_OF if name.startswith(p)), "")
    spec = catalogue.spec_of(((catalogue.load_kinds(role).get("options") or {}).get(name)) or "text")
    if foreign is not None and spec.get("kind") == "unit-name":
        spec["others"] = list(foreign)
    ctx = catalogue.Ctx(variable=name)
    return [_finding(p.rule, name + p.where, value, p.message, p.fix, f"roles/{role}/meta/input_kinds.yml")
            for p in catalogue.check(spec, value, ctx)]


def _normalize(args):
    """Flag name -> value as the renderer sees it (``model_path`` -> ``model-path``,
    ``false``/``null`` dropped), and the findings of names it refuses instead of raising."""
    flags, findings, seen = {}, [], {}
    for name, value in (args or {}).items() if isinstance(args, dict) else ():
        if _control(name):
            findings += _control_finding(f"sglang_server_args[{str(name)!r}] (name)", name)
            continue
        try:
            flag = _renderer.normalize_flag(name)
        except Exception as exc:  # noqa: BLE001  AnsibleFilterError, with the renderer's words
            findings.append(_finding("input-flag-name", f"sglang_server_args[{str(name)!r}]", name,
                                     str(getattr(exc, "message", exc)), "write the long option "
                                     "without dashes, e.g. model-path", CHECKS))
            continue
        if flag in seen:
            findings.append(_finding("flag-duplicate", "sglang_server_args", None,
                                     f"sets {seen[flag]!r} and {name!r}, the same flag",
                                     "keep one", CHECKS, flag))
            continue
        seen[flag] = name
        if value is not None and value is not False:
            flags[flag] = value
    return flags, findings


def sglang_flags_expand(args, catalog=None) -> dict:
    """The flag set with every unambiguous abbreviation written in full (``moe-runner`` ->
    ``moe-runner-backend``), as SGLang's argparse reads it: what the rules table judges. Names
    the renderer refuses are left out (sglang_flags_inputs reports them); an abbreviation of a
    flag that is also given in full keeps its own name (reported as well)."""
    flags, _ = _normalize(args)
    out = {}
    for flag, value in flags.items():
        full = _catalog.full_name(flag, catalog)
        out[full if full not in flags else flag] = value
    return out


def _values(value) -> list:
    if value is True:
        return []
    if isinstance(value, (list, tuple)):
        return ["true" if v is True else "false" if v is False else str(v) for v in value]
    if isinstance(value, dict):  # rendered as JSON: json.dumps escapes control characters
        return []
    return [str(value)]


def _flag_findings(flags, catalog, renamed):
    findings = []
    full_names = {flag: _catalog.full_name(flag, catalog) for flag in flags}
    for flag, value in flags.items():
        var, full = f"sglang_server_args['{flag}']", full_names[flag]
        unsafe = full if full in _guard.UNSAFE_FLAGS else _guard.refused_option(flag, tuple(_guard.UNSAFE_FLAGS))
        if unsafe:
            findings.append(_finding("input-unsafe-flag", var, value, f"is read by SGLang as --{unsafe}, which "
                                     f"{_guard.UNSAFE_FLAGS[unsafe][0]}", _guard.UNSAFE_FLAGS[unsafe][1], CHECKS, flag))
            continue
        refused = full if full in REFUSED_FLAGS else _guard.refused_option(flag)
        if refused:  # a key is a secret: no value is quoted in this finding
            rule, why, fix = REFUSED_FLAGS[refused]
            full = refused
            findings.append(_finding(rule, var, "<redacted>", why.format(flag=full), fix, CHECKS, flag))
            continue
        if (full == "host" or "host".startswith(full)) and _guard.scalar_problem(value):
            findings.append(_finding("input-host-type", var, value, f"{value!r} {_guard.scalar_problem(value)}: "
                                     "argv gives each item, the firewall and the key checks read one address",
                                     "give one address, e.g. 127.0.0.1", CHECKS, flag))
            continue
        values = _values(value)
        bad = [v for v in values if _control(v)]
        if bad:
            findings += _control_finding(var, bad[0], flag)
            continue
        dashed = [_guard.dash_value(values)] if _guard.dash_value(values) else []
        if dashed:
            findings.append(_finding(
                "input-dash-value", var, dashed[0],
                f"the value {dashed[0]!r} starts with '-': every value is its own argument of "
                f"ExecStart, and SGLang's argparse reads it as a flag, not as a value of --{flag}",
                "remove it; a value may start with '-' only as a number (-1)", CHECKS, flag))
            continue
        findings += _catalog.name_findings(flag, value, catalog, renamed)
        dest = _catalog.entry(full, catalog).get("dest")
        if full == "port" or full.endswith("-port"):
            findings += _int_finding(var, value, 1, 65535, "input-port",
                                     f" (--{full} is a TCP port)", flag)
        elif dest in SIZE_DESTS or (dest is None and full in SIZE_NAMES):
            findings += _int_finding(var, value, 1, None, "input-parallel-size",
                                     f" (--{full} counts GPUs, ranks or nodes)", flag)
        else:
            findings += [dict(f, flag=flag) for f in _catalog.value_findings(full, values, catalog)]
    return findings + _catalog.duplicate_findings(full_names, catalog)


def _env_findings(env, what="sglang_server_env"):
    """The server's environment by its kind (an environment written into a root-only file: names,
    one-line values, no code-injecting loader, search paths only into root's places)."""
    from ansible_collections.sglang.deploy.plugins.module_utils.inputs import catalogue  # noqa: PLC0415
    ctx = catalogue.Ctx(variable=what)
    return [_finding(p.rule, what + p.where, None, p.message, p.fix, "roles/sglang_server/templates/sglang.env.j2")
            for p in catalogue.check({"kind": "env", "credentials": "allow"}, env or {}, ctx)]


def sglang_flags_inputs(args, env=None, unit=None, catalog=None, rules=None, version=""):
    """Every finding on one host's inputs (see the module docstring). ``unit``: the
    UNIT_INPUTS and MODEL_INPUTS variables the host sets (None = not set: the role's default
    applies).
    ``rules``: the rules table, whose renamed flags are left to their own rules."""
    if args is not None and not isinstance(args, dict):
        return [_finding("input-flag-name", "sglang_server_args", None,
                         f"must be a mapping of flag -> value, got {type(args).__name__}",
                         "write it as a mapping, e.g. {model-path: /data/models/m}", CHECKS)]
    renamed = {f for r in rules or [] if r.get("replacement")
               for f in (r.get("applies") or {}).get("flags_any", [])}
    flags, findings = _normalize(args)
    if not (catalog or {}).get("options"):
        # without the host's catalog: the names argparse would read as another option the deploy
        # reads (hos -> host, po -> port), or as none (API-KEY), by the flag model's resolution
        findings += [_finding(rule, f"sglang_server_args['{flag}']", flag, message, fix, CHECKS, flag)
                     for flag, rule, message, fix in _model.resolution_problems(flags)
                     if not _guard.refused_option(flag)]
    findings += _flag_findings(flags, catalog, renamed)
    if not (catalog or {}).get("options") and version != "-":
        findings += _catalog.missing_catalog_findings(version)
    findings += _env_findings(env)
    for name, value in (unit or {}).items():
        if name in UNIT_INPUTS and value is not None:
            findings += unit_input_findings(name, value)
        elif name in MODEL_INPUTS and value not in (None, ""):  # "": not used (model_files' defaults)
            findings += unit_input_findings(name, value, MODEL_INPUTS[name])
    return findings

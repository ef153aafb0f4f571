"""The server's render guard: what roles/sglang_server/tasks/render.yml refuses to render,
whatever tags or plays ran before it (docs/security.md, "Who refuses what").

The lint (roles/sglang_flags, tasks/lint.yml; playbooks/lint.yml) is skipped by
``--skip-tags sglang_flags_lint`` and is not on every path that renders the unit (``deploy.yml
--tags rollout``, the sweep's candidates, a rollback's restored flags). So the render path runs the
lint's own checks again on exactly what it renders (``sglang_server_flags``, the composed
environment, the unit's variables as they are, defaults included) and refuses every error:

* the inputs (plugins/module_utils/flags/inputs.py, without a catalog: control characters and
  line separators, the key and --config options by any prefix, dash values, ports, sizes,
  environment names, the unit's variables: user, paths, no system directory or tree, unit names,
  none of the deploy's other units);
* the sandbox (plugins/module_utils/flags/sandbox.py: a weakening the inventory does not name);
* the keys (plugins/module_utils/flags/exposure.py: a bind beyond loopback without a key, a key
  that is short, not a string or whitespace; the keys themselves come in only as their problems);
* the bind (plugins/module_utils/firewall/sources.py: a wildcard bind, in any spelling or type, with the
  firewall off and no sglang_firewall_open_bind_ok).
"""

from __future__ import annotations

from ansible_collections.sglang.deploy.plugins.module_utils.flags import inputs as _inputs
from ansible_collections.sglang.deploy.plugins.module_utils.flags import model as _model
from ansible_collections.sglang.deploy.plugins.module_utils.flags import sandbox as _sandbox
from ansible_collections.sglang.deploy.plugins.module_utils.flags import exposure as _exposure
from ansible_collections.sglang.deploy.plugins.module_utils.firewall import sources as _firewall


def _line(finding) -> str:
    flag = finding.get("flag")
    return f"{flag} [{finding['rule']}] {finding['message']} Fix: {finding['fix']}"


def _bind(flags):
    """The --host value as argparse reads it (the flag model's resolution: --hos is --host; the
    last one given wins, as argparse keeps it)."""
    found = None
    for flag, value in (flags or {}).items() if isinstance(flags, dict) else ():
        kind, names = _model.resolve_flag(str(flag).strip().lstrip("-").replace("_", "-"))
        if kind in ("known", "abbreviation") and names[0] == "host":
            found = value
    return found


def sglang_server_refusals(render) -> list:
    """Every error of the checks above on ``render`` (a mapping: ``flags``, ``env``, ``unit``:
    UNIT_INPUTS name -> value, ``allow_weaker``, ``key_problems`` and ``key_lengths``:
    KEY_VARIABLES -> sglang_key_problem / length of each key, ``allow_no_key``,
    ``firewall_enabled``, ``open_bind_ok``, ``foreign``: the deploy's other unit names), as
    lines "variable [rule] message Fix: fix"; [] when it may be rendered."""
    render = render if isinstance(render, dict) else {}
    flags, unit = render.get("flags"), dict(render.get("unit") or {})
    service = unit.pop("sglang_server_service_name", None)
    found = _inputs.sglang_flags_inputs(flags, env=render.get("env"), unit=unit)
    if service is not None:
        foreign = [str(v) for v in render.get("foreign") or [] if v] or None
        found += _inputs.unit_input_findings("sglang_server_service_name", service, foreign=foreign)
    found += _sandbox.sglang_flags_sandbox_findings(
        {k: unit.get(k) for k in _sandbox.SETTINGS}, render.get("allow_weaker"))
    bind = _bind(flags)
    found += _exposure.sglang_flags_key_findings(
        {"host": bind} if bind is not None else {}, render.get("key_lengths"),
        render.get("allow_no_key") or "", render.get("key_problems"))
    lines = [_line(f) for f in found if f.get("severity") == "error"]
    wildcard = _firewall.sglang_firewall_findings(
        {"host": bind} if bind is not None else {}, enabled=bool(render.get("firewall_enabled")),
        open_bind_ok=bool(render.get("open_bind_ok")))
    return lines + [f["msg"] for f in wildcard if f["severity"] == "error"]

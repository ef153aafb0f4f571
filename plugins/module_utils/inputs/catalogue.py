"""The catalogue of input kinds, whole: every kind (base.py; scalars, places, net, envs, shapes) and
every cross-check (cross.py), and how a role's kinds file (``roles/<role>/meta/input_kinds.yml``:
``options``: option -> kind, ``checks``: cross-checks) judges one host's values. The one code
every role's entry points (the action ``sglang.deploy.sglang_inputs``, plugins/action/) and the
lint (playbooks/lint.yml) run; docs/security.md, "Input kinds", lists the kinds."""

from __future__ import annotations

import os

# the kinds register themselves when their modules are imported
from ansible_collections.sglang.deploy.plugins.module_utils.inputs import envs, net, places, scalars, shapes  # noqa: F401
from ansible_collections.sglang.deploy.plugins.module_utils.inputs.base import (
    KINDS, Ctx, Problem, check, line, located, spec_of)
from ansible_collections.sglang.deploy.plugins.module_utils.inputs.cross import CHECKS

ROLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "roles")
KINDS_FILE = os.path.join("meta", "input_kinds.yml")
_LOADED: dict = {}

__all__ = ["load_kinds", "refusals", "KINDS", "CHECKS", "Ctx", "Problem", "check", "line", "spec_problems", "role_problems", "role_lines",
           "kind_counts", "closed_dicts"]


def load_kinds(role) -> dict:
    """The kinds file of ``role`` (roles/<role>/meta/input_kinds.yml), loaded once per process; {}
    when the role has none. PyYAML is the controller's (ansible-core's own dependency)."""
    if role not in _LOADED:
        import yaml  # controller only
        path = os.path.join(ROLES, role, KINDS_FILE)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                _LOADED[role] = yaml.load(handle, Loader=loader) or {}
        else:
            _LOADED[role] = {}
    return _LOADED[role]


def load_specs(role) -> dict:
    """The argument specs of ``role`` (roles/<role>/meta/argument_specs.yml: entry point -> spec),
    loaded once per process; {} when it has none."""
    key = ("specs", role)
    if key not in _LOADED:
        import yaml  # controller only
        path = os.path.join(ROLES, role, "meta", "argument_specs.yml")
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                _LOADED[key] = (yaml.load(handle, Loader=loader) or {}).get("argument_specs") or {}
        else:
            _LOADED[key] = {}
    return _LOADED[key]


def refusals(role, values, host="", addresses=(), cross=False) -> list:
    """The lines of ``values`` (option -> value, only those given) refused by ``role``'s kinds;
    the cross-checks too where ``cross`` (they read other variables from ``values``)."""
    kinds = load_kinds(role)
    options = [name for name in values if name in (kinds.get("options") or {})]
    ctx = Ctx(host, addresses or (host,), values)
    found = role_problems({"options": kinds.get("options"), "checks": kinds.get("checks") if cross else ()},
                          ctx, options)
    return [line(host, variable, problem) for variable, problem in found]


def spec_problems(spec, where="") -> list:
    """What is wrong with a kinds file's entry itself (an unknown kind or parameter, a free-form
    option without its reason, a closed dict without keys), as text; [] when it is sound."""
    spec = spec_of(spec)
    name = spec.get("kind")
    if name not in KINDS:
        return [f"{where}: unknown kind {name!r} (one of {', '.join(sorted(KINDS))})"]
    out = [f"{where}: {name} has no parameter {p!r} (it reads {', '.join(KINDS[name].params)})"
           for p in spec if p not in KINDS[name].params]
    if name == "free" and not str(spec.get("why") or "").strip():
        out.append(f"{where}: a free-form option says why (`why`)")
    if name == "dict":
        if not spec.get("keys"):
            out.append(f"{where}: a closed dict lists its keys")
        for key, sub in (spec.get("keys") or {}).items():
            out += spec_problems(sub, f"{where}.{key}")
    if name == "list":
        out += spec_problems(spec.get("of", "text"), f"{where}[]")
    if name == "map":
        out += spec_problems(spec.get("key", "text"), f"{where}{{key}}") + spec_problems(spec.get("value", "text"),
                                                                                        f"{where}{{value}}")
    return out


def role_problems(kinds, ctx, options=None) -> list:
    """``[(variable, Problem)]`` of one host: every option of ``kinds`` (a kinds file, loaded) that
    the host defines, judged by its kind, then the file's cross-checks. ``options``: only these."""
    found = []
    for name, spec in ((kinds or {}).get("options") or {}).items():
        if options is not None and name not in options:
            continue
        value = ctx.var(name)
        if value is ctx.missing:
            continue
        ctx.variable = name
        found += [(name, located(name, p)) for p in check(spec, value, ctx)]
    for name in (kinds or {}).get("checks") or ():
        found += CHECKS[name][0](ctx)
    return found


def role_lines(host, kinds, ctx, options=None) -> list:
    """role_problems as the lines a refusal prints (base.line)."""
    return [line(host, variable, problem) for variable, problem in role_problems(kinds, ctx, options)]


def _walk(spec):
    spec = spec_of(spec)
    yield spec
    if spec.get("kind") == "dict":
        for sub in (spec.get("keys") or {}).values():
            yield from _walk(sub)
    elif spec.get("kind") == "list":
        yield from _walk(spec.get("of", "text"))
    elif spec.get("kind") == "map":
        yield from _walk(spec.get("value", "text"))


def option_kind(spec) -> str:
    """The kind an option is counted under: its own, or for a list the kind of its items (a list of
    networks is of the kind network)."""
    spec = spec_of(spec)
    while spec.get("kind") == "list":
        spec = spec_of(spec.get("of", "text"))
    return spec.get("kind")


def kind_counts(kinds_files) -> dict:
    """kind -> the number of options (of every role given: {role: kinds file}) of that kind
    (option_kind)."""
    counts: dict = {}
    for kinds in kinds_files.values():
        for spec in ((kinds or {}).get("options") or {}).values():
            name = option_kind(spec)
            counts[name] = counts.get(name, 0) + 1
    return counts


def closed_dicts(name, spec, path=""):
    """Every closed dict within one option's kind: ``(path, spec, sample)`` where path is how the
    option reaches it (``['h2d_gbps']`` for a map's value, ``[0]`` for a list's item) and sample
    the key a map or list is reached by (tests build a value from it)."""
    spec = spec_of(spec)
    if spec.get("kind") == "dict":
        yield path, spec
        for key, sub in (spec.get("keys") or {}).items():
            yield from closed_dicts(name, sub, f"{path}[{key!r}]")
    elif spec.get("kind") == "list":
        yield from closed_dicts(name, spec.get("of", "text"), f"{path}[0]")
    elif spec.get("kind") == "map":
        key = spec_of(spec.get("key", "text"))
        sample = (key.get("choices") or ["x"])[0]
        yield from closed_dicts(name, spec.get("value", "text"), f"{path}[{sample!r}]")


def docs_table(kinds_files) -> str:
    """docs/security.md's table (scripts/input-kinds-table.py writes it): the options per kind of
    every role given ({role: kinds file}), what each kind refuses, and the cross-checks."""
    counts = kind_counts(kinds_files)
    rows = [f"| `{name}` | {counts.get(name, 0)} | {k.summary} |"
            for name, k in sorted(KINDS.items(), key=lambda kv: (-counts.get(kv[0], 0), kv[0]))]
    checks = [f"| `{name}` | {', '.join(sorted(r for r, f in kinds_files.items() if name in (f.get('checks') or [])))}"
              f" | {summary} |" for name, (_, summary) in sorted(CHECKS.items())]
    return "\n".join([
        f"{sum(counts.values())} options of {len(kinds_files)} roles, each with its kind; {counts.get('free', 0)} of "
        "them free-form, each with the reason in its kinds file.",
        "",
        "| kind | options (a list: of its items' kind) | what it is, what it refuses |",
        "| --- | --- | --- |",
        *rows,
        "",
        "| cross-check | roles | what it holds |",
        "| --- | --- | --- |",
        *checks,
    ])

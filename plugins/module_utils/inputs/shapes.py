"""The kinds of the catalogue that hold other values: a list of one kind, a closed dict (its keys,
each of its own kind; an unknown key is refused with the nearest valid one), a map (keys of one
kind, values of one kind), SGLang's launch flags (the flag model's own checks) and smg's extra
options (the gateway's). base.py says what a kind is."""

from __future__ import annotations

import difflib

from ansible_collections.sglang.deploy.plugins.module_utils.inputs.base import Problem, check, kind, spec_of


def nearest(key, keys) -> str:
    """The valid key ``key`` was most likely meant to be (difflib), or ""."""
    found = difflib.get_close_matches(str(key), [str(k) for k in keys], n=1, cutoff=0.6)
    return found[0] if found else ""


@kind("list", "a list whose items are all of the kind `of` (at least `min_items`)", ("of", "min_items"))
def _list(value, spec, ctx):
    if not isinstance(value, (list, tuple)):
        return [Problem("input-list", f"{value!r} is not a list", "give a YAML list")]
    if len(value) < spec.get("min_items", 0):
        return [Problem("input-range", f"has {len(value)} item(s), fewer than {spec['min_items']}",
                        f"give at least {spec['min_items']}")]
    found = []
    for index, item in enumerate(value):
        found += check(spec.get("of", "text"), item, ctx, f"[{index}]") if item is not None else []
    return found


def unknown_key(key, keys) -> Problem:
    near = nearest(key, keys)
    hint = f"; did you mean `{near}`?" if near else f"; its keys are {', '.join(f'`{k}`' for k in keys)}"
    return Problem("input-unknown-key", f"`{key}` is not a key of {{here}}{hint}",
                   f"write `{near}`" if near else "use one of its keys", f"[{str(key)!r}]")


@kind("dict", "a closed mapping: only the keys listed under `keys`, each of its own kind (`required`: the "
      "keys it must have); an unknown key is refused with the nearest valid one", ("keys", "required"))
def _dict(value, spec, ctx):
    if not isinstance(value, dict):
        return [Problem("input-type", f"is a {type(value).__name__}, not a mapping",
                        f"write it as {{{', '.join(str(k) + ': ...' for k in list(spec.get('keys') or {})[:3])}}}")]
    if not value:
        return []  # {}: none given (the option's "off")
    keys = spec.get("keys") or {}
    found = [unknown_key(k, list(keys)) for k in value if k not in keys]
    for key in spec.get("required") or ():
        if key not in value:
            found.append(Problem("input-required", f"has no `{key}`", f"add `{key}`", ""))
    for key, item in value.items():
        if key in keys and item is not None:
            found += check(keys[key], item, ctx, f"[{str(key)!r}]")
    return found


@kind("map", "an open mapping: every key of the kind `key`, every value of the kind `value`", ("key", "value"))
def _map(value, spec, ctx):
    if not isinstance(value, dict):
        return [Problem("input-type", f"is a {type(value).__name__}, not a mapping", "write it as {key: value}")]
    key_spec = spec_of(spec.get("key", "text"))
    found = []
    for key, item in value.items():
        if key_spec.get("kind") == "choice" and key not in (key_spec.get("choices") or ()):
            found.append(unknown_key(key, key_spec.get("choices") or ()))
            continue
        bad_key = check(key_spec, key, ctx, f"[{str(key)!r}]")
        found += [p._replace(message="the key " + p.message) for p in bad_key]
        if not bad_key and item is not None:
            found += check(spec.get("value", "text"), item, ctx, f"[{str(key)!r}]")
    return found


@kind("one-of", "a value of one of the kinds listed under `kinds` (\"HOST:PORT\" or {target, host})", ("kinds",))
def _one_of(value, spec, ctx):
    first = None
    for option in spec.get("kinds") or ():
        found = check(option, value, ctx)
        if not found:
            return []
        first = first if first is not None else found
    return first or []


@kind("flags", "SGLang's launch flags, judged by the flag model (plugins/module_utils/flags/) without a catalog, so "
      "alike wherever it runs: names argparse reads as exactly themselves (no prefix of the options the deploy "
      "reads, no upper case), no key, --config or unsafe option by any spelling, values of one line, no value "
      "argparse reads as an option, ports and sizes in range; the lint's rules judge the rest with the catalog")
def _flags(value, spec, ctx):
    from ansible_collections.sglang.deploy.plugins.module_utils.flags import inputs as _inputs  # controller only
    found = []
    for finding in _inputs.sglang_flags_inputs(value, catalog=None, version="-"):
        if finding.get("severity") != "error":
            continue
        flag, message = str(finding.get("flag") or ""), str(finding["message"])
        where = f"[{flag.lstrip('-')!r}]" if flag and not flag.startswith("sglang_") else ""
        if where and ": " in message and message.startswith("sglang_"):
            message = message.split(": ", 1)[1]  # the variable is the line's own
        found.append(Problem(finding["rule"], message, finding["fix"], where))
    return found


@kind("smg-args", "smg's extra options, judged by the gateway's checks (plugins/module_utils/gateway/inputs.py): "
      "no credential or unsafe option by any prefix, values of one line, none argparse reads as an option")
def _smg_args(value, spec, ctx):
    from ansible_collections.sglang.deploy.plugins.module_utils.gateway import inputs as _gateway  # controller only
    version = ctx.var("sglang_gateway_version")
    if version is ctx.missing:  # not defined here (the lint judges what the inventory sets): the pinned catalog
        from ansible_collections.sglang.deploy.plugins.module_utils.gateway import options as _options  # noqa: PLC0415
        version = _options.newest()
    version = version if isinstance(version, str) else None
    return [Problem(rule, message, fix, var[len("sglang_gateway_extra_args"):])
            for var, rule, message, fix in _gateway.extra_args_problems(value, version)]

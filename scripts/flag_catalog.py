#!/usr/bin/env python3
"""Write the catalog of SGLang's launch flags from an sglang wheel, without importing it.

usage: flag_catalog.py SGLANG_WHEEL [-o roles/sglang_flags/files/catalogs/sglang-VERSION.json]

`python -m sglang.launch_server` parses its argv with argparse (prepare_server_args in
sglang/srt/server_args.py), which accepts any unique prefix of a long option. The lint
(plugins/module_utils/flags/catalog.py) needs every option string to
tell a full name from an abbreviation, and `make drift` (scripts/sglang_drift.py) compares
two versions' catalogs. This script reads the wheel's Python sources with `ast` (no torch,
no sglang import) and collects, per option string:

* every `parser.add_argument("--name", ...)` in ServerArgs.add_cli_args: its option strings,
  `dest`, `choices` and `default` when they are literal (`_declared_default("x")` and
  `ServerArgs.x` are read from the field `x`);
* every field that `add_cli_args_from_dataclass` turns into an option (0.5.2x): the annotated
  fields `name: A[T, "help"]` / `A[T, Arg(...)]` of ServerArgs and of the namespace classes it
  collects (`_INPUT_NAMESPACES`), minus `Arg(no_cli=True)`; option `--name` (or `cli_name`)
  plus `aliases`, dest = the field name, choices from `Arg(choices=...)` or `Literal[...]`,
  default = the field's literal default;
* `--no-name` for every option of `argparse.BooleanOptionalAction` (three-state flags);
* `deprecated`: the replacement SGLang names (`new_flag=` of its Deprecated*Action, or the
  `--flag` a help text starting with "Deprecated" points to), or true; `rejected`: the error a
  `DeprecatedAction(error_message=...)` stops the launch with.

and, from the wheel's METADATA, the exact pins of torch, flashinfer and sglang-kernel
(`requires`). Choices or defaults that are computed are left out.
"""

import argparse
import ast
import email.parser
import json
import os
import re
import sys
import zipfile

# the requirement parser of the collection (importable from the venv: scripts/collections.sh)
from ansible_collections.sglang.deploy.plugins.module_utils.flags.requirements import canonical_package, parse_requirement

SERVER_ARGS = "sglang/srt/server_args.py"
PINNED = ("torch", "torchvision", "torchaudio", "flashinfer-python", "flashinfer-cubin",
          "flashinfer-jit-cache", "sglang-kernel", "sgl-kernel")
DEPRECATED_ACTIONS = ("DeprecatedAction", "DeprecatedStoreTrueAction", "DeprecatedStoreConstAction",
                      "DeprecatedAliasStoreAction")
_DEPRECATED_HELP = re.compile(r"^\s*[\[(]?\s*deprecated\b", re.I)
_HELP_FLAG = re.compile(r"(?:use|alias for|replaced by)\s+(--[a-z0-9][a-z0-9-]*(?:=[A-Za-z0-9_.{},-]+)?)", re.I)
_UNKNOWN = object()


class Wheel:
    def __init__(self, path):
        self.zip = zipfile.ZipFile(path)
        self.names = set(self.zip.namelist())
        self._trees = {}

    def module(self, dotted):
        """The parsed module `dotted` (a.b.c), or None when the wheel does not have it."""
        for rel in (dotted.replace(".", "/") + ".py", dotted.replace(".", "/") + "/__init__.py"):
            if rel in self.names:
                if rel not in self._trees:
                    self._trees[rel] = ast.parse(self.zip.read(rel).decode("utf-8"), rel)
                return self._trees[rel]
        return None

    def metadata(self):
        for name in self.names:
            if re.match(r"^sglang-[^/]+\.dist-info/METADATA$", name):
                return email.parser.Parser().parsestr(self.zip.read(name).decode("utf-8"))
        raise SystemExit("not an sglang wheel: no sglang-*.dist-info/METADATA")

    def version(self):
        meta = self.metadata()
        if meta.get("Version"):
            return meta["Version"].strip()
        name = next(n for n in self.names if n.endswith(".dist-info/METADATA"))
        return re.match(r"^sglang-([^/]+)\.dist-info/", name).group(1)


def requires(wheel):
    """{name: specifier} of the PINNED distributions sglang requires without an extra."""
    out = {}
    for line in wheel.metadata().get_all("Requires-Dist") or []:
        req = parse_requirement(line)
        if req is None or (req.marker is not None and "extra" in str(req.marker)):
            continue
        if canonical_package(req.name) in PINNED and req.specifier:
            out[canonical_package(req.name)] = str(req.specifier)
    return out


def _constants(wheel, tree, depth=0):
    """Module-level names of `tree` bound to literals (lists of strings...), following
    `from x import NAME` one level into the wheel."""
    env = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and depth == 0:
            other = wheel.module(node.module)
            if other is not None:
                theirs = _constants(wheel, other, depth + 1)
                for alias in node.names:
                    if alias.name in theirs:
                        env[alias.asname or alias.name] = theirs[alias.name]
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                value = _literal(node.value, env)
                if value is not _UNKNOWN:
                    env[target.id] = value
    return env


def _literal(node, env):
    """The value of a literal expression (names from `env`, `+` of lists or strings, a
    negative number, `{}`), else _UNKNOWN."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id, _UNKNOWN)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _literal(node.operand, env)
        return -value if isinstance(value, (int, float)) and not isinstance(value, bool) else _UNKNOWN
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_literal(e, env) for e in node.elts]
        return _UNKNOWN if _UNKNOWN in items else list(items)
    if isinstance(node, ast.Dict) and not node.keys:
        return {}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left, env), _literal(node.right, env)
        if isinstance(left, list) and isinstance(right, list):
            return left + right
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    return _UNKNOWN


def _choices(node, env):
    values = _literal(node, env)
    if not isinstance(values, list) or not all(isinstance(v, (str, int, float)) for v in values):
        return None
    return sorted({str(v) for v in values})


def _name(node):
    """`X` of `X`, `a.X`, `X(...)`: a call's or attribute's last name, else ""."""
    if isinstance(node, ast.Call):
        node = node.func
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _field_default(node, env):
    """The literal default of a field's `= value` (also `field(default=X)`,
    `field(default_factory=list|dict)`), else _UNKNOWN."""
    if node is None:
        return _UNKNOWN
    if isinstance(node, ast.Call) and _name(node) == "field":
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if "default" in kw:
            return _literal(kw["default"], env)
        factory = _name(kw.get("default_factory")) if "default_factory" in kw else ""
        return {"list": [], "dict": {}}.get(factory, _UNKNOWN)
    return _literal(node, env)


def _deprecation(action, kw, help_text, env):
    """{deprecated: replacement or True, rejected: message} of one option, or {}."""
    out = {}
    if action in DEPRECATED_ACTIONS:
        new = _literal(kw["new_flag"], env) if "new_flag" in kw else _UNKNOWN
        out["deprecated"] = new if isinstance(new, str) and new else True
        message = _literal(kw["error_message"], env) if "error_message" in kw else None
        if action == "DeprecatedAction" and message is not None:
            out["rejected"] = message if isinstance(message, str) else True
    elif isinstance(help_text, str) and _DEPRECATED_HELP.match(help_text):
        m = _HELP_FLAG.search(help_text)
        out["deprecated"] = m.group(1) if m else True
    return out


def _add(catalog, options, dest, choices=None, default=_UNKNOWN, extra=None, boolean_optional=False):
    names = list(options)
    if boolean_optional:
        names += ["--no-" + o[2:] for o in options if o.startswith("--")]
    for opt in names:
        entry = {"dest": dest}
        if choices is not None:
            entry["choices"] = choices
        if default is not _UNKNOWN:
            entry["default"] = default
        entry.update(extra or {})
        catalog[opt] = entry


def _add_argument_calls(func, env, fields, catalog):
    for call in ast.walk(func):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "add_argument"):
            continue
        options = [a.value for a in call.args
                   if isinstance(a, ast.Constant) and str(a.value).startswith("-")]
        if not options:
            continue
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        longest = next((o for o in options if o.startswith("--")), options[0])
        dest = _literal(kw["dest"], env) if "dest" in kw else longest.lstrip("-").replace("-", "_")
        action = _literal(kw["action"], env) if "action" in kw else None
        action = action if isinstance(action, str) else _name(kw.get("action")) if "action" in kw else None
        default = _UNKNOWN
        if "default" in kw:
            node = kw["default"]
            if isinstance(node, ast.Call) and _name(node) == "_declared_default" and node.args:
                default = fields.get(_literal(node.args[0], env), _UNKNOWN)
            elif isinstance(node, ast.Attribute) and _name(node.value) == "ServerArgs":
                default = fields.get(node.attr, _UNKNOWN)
            elif _name(node) != "SUPPRESS":
                default = _literal(node, env)
        elif action in ("store_true", "store_false"):
            default = action == "store_false"
        extra = _deprecation(action, kw, _literal(kw["help"], env) if "help" in kw else None, env)
        if extra:
            default = _UNKNOWN  # a deprecated spelling writes another option's field
        _add(catalog, options, str(dest), _choices(kw["choices"], env) if "choices" in kw else None,
             default, extra, action == "BooleanOptionalAction")


def _annotated_parts(annotation):
    """(type, metadata) of `A[T, meta, ...]` / `Annotated[...]`, else None."""
    if not isinstance(annotation, ast.Subscript):
        return None
    if _name(annotation.value) not in ("A", "Annotated") or not isinstance(annotation.slice, ast.Tuple):
        return None
    return annotation.slice.elts[0], annotation.slice.elts[1:]


def _literal_type(node, env):
    """choices of `Literal[...]`, also inside `Optional[...]`."""
    if isinstance(node, ast.Subscript):
        head = _name(node.value)
        if head == "Literal":
            inner = node.slice
            return _choices(inner if isinstance(inner, ast.Tuple) else ast.List([inner]), env)
        if head == "Optional":
            return _literal_type(node.slice, env)
    return None


def _field_defaults(classes):
    """{field: literal default} of every annotated field of the classes (for add_argument's
    `_declared_default("x")` / `ServerArgs.x`)."""
    out = {}
    for cls, env in classes:
        for node in cls.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                value = _field_default(node.value, env)
                if value is not _UNKNOWN:
                    out[node.target.id] = value
    return out


def _dataclass_fields(cls, env, catalog):
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        parts = _annotated_parts(node.annotation)
        if parts is None:
            continue
        ftype, meta = parts
        arg = next((m for m in meta if isinstance(m, ast.Call) and _name(m) == "Arg"), None)
        helps = [m for m in meta if isinstance(m, (ast.Constant, ast.JoinedStr, ast.BinOp))]
        if arg is None and not helps:
            continue  # no Arg and no help string: add_cli_args_from_dataclass skips it
        kw = {k.arg: k.value for k in (arg.keywords if arg is not None else []) if k.arg}
        if "no_cli" in kw and _literal(kw["no_cli"], env) is True:
            continue
        field = node.target.id
        cli = _literal(kw["cli_name"], env) if "cli_name" in kw else "--" + field.replace("_", "-")
        aliases = _literal(kw["aliases"], env) if "aliases" in kw else []
        if cli is _UNKNOWN or aliases is _UNKNOWN:
            raise SystemExit(f"{field}: cli_name/aliases are not literal; extend this script")
        choices = _choices(kw["choices"], env) if "choices" in kw else _literal_type(ftype, env)
        action = _name(kw["action"]) if "action" in kw else None
        help_text = _literal(kw["help"], env) if "help" in kw else (_literal(helps[0], env) if helps else None)
        extra = _deprecation(action, kw, help_text, env)
        _add(catalog, [cli, *aliases], field, choices, _field_default(node.value, env), extra,
             action == "BooleanOptionalAction")


def _namespace_classes(wheel, tree, env):
    """(class node, its module's constants) for ServerArgs and every class of
    `_INPUT_NAMESPACES`, found through server_args.py's `from X import Name`."""
    wanted = set()
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", "") == "_INPUT_NAMESPACES"):
            wanted = {e.id for e in node.value.elts if isinstance(e, ast.Name)}
    found = [(n, env) for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServerArgs"]
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and wanted & {a.name for a in node.names}:
            other = wheel.module(node.module)
            other_env = _constants(wheel, other)
            found += [(c, other_env) for c in other.body
                      if isinstance(c, ast.ClassDef) and c.name in wanted]
    return found


def catalog_of(wheel_path):
    """(version, options, requires) of an sglang wheel."""
    wheel = Wheel(wheel_path)
    tree = wheel.module(SERVER_ARGS[:-3].replace("/", "."))
    if tree is None:
        raise SystemExit(f"{wheel_path}: no {SERVER_ARGS}")
    env = _constants(wheel, tree)
    classes = _namespace_classes(wheel, tree, env)
    catalog = {}
    for cls, cls_env in classes:
        _dataclass_fields(cls, cls_env, catalog)
    fields = _field_defaults(classes)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "add_cli_args":
            _add_argument_calls(node, env, fields, catalog)
    if not catalog:
        raise SystemExit(f"{wheel_path}: found no options in {SERVER_ARGS}")
    return wheel.version(), catalog, requires(wheel)


def render(version, wheel_path, catalog, pins=None):
    """Compact, sorted JSON: a header, then one option per line."""
    header = {
        "generated_by": "scripts/flag_catalog.py " + os.path.basename(wheel_path),
        "how": "static parse (ast) of sglang/srt/server_args.py and the arg_groups it collects: "
               "add_argument option strings, dataclass fields turned into options, --no-X of "
               "three-state flags; choices and defaults only where literal; deprecated: the "
               "replacement SGLang names; requires: pins from the wheel's METADATA. "
               "Do not edit: regenerate.",
        "sglang": version,
        "requires": dict(sorted((pins or {}).items())),
    }
    lines = ["{"]
    lines += [f"{json.dumps(k)}:{json.dumps(v, sort_keys=True)}," for k, v in header.items()]
    lines.append('"options":{')
    opts = sorted(catalog.items())
    lines += [f"{json.dumps(k)}:{json.dumps(v, sort_keys=True, separators=(',', ':'))}"
              + ("," if i < len(opts) - 1 else "") for i, (k, v) in enumerate(opts)]
    lines += ["}", "}"]
    return "\n".join(lines) + "\n"


def write(wheel_path, output=None):
    """Write the catalog of `wheel_path` (default: the role's files/catalogs); its path."""
    version, catalog, pins = catalog_of(wheel_path)
    out = output or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "roles",
                                 "sglang_flags", "files", "catalogs", f"sglang-{version}.json")
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(render(version, wheel_path, catalog, pins))
    print(f"{out}: {len(catalog)} option strings of sglang {version}", file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel", help="sglang-X-*.whl")
    ap.add_argument("-o", "--output", help="default: roles/sglang_flags/files/catalogs/sglang-X.json")
    opts = ap.parse_args()
    write(opts.wheel, opts.output)


if __name__ == "__main__":
    main()

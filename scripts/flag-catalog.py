#!/usr/bin/env python3
"""Write the catalog of SGLang's launch flags from an sglang wheel, without importing it.

usage: flag-catalog.py SGLANG_WHEEL [-o roles/sglang_flags/files/catalogs/sglang-VERSION.json]

`python -m sglang.launch_server` parses its argv with argparse (prepare_server_args in
sglang/srt/server_args.py), which accepts any unique prefix of a long option. The lint
(roles/sglang_flags/filter_plugins/sglang_flags_catalog.py) needs every option string to
tell a full name from an abbreviation. This script reads the wheel's Python sources with
`ast` (no torch, no sglang import) and collects:

* every `parser.add_argument("--name", ...)` in ServerArgs.add_cli_args: its option strings,
  `dest`, and `choices` when they are literal;
* every field that `add_cli_args_from_dataclass` turns into an option (0.5.2x): the annotated
  fields `name: A[T, "help"]` / `A[T, Arg(...)]` of ServerArgs and of the namespace classes it
  collects (`_INPUT_NAMESPACES`), minus `Arg(no_cli=True)`; option `--name` (or `cli_name`)
  plus `aliases`, dest = the field name, choices from `Arg(choices=...)` or `Literal[...]`.

Choices that name a module constant are resolved when the constant is a literal in the same
module or in a module it imports the name from; anything computed is left out (no choices).
"""

import argparse
import ast
import json
import os
import re
import sys
import zipfile

SERVER_ARGS = "sglang/srt/server_args.py"
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

    def version(self):
        for name in self.names:
            m = re.match(r"^sglang-([^/]+)\.dist-info/METADATA$", name)
            if m:
                return m.group(1)
        raise SystemExit("not an sglang wheel: no sglang-*.dist-info/METADATA")


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
    """The value of a literal expression (names from `env`, `+` of lists), else _UNKNOWN."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id, _UNKNOWN)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_literal(e, env) for e in node.elts]
        return _UNKNOWN if _UNKNOWN in items else list(items)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left, env), _literal(node.right, env)
        if isinstance(left, list) and isinstance(right, list):
            return left + right
    return _UNKNOWN


def _choices(node, env):
    values = _literal(node, env)
    if not isinstance(values, list) or not all(isinstance(v, (str, int, float)) for v in values):
        return None
    return sorted({str(v) for v in values})


def _add(catalog, options, dest, choices):
    for opt in options:
        entry = {"dest": dest}
        if choices is not None:
            entry["choices"] = choices
        catalog[opt] = entry


def _add_argument_calls(func, env, catalog):
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
        _add(catalog, options, str(dest), _choices(kw["choices"], env) if "choices" in kw else None)


def _annotated_parts(annotation):
    """(type, metadata) of `A[T, meta, ...]` / `Annotated[...]`, else None."""
    if not isinstance(annotation, ast.Subscript):
        return None
    name = annotation.value
    name = name.attr if isinstance(name, ast.Attribute) else getattr(name, "id", "")
    if name not in ("A", "Annotated") or not isinstance(annotation.slice, ast.Tuple):
        return None
    return annotation.slice.elts[0], annotation.slice.elts[1:]


def _literal_type(node, env):
    """choices of `Literal[...]`, also inside `Optional[...]`."""
    if isinstance(node, ast.Subscript):
        head = getattr(node.value, "id", getattr(node.value, "attr", ""))
        if head == "Literal":
            inner = node.slice
            return _choices(inner if isinstance(inner, ast.Tuple) else ast.List([inner]), env)
        if head == "Optional":
            return _literal_type(node.slice, env)
    return None


def _dataclass_fields(cls, env, catalog):
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        parts = _annotated_parts(node.annotation)
        if parts is None:
            continue
        ftype, meta = parts
        arg = next((m for m in meta if isinstance(m, ast.Call)
                    and getattr(m.func, "id", getattr(m.func, "attr", "")) == "Arg"), None)
        if arg is None and not any(isinstance(m, (ast.Constant, ast.JoinedStr)) for m in meta):
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
        _add(catalog, [cli, *aliases], field, choices)


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
    wheel = Wheel(wheel_path)
    tree = wheel.module(SERVER_ARGS[:-3].replace("/", "."))
    if tree is None:
        raise SystemExit(f"{wheel_path}: no {SERVER_ARGS}")
    env = _constants(wheel, tree)
    catalog = {}
    for cls, cls_env in _namespace_classes(wheel, tree, env):
        _dataclass_fields(cls, cls_env, catalog)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "add_cli_args":
            _add_argument_calls(node, env, catalog)
    if not catalog:
        raise SystemExit(f"{wheel_path}: found no options in {SERVER_ARGS}")
    return wheel.version(), catalog


def render(version, wheel_path, catalog):
    """Compact, sorted JSON: a header, then one option per line."""
    header = {
        "generated_by": "scripts/flag-catalog.py " + os.path.basename(wheel_path),
        "how": "static parse (ast) of sglang/srt/server_args.py and the arg_groups it collects: "
               "add_argument option strings, dataclass fields turned into options; "
               "choices only where literal. Do not edit: regenerate.",
        "sglang": version,
    }
    lines = ["{"]
    lines += [f"{json.dumps(k)}:{json.dumps(v)}," for k, v in header.items()]
    lines.append('"options":{')
    opts = sorted(catalog.items())
    lines += [f"{json.dumps(k)}:{json.dumps(v, sort_keys=True, separators=(',', ':'))}"
              + ("," if i < len(opts) - 1 else "") for i, (k, v) in enumerate(opts)]
    lines += ["}", "}"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel", help="sglang-X-*.whl")
    ap.add_argument("-o", "--output", help="default: roles/sglang_flags/files/catalogs/sglang-X.json")
    opts = ap.parse_args()
    version, catalog = catalog_of(opts.wheel)
    out = opts.output or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "roles",
                                      "sglang_flags", "files", "catalogs", f"sglang-{version}.json")
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(render(version, opts.wheel, catalog))
    print(f"{out}: {len(catalog)} option strings of sglang {version}", file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write the options catalog of the installed smg (the gateway, roles/sglang_gateway).

usage: <smg's python> scripts/smg_catalog.py [OUT_DIR]

Run with the interpreter of a venv holding the smg release to read (.cache/smg-venv holds the
role's pinned one: scripts/bootstrap.sh): it builds smg's own parser the way its launcher does
(``RouterArgs.add_cli_args(parser, use_router_prefix=False)``, smg/launch_router.py) and writes
every option string with its ``dest``, literal ``default``, ``choices`` and ``nargs`` to
OUT_DIR/smg-<version>.json (default roles/sglang_gateway/files/catalogs/), the version read from
the installed distribution's metadata. Standard library and smg only: smg's venv has no Ansible.
The catalogs are what the role's input check (sglang_gateway_extra_args) and its tests hold the
options against, one file per smg version, as roles/sglang_flags/files/catalogs/ is for SGLang.
"""

import argparse
import importlib.metadata
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DIR = os.path.join(ROOT, "roles", "sglang_gateway", "files", "catalogs")


def _literal(value):
    """The value when JSON holds it as it is, else its repr (a callable, a sentinel)."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def catalog():
    """{smg, how, options: {option string: {dest, default, choices?, nargs?}}} of the installed smg."""
    from smg.router_args import RouterArgs  # pylint: disable=import-outside-toplevel - smg's venv only

    parser = argparse.ArgumentParser(add_help=False)
    RouterArgs.add_cli_args(parser, use_router_prefix=False)
    options = {}
    for action in parser._actions:  # pylint: disable=protected-access - argparse keeps them only here
        for option in action.option_strings:
            entry = {"dest": action.dest, "default": _literal(action.default)}
            if action.choices is not None:
                entry["choices"] = sorted(str(c) for c in action.choices)
            if action.nargs is not None:
                entry["nargs"] = action.nargs if isinstance(action.nargs, (int, str)) else repr(action.nargs)
            options[option] = entry
    return {"smg": importlib.metadata.version("smg"),
            "how": "scripts/smg_catalog.py: smg.router_args.RouterArgs.add_cli_args(use_router_prefix=False), "
                   "the parser of smg/launch_router.py",
            "options": dict(sorted(options.items()))}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out_dir = argv[0] if argv else DEFAULT_DIR
    data = catalog()
    path = os.path.join(out_dir, "smg-%s.json" % data["smg"])
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print("%s: %d option strings" % (path, len(data["options"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())

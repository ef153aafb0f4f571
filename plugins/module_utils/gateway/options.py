# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of each smg release the gateway role knows, from its catalogs
(roles/sglang_gateway/files/catalogs/smg-<version>.json, written from smg's own parser by
scripts/smg_catalog.py), for the role's input check (plugins/module_utils/gateway/inputs.py):
an option of ``sglang_gateway_extra_args`` that the pinned smg does not have is refused before a
unit is written, with the closest options it has. Standard library only."""

import difflib
import json
import os

CATALOG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "roles", "sglang_gateway",
                           "files", "catalogs")
SOURCE = "roles/sglang_gateway/files/catalogs/smg-{version}.json (scripts/smg_catalog.py)"


def catalog(version, directory=None):
    """{smg, options} of smg ``version``'s catalog, or None when there is none."""
    path = os.path.join(directory or CATALOG_DIR, "smg-%s.json" % str(version or "").strip())
    if not version or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def newest(directory=None):
    """The newest smg version with a catalog ("" when there is none): the role's pin, where the
    check runs without the role's defaults (the lint's first task judges what the inventory sets)."""
    names = [n[len("smg-"):-len(".json")] for n in os.listdir(directory or CATALOG_DIR)
             if n.startswith("smg-") and n.endswith(".json")]
    return max(names, key=lambda v: [int(p) if p.isdigit() else 0 for p in v.split(".")], default="")


def unknown(name, options):
    """"" when ``--name`` is an option of ``options`` (a catalog's), else the closest ones in words."""
    option = "--" + str(name).lstrip("-")
    if option in options:
        return ""
    close = difflib.get_close_matches(option, list(options), n=3, cutoff=0.6)
    return "closest: %s" % ", ".join(close) if close else "no close option"

"""SGLang's own flag list (a catalog per SGLang version), and what it says about flag names.

``python -m sglang.launch_server`` parses its argv with argparse, which accepts any unique
prefix of a long option: ``--moe-runner flashinfer_trtllm`` sets ``--moe-runner-backend``. The
rules table names flags in full, so an abbreviation would slip past them. The catalog lists
every option string SGLang registers, with its ``dest`` and its ``choices`` where they are
literal; ``scripts/flag-catalog.py`` writes it from an sglang wheel into
``files/catalogs/sglang-<version>.json``. The catalog is picked by the SGLang version the host
declares (``sglang_flags_sglang_version``); a version without one is judged without it (a
warning says so).
"""

from __future__ import annotations

import glob
import json
import os
import re

CATALOG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "files", "catalogs")
CATALOG_SOURCE = "roles/sglang_flags/files/catalogs/sglang-{version}.json (scripts/flag-catalog.py)"
_CACHE: dict = {}


def _public(version) -> str:
    """``0.5.23+g1a2b`` -> ``0.5.23``: a local build has the flags of its public version."""
    return str(version or "").strip().lstrip("v").split("+")[0]


def catalog_versions(directory=None) -> list:
    """Versions that have a catalog in ``directory`` (default: the role's files/catalogs)."""
    names = glob.glob(os.path.join(directory or CATALOG_DIR, "sglang-*.json"))
    return sorted(re.sub(r"^sglang-(.*)\.json$", r"\1", os.path.basename(n)) for n in names)


def sglang_flags_catalog_of(version, directory=None) -> dict:
    """The catalog of SGLang ``version``: ``{sglang, options: {"--name": {dest, choices?}}}``,
    or ``{}`` when there is none for that version (or the version is unknown)."""
    public = _public(version)
    path = os.path.join(directory or CATALOG_DIR, f"sglang-{public}.json")
    if not public or not os.path.isfile(path):
        return {}
    if path not in _CACHE:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        _CACHE[path] = {"sglang": data["sglang"], "options": data["options"]}
    return _CACHE[path]


def resolve(flag: str, catalog: dict):
    """How argparse reads ``--flag`` (a normalised name without dashes), as
    ``(kind, names)``: ``("known", [flag])``, ``("abbreviation", [full])``,
    ``("ambiguous", [candidates...])`` or ``("unknown", [])``. Without a catalog every
    name is ``known``."""
    options = (catalog or {}).get("options")
    if not options:
        return "known", [flag]
    option = "--" + flag
    if option in options:
        return "known", [flag]
    matches = sorted(o for o in options if o.startswith(option))
    if len(matches) == 1:
        return "abbreviation", [matches[0][2:]]
    if matches:
        return "ambiguous", [m[2:] for m in matches]
    return "unknown", []


def full_name(flag: str, catalog: dict) -> str:
    """The option argparse reads ``--flag`` as: the full name of an abbreviation, else flag."""
    kind, names = resolve(flag, catalog)
    return names[0] if kind == "abbreviation" else flag


def entry(flag: str, catalog: dict) -> dict:
    """The catalog's entry of ``--flag`` (``{}`` when unknown or there is no catalog)."""
    return ((catalog or {}).get("options") or {}).get("--" + flag, {})


def _finding(rule, severity, flag, value, message, fix, catalog):
    return {
        "rule": rule,
        "severity": severity,
        "status": "violation",
        "flag": flag,
        "value": value,
        "message": message,
        "fix": fix,
        "source": CATALOG_SOURCE.format(version=(catalog or {}).get("sglang", "X")),
    }


def name_findings(flag: str, value, catalog: dict, renamed=()) -> list:
    """Findings on one flag name (already normalised): abbreviation and ambiguous prefix
    (errors: SGLang would accept or refuse them, the rules would not see them), unknown
    (warning: the host's own check refuses it; flags that a rule renames are that rule's)."""
    kind, names = resolve(flag, catalog)
    var = f"sglang_server_args['{flag}']"
    version = catalog.get("sglang") if catalog else ""
    if kind == "abbreviation":
        return [_finding(
            "flag-abbreviation", "error", flag, value,
            f"{var} is an abbreviation of --{names[0]}: SGLang {version}'s argparse accepts it, "
            "the rules table and later SGLang versions (a new flag with the same prefix) do not",
            f"write it in full: {names[0]}", catalog)]
    if kind == "ambiguous":
        return [_finding(
            "flag-ambiguous", "error", flag, value,
            f"{var} is a prefix of {len(names)} flags of SGLang {version} "
            f"({', '.join('--' + n for n in names)}): argparse refuses it as ambiguous",
            "write the flag you mean in full", catalog)]
    if kind == "unknown" and flag not in renamed:
        return [_finding(
            "flag-unknown", "warning", flag, value,
            f"{var}: SGLang {version} has no flag --{flag} (the host's own check will refuse it)",
            "correct the name (see `python -m sglang.launch_server --help`) or remove it", catalog)]
    return []


def value_findings(flag: str, values: list, catalog: dict) -> list:
    """A value outside the flag's literal ``choices`` (argparse refuses it on the host)."""
    choices = entry(flag, catalog).get("choices")
    bad = [v for v in values if choices and v not in choices]
    if not bad:
        return []
    return [_finding(
        "flag-choice", "error", flag, " ".join(bad),
        f"sglang_server_args['{flag}'] = {' '.join(bad)!r} is not one of SGLang "
        f"{catalog.get('sglang')}'s choices for --{flag}",
        f"use one of: {', '.join(choices)}", catalog)]


def duplicate_findings(full_names: dict, catalog: dict) -> list:
    """Two flags that set the same option (``tp-size`` and ``tensor-parallel-size``, or ``tp``
    and ``tp-size``): argparse keeps the last one silently. ``full_names``: given -> full name."""
    by_dest: dict = {}
    for given, full in full_names.items():
        dest = entry(full, catalog).get("dest")
        if dest:
            by_dest.setdefault(dest, []).append(given)
    return [
        _finding(
            "flag-duplicate", "error", same[0], None,
            f"sglang_server_args sets {' and '.join('--' + f for f in same)}, the same option "
            f"({dest}): SGLang keeps the last one silently",
            "keep one of them", catalog)
        for dest, same in sorted(by_dest.items()) if len(same) > 1
    ]


def missing_catalog_findings(version) -> list:
    """A warning when the host's SGLang version has no catalog: names are not checked."""
    have = ", ".join(catalog_versions()) or "none"
    what = f"SGLang {version}" if _public(version) else "an unknown SGLang version"
    return [{
        "rule": "flag-catalog-missing",
        "severity": "warning",
        "status": "unknown-version",
        "flag": "sglang_flags_sglang_version",
        "value": version,
        "message": f"no flag catalog for {what} (catalogs: {have}): flag names were not checked "
                   "for abbreviations or typos",
        "fix": "add one: scripts/flag-catalog.py sglang-<version>-*.whl",
        "source": "roles/sglang_flags/files/catalogs/",
    }]


class FilterModule:
    def filters(self):
        return {"sglang_flags_catalog_of": sglang_flags_catalog_of}

"""SGLang's own flag list (a catalog per SGLang version), and what it says about flag names.

``python -m sglang.launch_server`` parses its argv with argparse, which accepts any unique
prefix of a long option: ``--moe-runner flashinfer_trtllm`` sets ``--moe-runner-backend``. The
rules table names flags in full, so an abbreviation would slip past them. The catalog lists
every option string SGLang registers, with its ``dest``, its ``choices`` and ``default`` where
they are literal and what SGLang says about its deprecation; ``scripts/flag_catalog.py`` writes
it from an sglang wheel into ``files/catalogs/sglang-<version>.json``. The catalog is picked by
the SGLang version the host declares (``sglang_flags_sglang_version``); a version without one
is judged without it (a warning says so).

Where the catalog is exact (the declared version has one), a name it does not know is an error
naming the closest known flags (``difflib``), unless the site lists it in
``sglang_flags_extra_known_flags`` (a flag its patched SGLang adds: ``sglang_flags_catalog_extend``
adds those names to the catalog, so they are known, and are still checked as values). Without a
catalog (a dev or nightly version) nothing can be refused as unknown: a warning says so, and the
host's own check (files/sglang_preflight.py, the installed SGLang's argparse) still refuses it.

The other versions' catalogs give each name the host's version lacks a history: removed
(last seen in L, gone in R, with the replacement SGLang named when it deprecated it, or the one
``sglang_flags_removed_flags`` in vars/main.yml records) or not there yet (first in N).
"""

from __future__ import annotations

import difflib
import glob
import json
import os
import re

from ansible.errors import AnsibleFilterError

# siblings of the collection, imported by name
from ansible_collections.sglang.deploy.plugins.module_utils.flags import model as _model
from ansible_collections.sglang.deploy.plugins.module_utils.flags import version as _versions
CATALOG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "roles", "sglang_flags", "files", "catalogs")
CATALOG_SOURCE = "roles/sglang_flags/files/catalogs/sglang-{version}.json (scripts/flag_catalog.py)"
HISTORY_SOURCE = "roles/sglang_flags/files/catalogs/ (sglang {versions}); docs/sglang-versions.md"
_CACHE: dict = {}
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def _public(version) -> str:
    """``0.5.23+g1a2b`` -> ``0.5.23``: a local build has the flags of its public version."""
    return _versions.public_version(version)


def catalog_versions(directory=None) -> list:
    """Versions that have a catalog in ``directory`` (default: the role's files/catalogs),
    oldest first (PEP 440 order)."""
    names = glob.glob(os.path.join(directory or CATALOG_DIR, "sglang-*.json"))
    found = [re.sub(r"^sglang-(.*)\.json$", r"\1", os.path.basename(n)) for n in names]
    return sorted((v for v in found if _versions.is_version(v)), key=_versions.version_key)


def load_catalog(path) -> dict:
    """``{sglang, requires, options}`` of one catalog file (cached by path)."""
    if path not in _CACHE:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        _CACHE[path] = {"sglang": data["sglang"], "requires": data.get("requires", {}),
                        "options": data["options"]}
    return _CACHE[path]


def _catalog_file(version, directory=None):
    public = _public(version)
    path = os.path.join(directory or CATALOG_DIR, f"sglang-{public}.json")
    return path if public and os.path.isfile(path) else ""


def sglang_flags_catalog_of(version, removed=None, directory=None) -> dict:
    """The catalog of SGLang ``version``: ``{sglang, requires, options: {"--name": {dest,
    choices?, default?, deprecated?, rejected?}}, history: {name: ...}}``, or ``{}`` when there
    is none for that version (or the version is unknown). ``removed``: the hand-kept table of
    replacements (``sglang_flags_removed_flags``)."""
    path = _catalog_file(version, directory)
    if not path:
        return {}
    catalog = dict(load_catalog(path))
    catalog["history"] = flag_history(catalog["sglang"], removed, directory)
    return catalog


def sglang_flags_catalog_extend(catalog, extra=None) -> dict:
    """``catalog`` with the names of ``extra`` (``sglang_flags_extra_known_flags``: flags a
    site's patched SGLang adds, no dashes) among its options, so that the name checks know them
    (their values are still checked). A catalog that is ``{}`` (no exact catalog) stays as it is:
    nothing is refused as unknown there anyway. A name that is not a flag name raises."""
    if extra in (None, ""):
        extra = []
    if not isinstance(extra, (list, tuple)):
        raise AnsibleFilterError("sglang_flags_extra_known_flags must be a list of flag names "
                                 "without dashes, e.g. [my-site-flag]")
    names = []
    for name in extra:
        text = str(name)
        if not _NAME_RE.match(text):
            raise AnsibleFilterError(
                f"sglang_flags_extra_known_flags: {text!r} is not a flag name: write the long option "
                "without its leading dashes, in lower case, e.g. my-site-flag")
        names.append(text)
    if not names or not (catalog or {}).get("options"):
        return catalog
    out = dict(catalog)
    out["options"] = dict(catalog["options"])
    for name in names:
        out["options"].setdefault("--" + name, {"extra_known": "sglang_flags_extra_known_flags"})
    return out


def flag_history(version, removed=None, directory=None) -> dict:
    """Every flag name (no dashes) that another catalog has and ``version``'s lacks:
    ``{status: removed, last, gone, replacement, note, source}`` or ``{status: added, first}``."""
    key = (os.path.abspath(directory or CATALOG_DIR), _public(version),
           json.dumps(removed or {}, sort_keys=True, default=str))
    if key in _CACHE:
        return _CACHE[key]
    versions = catalog_versions(directory)
    options = {v: load_catalog(_catalog_file(v, directory))["options"] for v in versions}
    here = _versions.version_key(version)
    mine = options.get(_public(version), {})
    history: dict = {}
    for name in sorted({o for opts in options.values() for o in opts} - set(mine)):
        had = [v for v in versions if name in options[v]]
        older = [v for v in had if _versions.version_key(v) < here]
        flag = name[2:]
        if not older:
            history[flag] = {"status": "added", "first": had[0]}
            continue
        last = older[-1]
        later = [v for v in versions if _versions.version_key(last) < _versions.version_key(v) <= here]
        entry = {"status": "removed", "last": last, "gone": later[0] if later else _public(version),
                 "replacement": "", "note": "", "source": HISTORY_SOURCE.format(versions=", ".join(versions))}
        said = options[last][name].get("deprecated")
        if isinstance(said, str):
            entry.update(replacement=said, note=f"SGLang {last} named it when it deprecated the flag")
        hand = (removed or {}).get(flag)
        if isinstance(hand, dict):
            entry.update({k: str(hand[k]) for k in ("replacement", "note", "source") if hand.get(k) is not None})
        history[flag] = entry
    _CACHE[key] = history
    return history


def resolve(flag: str, catalog: dict):
    """How argparse reads ``--flag`` (a normalised name without dashes), as
    ``(kind, names)``: ``("known", [flag])``, ``("abbreviation", [full])``,
    ``("ambiguous", [candidates...])`` or ``("unknown", [])``. Without a catalog every
    name is ``known``."""
    options = (catalog or {}).get("options")
    if not options:
        return "known", [flag]
    return _model.resolve_flag(flag, options)


def full_name(flag: str, catalog: dict) -> str:
    """The option argparse reads ``--flag`` as: the full name of an abbreviation, else flag."""
    kind, names = resolve(flag, catalog)
    return names[0] if kind == "abbreviation" else flag


def entry(flag: str, catalog: dict) -> dict:
    """The catalog's entry of ``--flag`` (``{}`` when unknown or there is no catalog)."""
    return ((catalog or {}).get("options") or {}).get("--" + flag, {})


def _finding(rule, severity, flag, value, message, fix, catalog, source=None):
    return {
        "rule": rule,
        "severity": severity,
        "status": "violation",
        "flag": flag,
        "value": value,
        "message": message,
        "fix": fix,
        "source": source or CATALOG_SOURCE.format(version=(catalog or {}).get("sglang", "X")),
    }


def _reading(kind, names) -> str:
    """How argparse of this version reads a name that is not one of its options."""
    if kind == "abbreviation":
        return f"argparse reads it as an abbreviation of --{names[0]}, a different option"
    if kind == "ambiguous":
        return f"argparse refuses it as an ambiguous prefix of {', '.join('--' + n for n in names)}"
    return "argparse refuses it (unrecognized arguments)"


def _replacement_fix(hist, catalog) -> str:
    """The fix of a removed flag: its replacement (followed once when that one is gone too)."""
    new = hist.get("replacement") or ""
    note = f" ({hist['note']})" if hist.get("note") else ""
    if not new:
        return f"remove it: SGLang has no replacement{note}"
    fix = f"use {new} instead{note}"
    m = re.match(r"^--([a-z0-9][a-z0-9-]*)", new)
    later = (catalog.get("history") or {}).get(m.group(1)) if m else None
    if later and later.get("status") == "removed":
        fix += (f"; {m.group(1)} itself is gone since {later['gone']}: "
                + _replacement_fix(later, catalog))
    return fix


def _history_finding(flag, value, kind, names, hist, catalog):
    version, var = catalog.get("sglang"), f"sglang_server_args['{flag}']"
    if hist["status"] == "added":
        return _finding(
            "flag-too-new", "error", flag, value,
            f"{var}: --{flag} first appears in SGLang {hist['first']}; {version} does not have "
            f"it and {_reading(kind, names)}",
            f"upgrade SGLang to >= {hist['first']} (the sglang pin in ml_env_packages) or remove it",
            catalog, hist.get("source"))
    return _finding(
        "flag-removed", "error", flag, value,
        f"{var}: --{flag} was removed from SGLang (last in {hist['last']}, gone in "
        f"{hist['gone']}); {version} {_reading(kind, names)[len('argparse '):]}",
        _replacement_fix(hist, catalog), catalog, hist.get("source"))


def name_findings(flag: str, value, catalog: dict, renamed=()) -> list:
    """Findings on one flag name (already normalised): a name the version lacks but another
    version has (removed, with its replacement; or too new), an abbreviation or ambiguous
    prefix (errors: SGLang would accept or refuse them, the rules would not see them), a
    deprecated or refused spelling, unknown (an error: the catalog is exact; the closest known
    names are given). Flags that a rule renames (``renamed``) are that rule's."""
    kind, names = resolve(flag, catalog)
    var = f"sglang_server_args['{flag}']"
    version = catalog.get("sglang") if catalog else ""
    hist = (catalog.get("history") or {}).get(flag) if catalog and kind != "known" else None
    if hist and flag not in renamed:
        return [_history_finding(flag, value, kind, names, hist, catalog)]
    if kind == "known" and flag not in renamed:
        said = entry(flag, catalog)
        if said.get("rejected"):
            return [_finding(
                "flag-refused", "error", flag, value,
                f"{var}: SGLang {version} stops the launch on --{flag}: {said['rejected']!r}",
                f"remove it{'; use ' + said['deprecated'] if isinstance(said.get('deprecated'), str) else ''}",
                catalog)]
        if said.get("deprecated"):
            new = said["deprecated"]
            return [_finding(
                "flag-deprecated", "warning", flag, value,
                f"{var}: --{flag} is deprecated in SGLang {version} (it warns at start-up and is "
                "due for removal)",
                f"use {new} instead" if isinstance(new, str) else "remove it (SGLang names no replacement)",
                catalog)]
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
        return [_unknown_finding(flag, value, catalog)]
    return []


def close_flags(flag: str, catalog: dict, n=3) -> list:
    """Up to ``n`` flag names of ``catalog`` closest to ``flag`` (difflib's ratio, best first)."""
    known = [o[2:] for o in (catalog or {}).get("options") or {}]
    return difflib.get_close_matches(flag, known, n=n, cutoff=0.6)


def _unknown_finding(flag, value, catalog):
    """An error: the catalog of the declared version is exact, and SGLang's argparse refuses
    the name (``unrecognized arguments``), naming the closest known flags."""
    version, close = catalog.get("sglang"), close_flags(flag, catalog)
    near = f"; the closest flags it has: {', '.join('--' + c for c in close)}" if close else ""
    write = f"write the flag you mean (e.g. {close[0]})" if close else \
        "correct the name (see `python -m sglang.launch_server --help`)"
    return _finding(
        "flag-unknown", "error", flag, value,
        f"sglang_server_args['{flag}']: SGLang {version} has no flag --{flag}, and its argparse "
        f"refuses it (unrecognized arguments){near}",
        f"{write} or remove it; a flag your site's patched SGLang adds: list it in "
        "sglang_flags_extra_known_flags", catalog)


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
        "message": f"no exact flag catalog exists for {what} (catalogs: {have}), so unknown flag "
                   "names could not be refused and abbreviations were not written in full; the "
                   "host's own check (the installed SGLang's argparse) still refuses an unknown name",
        "fix": "add one: scripts/flag_catalog.py sglang-<version>-*.whl",
        "source": "roles/sglang_flags/files/catalogs/",
    }]

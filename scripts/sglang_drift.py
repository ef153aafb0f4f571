#!/usr/bin/env python3
"""`make drift`: what the newest SGLang on the configured indexes would do to every profile.

usage: sglang_drift.py [--sglang X] [--index-url URL ...] [--newest-catalog FILE] [ROOT]

1. Downloads the newest sglang wheel (`pip download --no-deps`, binary only) from the indexes
   of the production profile's ml_env spec (ml_env_index_url, ml_env_extra_index_urls,
   ml_env_pre), or `--sglang X`, into a temporary directory, and writes its flag catalog there
   with scripts/flag_catalog.py (torch, flashinfer and sglang-kernel pins from its METADATA).
   `--newest-catalog FILE` uses a catalog that exists instead (no network).
2. Reads every profile: inventories/*/group_vars/all merged with each other group directory.
3. Judges each profile as playbooks/lint.yml does (input checks and catalog, rules table,
   deploy rules: plugins/module_utils/flags/*.py) once with its declared SGLang version and
   once with the newest, and reports the findings the newest adds (flags rejected, renamed,
   removed), the defaults that changed for flags the profile leaves unset (literal defaults of
   the two catalogs), and the pins that would move.
4. Names every flag the newest version has retired or deprecated that a tracked file of the
   repository still names, with its replacement (scripts/sglang_drift_mentions.py).
5. Reads again, in the newest sglang wheel and the flashinfer-python wheel it pins, the source
   lines the rules rest on (their ``watch``), and names each rule whose fact changed
   (scripts/sglang_drift_watch.py).

Exit status: 1 when the production profile (inventories/production) has an error with the
newest version, 2 when the newest version cannot be fetched or read, else 0.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRODUCTION = "production"
PINNED = ("torch", "flashinfer-python", "sglang-kernel")
FOLLOWS_FLASHINFER = ("flashinfer-cubin", "flashinfer-jit-cache")  # and every jit-cache provider


from ansible_collections.sglang.deploy.plugins.module_utils.flags import inputs as I
from ansible_collections.sglang.deploy.plugins.module_utils.flags import catalog as C
from ansible_collections.sglang.deploy.plugins.module_utils.flags import rules as R
from ansible_collections.sglang.deploy.plugins.module_utils.flags import deploy as D
from ansible_collections.sglang.deploy.plugins.module_utils.flags import requirements as Q
from ansible_collections.sglang.deploy.scripts import sglang_drift_mentions as M
from ansible_collections.sglang.deploy.scripts import sglang_drift_watch as W


def _yaml_dir(directory):
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.yml")) + glob.glob(os.path.join(directory, "*.yaml"))):
        with open(path, encoding="utf-8") as fh:
            out.update(yaml.safe_load(fh) or {})
    return out


def profiles(root=ROOT):
    """[(inventory/group, merged variables)] of every inventory's group_vars (all + group)."""
    found = []
    for inv in sorted(glob.glob(os.path.join(root, "inventories", "*", "group_vars"))):
        name = os.path.basename(os.path.dirname(inv))
        base = _yaml_dir(os.path.join(inv, "all")) if os.path.isdir(os.path.join(inv, "all")) else {}
        groups = sorted(g for g in os.listdir(inv) if g != "all" and os.path.isdir(os.path.join(inv, g)))
        for group in groups or ["all"]:
            merged = dict(base, **(_yaml_dir(os.path.join(inv, group)) if group != "all" else {}))
            if "sglang_server_args" in merged:
                found.append((f"{name}/{group}", merged))
    return found


def _packages(prof):
    return list(prof.get("ml_env_packages") or []) + list(prof.get("ml_env_packages_nodeps") or [])


def _env(prof):
    """sglang_server_env with the opt-in PCIe levers, as roles/sglang_flags/defaults does."""
    env = dict(prof.get("sglang_server_env") or {})
    for var, lever, value in (("SGLANG_ENABLE_PCIE_IPC_ALLREDUCE", "sglang_server_pcie_ipc_allreduce", "1"),
                              ("NCCL_IB_DISABLE", "sglang_server_nccl_ib_disable", "1"),
                              ("NCCL_P2P_LEVEL", "sglang_server_nccl_p2p_level_sys", "SYS")):
        if prof.get(lever):
            env[var] = value
    return env


def judge(prof, version, rules, removed, catalog_dir=None):
    """Every finding of the lint on one profile, as if it declared SGLang ``version``."""
    args, env = prof.get("sglang_server_args") or {}, _env(prof)
    catalog = C.sglang_flags_catalog_extend(C.sglang_flags_catalog_of(version, removed, catalog_dir),
                                            prof.get("sglang_flags_extra_known_flags"))
    findings = I.sglang_flags_inputs(args, env=env, unit={}, catalog=catalog, rules=rules, version=version)
    findings += R.sglang_flags_check(
        I.sglang_flags_expand(args, catalog), rules, env=env, sm=prof.get("gpu_host_expected_sm") or "",
        version=version, gpu_count=prof.get("gpu_host_expected_gpu_count") or None,
        packages=R.sglang_flags_package_names(_packages(prof)), waive=prof.get("sglang_flags_waive"),
        errors_as_findings=True)
    deploy = {k: prof.get(k) for k in D.DEPLOY_INPUTS}
    findings += D.sglang_flags_deploy_findings(deploy, rules, args, prof.get("sglang_flags_waive"),
                                               sm=prof.get("gpu_host_expected_sm") or "")
    return findings


def added_findings(before, after):
    """Findings of ``after`` whose (rule, flag, severity) ``before`` did not have."""
    seen = {(f["rule"], f["flag"], f["severity"]) for f in before}
    return [f for f in after if (f["rule"], f["flag"], f["severity"]) not in seen]


def _dests(args, catalog):
    out = set()
    for flag in I.sglang_flags_expand(args, catalog):
        dest = C.entry(flag, catalog).get("dest")
        out.add(dest or flag.replace("-", "_"))
    return out


def default_changes(args, old, new):
    """[(option, old default, new default)] for options of both catalogs whose literal default
    changed and whose field the profile does not set (in either version's reading)."""
    unset = lambda o, cat: cat["options"][o].get("dest") not in _dests(args, old) | _dests(args, new)  # noqa: E731
    out, done = [], set()
    for opt in sorted(set(old.get("options", {})) & set(new.get("options", {}))):
        a, b = old["options"][opt], new["options"][opt]
        if "default" not in a or "default" not in b or a["default"] == b["default"]:
            continue
        if opt.startswith("--no-") or a.get("deprecated") or b.get("deprecated") or b["dest"] in done:
            continue
        if unset(opt, new):
            done.add(b["dest"])
            out.append((opt, a["default"], b["default"]))
    return out


def _pins(prof):
    pins = {}
    for req in _packages(prof):
        parsed = Q.parse_requirement(req)
        if Q.exact_pin(parsed):
            pins[Q.canonical_package(parsed.name)] = Q.exact_pin(parsed)
    return pins


def pin_moves(prof, declared, newest, old_requires, new_requires):
    """[(name, from, to)] that would move: the sglang pin; torch, flashinfer-python and
    sglang-kernel where the profile pins them (its pin against the newest sglang's) or, when
    sglang is installed with its dependencies, where sglang's own pin moves; flashinfer-cubin,
    -jit-cache and its providers (flashinfer-jit-cache-sm120f) pinned by the profile, which must
    follow flashinfer-python (the shim and providers keep their CUDA label)."""
    pins, moves = _pins(prof), []
    with_deps = "sglang" in R.sglang_flags_package_names(prof.get("ml_env_packages") or [])
    if declared != newest:
        moves.append(("sglang", "==" + declared if declared else "not pinned", "==" + newest))
    for name in PINNED:
        want = (new_requires or {}).get(name)
        if not want:
            continue
        if name in pins and "==" + pins[name] != want:
            moves.append((name, "==" + pins[name], want))
        elif name not in pins and with_deps and (old_requires or {}).get(name) != want:
            moves.append((name, f"{(old_requires or {}).get(name) or '?'} (sglang's pin)", want))
    fi = (new_requires or {}).get("flashinfer-python", "")
    for name in sorted(n for n in pins if n in FOLLOWS_FLASHINFER or n.startswith("flashinfer-jit-cache-")):
        if fi.startswith("==") and pins[name].split("+")[0] != fi[2:]:
            local = "+" + pins[name].split("+", 1)[1] if "+" in pins[name] else ""
            moves.append((name, "==" + pins[name], fi + local + " (matches flashinfer-python)"))
    return moves


def _indexes(prof, index_urls=None):
    return index_urls or [prof.get("ml_env_index_url") or "https://pypi.org/simple"] \
        + list(prof.get("ml_env_extra_index_urls") or [])


def download(requirement, dest, indexes, pre=False):
    """``pip download --no-deps`` of one requirement into ``dest``; (returncode, pip's message)."""
    cmd = [sys.executable, "-m", "pip", "download", "--isolated", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--quiet", "-d", dest, "--index-url", indexes[0]]
    for url in indexes[1:]:
        cmd += ["--extra-index-url", url]
    if pre:
        cmd.append("--pre")
    cmd.append(requirement)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    return proc.returncode, (proc.stderr or proc.stdout)[-2000:]


def fetch_newest(prof, dest, version="", index_urls=None):
    """Download sglang (newest, or ``version``) with the profile's indexes; the wheel's path."""
    indexes = _indexes(prof, index_urls)
    code, said = download(f"sglang=={version}" if version else "sglang", dest, indexes, bool(prof.get("ml_env_pre")))
    wheels = glob.glob(os.path.join(dest, "sglang-*.whl"))
    if code != 0 or not wheels:
        raise SystemExit(f"drift: could not download sglang: {said}")
    return wheels[0], indexes


def wheel_fetcher(prof, dest, sglang_wheel, index_urls=None):
    """The ``fetch(package, version)`` of sglang_drift_watch: the sglang wheel downloaded already,
    the flashinfer-python wheel downloaded on demand; None when it cannot be had."""
    def fetch(package, version):
        if package == "sglang":
            return sglang_wheel
        code, said = download(f"{package}=={version}", dest, _indexes(prof, index_urls))
        found = glob.glob(os.path.join(dest, package.replace("-", "_") + "-" + version + "-*.whl"))
        if code != 0 or not found:
            print(f"drift: could not download {package}=={version}: {said}", file=sys.stderr)
            return None
        return found[0]
    return fetch


def report(profs, newest, catalog_dir, rules, removed):
    """(lines, exit status) of the drift report for every profile."""
    lines, status = [], 0
    new_cat = C.sglang_flags_catalog_of(newest, removed, catalog_dir)
    for name, prof in profs:
        declared = R.sglang_flags_version_from_spec(_packages(prof))
        before = judge(prof, declared, rules, removed, catalog_dir) if declared else []
        after = judge(prof, newest, rules, removed, catalog_dir)
        added = added_findings(before, after)
        errors = [f for f in after if f["severity"] == "error"]
        broken = name.startswith(PRODUCTION + "/") and errors
        status = 1 if broken else status
        lines.append(f"== {name}: declares sglang {declared or '(none)'}, newest {newest}"
                     + (" (BREAKS)" if broken else ""))
        for f in added:
            lines.append("  " + R.sglang_flags_format([f])[0].replace(" (source: ", "\n      (source: "))
        if not added:
            lines.append("  flags: nothing new against the newest version")
        if errors and not added:
            lines += ["  (already failing:) " + R.sglang_flags_format([f])[0] for f in errors]
        old_cat = C.sglang_flags_catalog_of(declared, removed, catalog_dir) if declared else {}
        changes = default_changes(prof.get("sglang_server_args") or {}, old_cat, new_cat) if old_cat else []
        lines += [f"  default {opt}: {json.dumps(a)} -> {json.dumps(b)} (not set by the profile)"
                  for opt, a, b in changes]
        if not old_cat:
            lines.append(f"  defaults: no catalog for the declared version {declared or '(none)'}")
        moves = pin_moves(prof, declared, newest, old_cat.get("requires"), new_cat.get("requires"))
        lines += [f"  pin {n}: {a} -> {b}" for n, a, b in moves]
        if not moves:
            lines.append("  pins: none would move")
    return lines, status


def _rules():
    with open(os.path.join(ROOT, "roles", "sglang_flags", "vars", "main.yml"), encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    return data["sglang_flags_rules"], data.get("sglang_flags_removed_flags") or {}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default=ROOT, help="repository root (inventories/ under it)")
    ap.add_argument("--sglang", default="", help="this version instead of the newest")
    ap.add_argument("--index-url", action="append", help="indexes instead of the production spec's")
    ap.add_argument("--newest-catalog", help="a catalog JSON to judge against (no download)")
    opts = ap.parse_args(argv)
    rules, removed = _rules()
    profs = profiles(opts.root)
    prod = next((p for n, p in profs if n.startswith(PRODUCTION + "/")), profs[0][1] if profs else {})
    work = tempfile.mkdtemp(prefix="sglang-drift-")
    wheel = None
    try:
        for path in glob.glob(os.path.join(C.CATALOG_DIR, "sglang-*.json")):
            shutil.copy(path, work)
        if opts.newest_catalog:
            shutil.copy(opts.newest_catalog, work)
            with open(opts.newest_catalog, encoding="utf-8") as fh:
                newest = json.load(fh)["sglang"]
            where = opts.newest_catalog
        else:
            from ansible_collections.sglang.deploy.scripts import flag_catalog as catalog_script  # pylint: disable=import-outside-toplevel - only for a download
            wheel, indexes = fetch_newest(prod, work, opts.sglang, opts.index_url)
            catalog_script.write(wheel, os.path.join(work, "new.json"))
            with open(os.path.join(work, "new.json"), encoding="utf-8") as fh:
                newest = json.load(fh)["sglang"]
            os.replace(os.path.join(work, "new.json"), os.path.join(work, f"sglang-{newest}.json"))
            where = f"{os.path.basename(wheel)} from {', '.join(indexes)}"
        committed = C.catalog_versions()
        print(f"drift: newest sglang {newest} ({where}); committed catalogs: {', '.join(committed)}"
              + ("" if newest in committed else f"; add it: scripts/flag_catalog.py sglang-{newest}-*.whl"))
        requires = C.load_catalog(os.path.join(work, f"sglang-{newest}.json")).get("requires", {})
        print("drift: its pins: " + (", ".join(f"{k}{v}" for k, v in sorted(requires.items())) or "none"))
        lines, status = report(profs, newest, work, rules, removed)
        lines += M.report_lines(opts.root, newest, removed, work)
        pinned = requires.get("flashinfer-python", "")
        lines += W.report_lines(rules, {"sglang": newest, "flashinfer-python": pinned[2:] if pinned.startswith("==") else ""},
                                (lambda package, version: None) if opts.newest_catalog  # no network
                                else wheel_fetcher(prod, work, wheel, opts.index_url))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(lines))
    print(f"drift: {'the production profile would break on ' + newest if status else 'no profile of production breaks'}")
    return status


if __name__ == "__main__":
    sys.exit(main())

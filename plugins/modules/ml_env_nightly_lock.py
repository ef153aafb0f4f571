#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: ml_env_nightly_lock
short_description: Resolve the newest versions a package spec allows into a lock, once, on the controller
description:
  - The nightly track of ml_env (C(ml_env_track=nightly)). The spec (requirement lines with
    ranges or none, the indexes, C(--pre)) names a lock directory
    C(<lock_dir>/nightly/<spec hash>/). When that lock exists it is returned as it is, and the
    hosts install exactly it (hash-checked, like C(ml_env_lock_from)), so a spec keeps its
    versions from run to run even while its indexes move on.
  - With I(refresh) (C(-e ml_env_refresh=true)), or when there is no lock yet, pip's resolver
    (C(pip install --dry-run --ignore-installed --report)) picks the newest versions the indexes
    allow for the hosts' Python and platform, and the lock is replaced; the result lists the
    versions that moved.
  - Runs where the controller's pip can reach the indexes; it installs nothing.
options:
  requirements: {description: Requirements resolved with their dependencies., type: list, elements: str, default: []}
  requirements_nodeps: {description: Requirements resolved with C(--no-deps)., type: list, elements: str, default: []}
  index_url: {description: The index., type: str, default: "https://pypi.org/simple"}
  extra_index_urls: {description: Extra indexes., type: list, elements: str, default: []}
  find_links: {description: Extra C(--find-links) locations., type: list, elements: str, default: []}
  pre: {description: Allow pre-releases., type: bool, default: false}
  lock_dir: {description: Controller directory of the locks (ml_env_lock_dir)., type: path, required: true}
  refresh: {description: Resolve again even when the lock exists., type: bool, default: false}
  python: {description: Interpreter whose pip resolves., type: path, required: true}
  python_version: {description: "The hosts' Python (C(3.11)); empty: the controller's.", type: str, default: ""}
  platforms: {description: "The hosts' wheel platforms (C(manylinux_2_34_x86_64)); empty: the controller's.", type: list, elements: str, default: []}
  timeout: {description: Seconds pip may take., type: int, default: 1800}
author: [sglang_deploy contributors]
"""

EXAMPLES = r"""
- name: Resolve (or reuse) the lock of the nightly spec on the controller
  sglang.deploy.ml_env_nightly_lock:
    requirements: "{{ ml_env_packages }}"
    extra_index_urls: "{{ ml_env_extra_index_urls }}"
    pre: true
    lock_dir: "{{ ml_env_lock_dir }}"
    python: "{{ ansible_playbook_python }}"
    python_version: "3.11"
    platforms: [manylinux_2_34_x86_64]
    refresh: "{{ ml_env_refresh | bool }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
lock_dir: {description: The lock (pip-report.json, pip-report-nodeps.json, lock.json)., returned: always, type: str}
versions: {description: Name -> version of the lock., returned: always, type: dict}
moved: {description: "Name -> [old, new] of what a refresh changed (old null: new in the lock).", returned: always, type: dict}
resolved: {description: Whether pip resolved in this run., returned: always, type: bool}
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time

REPORTS = (("deps", "pip-report.json"), ("nodeps", "pip-report-nodeps.json"))


def spec_text(p):
    """The spec as text (its hash names the lock): options first, then both requirement lists."""
    lines = ["--index-url " + p["index_url"]]
    lines += ["--extra-index-url " + u for u in p["extra_index_urls"]]
    lines += ["--find-links " + u for u in p["find_links"]]
    lines += ["--pre"] if p["pre"] else []
    lines += ["--python-version " + p["python_version"]] if p["python_version"] else []
    lines += ["--platform " + x for x in p["platforms"]]
    lines += ["deps: " + r for r in p["requirements"]]
    lines += ["nodeps: " + r for r in p["requirements_nodeps"]]
    return "\n".join(lines) + "\n"


def lock_path(p):
    return os.path.join(p["lock_dir"], "nightly", hashlib.sha256(spec_text(p).encode()).hexdigest()[:12])


def wanted_reports(p):
    return [name for kind, name in REPORTS
            if p["requirements" if kind == "deps" else "requirements_nodeps"]]


def pip_command(p, requirements, report, target, nodeps=False):
    """`pip install --dry-run` that resolves `requirements` and writes pip's report."""
    cmd = [p["python"], "-m", "pip", "install", "--isolated", "--no-input", "--disable-pip-version-check",
           "--dry-run", "--ignore-installed", "--quiet", "--report", report, "--index-url", p["index_url"]]
    for url in p["extra_index_urls"]:
        cmd += ["--extra-index-url", url]
    for link in p["find_links"]:
        cmd += ["--find-links", link]
    if p["pre"]:
        cmd.append("--pre")
    if nodeps:
        cmd.append("--no-deps")
    if p["python_version"] or p["platforms"]:
        cmd += ["--only-binary=:all:", "--target", target]
        cmd += ["--python-version", p["python_version"]] if p["python_version"] else []
        for plat in p["platforms"]:
            cmd += ["--platform", plat]
    return cmd + list(requirements)


def versions_of(directory):
    """Name -> version of a lock directory (later reports win), {} when there is none."""
    out = {}
    for _, name in REPORTS:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as fh:
                for item in json.load(fh).get("install", []):
                    meta = item.get("metadata") or {}
                    out[str(meta.get("name", "")).lower().replace("_", "-")] = meta.get("version")
    return dict(sorted(out.items()))


def moved(old, new):
    return {k: [old.get(k), new.get(k)] for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)}


def resolve(p, run=subprocess.run):
    """Resolve the spec into a new lock directory (replacing the old one only when pip
    succeeded). Returns (lock_dir, versions, moved); raises RuntimeError with pip's output."""
    final = lock_path(p)
    old = versions_of(final)
    os.makedirs(os.path.dirname(final), exist_ok=True)
    work = tempfile.mkdtemp(prefix=".resolving-", dir=os.path.dirname(final))
    try:
        for kind, name in REPORTS:
            reqs = p["requirements" if kind == "deps" else "requirements_nodeps"]
            if not reqs:
                continue
            cmd = pip_command(p, reqs, os.path.join(work, name), os.path.join(work, "target"), kind == "nodeps")
            proc = run(cmd, capture_output=True, text=True, timeout=p["timeout"], check=False)
            if proc.returncode != 0:
                raise RuntimeError("pip could not resolve the %s requirements (%s):\n%s" % (
                    kind, " ".join(reqs), (proc.stderr or proc.stdout)[-4000:]))
        shutil.rmtree(os.path.join(work, "target"), ignore_errors=True)
        new = versions_of(work)
        with open(os.path.join(work, "lock.json"), "w", encoding="utf-8") as fh:
            json.dump({"spec": spec_text(p), "resolved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "versions": new}, fh, indent=1, sort_keys=True)
            fh.write("\n")
        if os.path.isdir(final):
            shutil.rmtree(final)
        os.rename(work, final)
        return final, new, moved(old, new)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def ensure(p, run=subprocess.run):
    """The lock of the spec: kept when complete and not refreshed, else resolved.
    Returns a result dict (changed, resolved, lock_dir, versions, moved)."""
    final = lock_path(p)
    complete = os.path.isdir(final) and all(os.path.isfile(os.path.join(final, n)) for n in wanted_reports(p))
    if complete and not p["refresh"]:
        return {"changed": False, "resolved": False, "lock_dir": final, "versions": versions_of(final), "moved": {}}
    directory, versions, changes = resolve(p, run)
    return {"changed": bool(changes) or not complete, "resolved": True, "lock_dir": directory,
            "versions": versions, "moved": changes}


ARGUMENT_SPEC = dict(
    requirements=dict(type="list", elements="str", default=[]),
    requirements_nodeps=dict(type="list", elements="str", default=[]),
    index_url=dict(type="str", default="https://pypi.org/simple"),
    extra_index_urls=dict(type="list", elements="str", default=[]),
    find_links=dict(type="list", elements="str", default=[]),
    pre=dict(type="bool", default=False),
    lock_dir=dict(type="path", required=True),
    refresh=dict(type="bool", default=False),
    python=dict(type="path", required=True),
    python_version=dict(type="str", default=""),
    platforms=dict(type="list", elements="str", default=[]),
    timeout=dict(type="int", default=1800),
)


def main():
    from ansible.module_utils.basic import AnsibleModule  # noqa: PLC0415  (pure functions above)

    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    if not (p["requirements"] or p["requirements_nodeps"]):
        module.fail_json(msg="ml_env_nightly_lock: the spec has no requirements")
    final = lock_path(p)
    if module.check_mode:
        module.exit_json(changed=p["refresh"] or not os.path.isdir(final), resolved=False, lock_dir=final,
                         versions=versions_of(final), moved={})
    try:
        module.exit_json(**ensure(p))
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        module.fail_json(msg="ml_env nightly track: %s" % exc, lock_dir=final)


if __name__ == "__main__":
    main()

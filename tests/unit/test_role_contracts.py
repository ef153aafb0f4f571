"""Roles talk through documented outputs: no role, playbook or top-level template reads another
role's `_`-prefixed (private) variable, and every play and role entry point that deploy.yml
calls exists with an argument spec."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks").is_dir())
# Ansible files: YAML (tasks, vars, playbooks, Molecule playbooks) and Jinja templates
SCANNED = [p for pattern in ("roles/**/*.yml", "roles/**/*.j2", "playbooks/**/*.yml", "templates/*.j2",
                             "molecule/**/*.yml", "*.yml")
           for p in ROOT.glob(pattern) if ".venv" not in p.parts]


def private_reads(path: Path):
    """(role, variable) for each private variable of another role that `path` names."""
    text = path.read_text(encoding="utf-8")
    owner = path.relative_to(ROOT).parts[1] if path.relative_to(ROOT).parts[0] == "roles" else None
    found = set()
    for role in ROLES:
        if role == owner:
            continue
        for match in re.finditer(r"(?<![A-Za-z0-9_])_%s_[a-z0-9_]+" % re.escape(role), text):
            found.add((role, match.group(0)))
    return found


def test_no_file_reads_another_roles_private_variables():
    offenders = {str(p.relative_to(ROOT)): sorted(private_reads(p)) for p in SCANNED}
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, offenders


def test_the_check_finds_a_private_read(tmp_path):
    """The scan itself can fail: a playbook naming sglang_server's private fact is found."""
    play = ROOT / "playbooks" / "_contract_probe.yml"
    play.write_text("- hosts: all\n  tasks:\n    - ansible.builtin.debug: {var: _sglang_server_written}\n")
    try:
        assert private_reads(play) == {("sglang_server", "_sglang_server_written")}
    finally:
        play.unlink()


def test_playbooks_define_no_private_looking_variables():
    """A playbook's own facts are public names (an `_` prefix reads as some role's internals)."""
    for path in [ROOT / "deploy.yml", *sorted((ROOT / "playbooks").glob("*.yml"))]:
        text = path.read_text(encoding="utf-8")
        assert not re.findall(r"^\s+_[a-z][a-z0-9_]*:", text, re.M), path


def _include_role_calls(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role"):
                yield value["name"], value.get("tasks_from", "main")
            else:
                yield from _include_role_calls(value)
    elif isinstance(node, list):
        for item in node:
            yield from _include_role_calls(item)


def test_deploy_calls_documented_role_entry_points_only():
    """Every role entry point deploy.yml and the playbooks include has an argument spec (its
    documented contract) and a task file; no task file path is passed around."""
    calls = set()
    for path in [ROOT / "deploy.yml", *sorted((ROOT / "playbooks").glob("*.yml"))]:
        text = path.read_text(encoding="utf-8")
        assert "include_tasks: \"{{" not in text, path
        calls |= set(_include_role_calls(yaml.safe_load(text)))
    calls = set(calls)
    assert {("sglang_server", "validate"), ("sglang_rollout", "plan"), ("sglang_rollout", "main")} <= calls
    missing = []
    for role, entry in sorted(calls):
        if "{{" in entry:  # a templated entry point: each name it can take
            for name in re.findall(r"'([a-z_]+)'", entry):
                calls.add((role, name))
    for role, entry in sorted(calls):
        if "{{" in entry:
            continue
        specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
        if entry not in specs["argument_specs"] or not (ROOT / "roles" / role / "tasks" / f"{entry}.yml").is_file():
            missing.append(f"{role}:{entry}")
    assert not missing, missing


# --- roles take arguments: no file sets another role's variables -------------------------------

SET_FACT = ("ansible.builtin.set_fact", "set_fact")
INCLUDES = ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role")
# set_fact's own options, not variables
SET_FACT_OPTIONS = {"cacheable"}
# Files that may carry `noqa: var-naming[no-role-prefix]`, with why: the sweep file's own keys
# (sweeps/*.yml set sweep_base, sweep_axes, ...: names a user writes, without the role prefix)
VAR_NAMING_NOQA = {
    "roles/sglang_sweep/defaults/main.yml": "a sweep file's own keys (sweeps/*.yml), without the role prefix",
}
TASK_FILES = [p for pattern in ("roles/*/tasks/*.yml", "roles/*/handlers/*.yml", "playbooks/*.yml", "deploy.yml",
                                "molecule/*/*.yml")
              for p in sorted(ROOT.glob(pattern))]


def owner_of(variable: str):
    """The role whose prefix a variable carries (the longest role name that prefixes it, with an
    optional leading `_`), else None."""
    name = variable.lstrip("_")
    owners = [role for role in ROLES if name.startswith(role + "_")]
    return max(owners, key=len) if owners else None


def _tasks(node):
    """Every mapping of a YAML document (tasks, blocks, their rescue/always, handlers)."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _tasks(value)
    elif isinstance(node, list):
        for item in node:
            yield from _tasks(item)


def foreign_set_facts(path: Path):
    """(variable, its owner) for each set_fact in `path` of a variable another role owns (a
    playbook or Molecule file owns no role's variables: it passes them as role parameters)."""
    rel = path.relative_to(ROOT).parts
    owner = rel[1] if rel[0] == "roles" else None
    found = set()
    for task in _tasks(yaml.safe_load(path.read_text(encoding="utf-8"))):
        for key in SET_FACT:
            if isinstance(task.get(key), dict):
                for variable in set(task[key]) - SET_FACT_OPTIONS:
                    role = owner_of(variable)
                    if role is not None and role != owner:
                        found.add((variable, role))
    return found


def public_includes(path: Path):
    """The roles that `path` includes or imports with `public: true` (their defaults and vars
    leak into the caller's scope: a contract by accident)."""
    found = []
    for task in _tasks(yaml.safe_load(path.read_text(encoding="utf-8"))):
        for key in INCLUDES:
            if isinstance(task.get(key), dict) and task[key].get("public") in (True, "yes", "true", "True"):
                found.append(task[key].get("name"))
    return found


def test_no_file_sets_another_roles_variables():
    """A role sets only its own prefix; what another role acts on goes through the include's
    `vars:` (role parameters, which outrank set_fact) and what it returns is its own output."""
    offenders = {str(p.relative_to(ROOT)): sorted(foreign_set_facts(p)) for p in TASK_FILES}
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, offenders


def test_no_include_is_public():
    offenders = {str(p.relative_to(ROOT)): public_includes(p) for p in TASK_FILES}
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, offenders


def test_var_naming_is_waived_only_where_documented():
    """`noqa: var-naming[no-role-prefix]` (a variable without its role's prefix) only in the
    files of VAR_NAMING_NOQA."""
    found = sorted(str(p.relative_to(ROOT)) for pattern in ("roles/**/*.yml", "playbooks/*.yml", "*.yml")
                   for p in ROOT.glob(pattern)
                   if ".venv" not in p.parts and "var-naming[no-role-prefix]" in p.read_text(encoding="utf-8"))
    assert set(found) <= set(VAR_NAMING_NOQA), sorted(set(found) - set(VAR_NAMING_NOQA))


def test_the_checks_find_a_foreign_set_fact_and_a_public_include(tmp_path):
    """The scans themselves can fail: a role task setting another role's variable (with and
    without the private `_`), a playbook setting a role's variable, and `public: yes`."""
    role_task = ROOT / "roles" / "sglang_sweep" / "tasks" / "_contract_probe.yml"
    role_task.write_text(
        "- ansible.builtin.set_fact:\n    sglang_server_flags: {}\n    _sglang_flags_x: 1\n"
        "    sglang_sweep_own: 1\n    cacheable: false\n"
        "- block:\n    - ansible.builtin.include_role: {name: sglang_flags, tasks_from: judge, public: yes}\n")
    play = ROOT / "playbooks" / "_contract_probe.yml"
    play.write_text("- hosts: all\n  tasks:\n    - set_fact: {sglang_verify_port: 1, rollout_x: 2}\n")
    try:
        assert foreign_set_facts(role_task) == {("sglang_server_flags", "sglang_server"),
                                                ("_sglang_flags_x", "sglang_flags")}
        assert public_includes(role_task) == ["sglang_flags"]
        assert foreign_set_facts(play) == {("sglang_verify_port", "sglang_verify")}
    finally:
        role_task.unlink()
        play.unlink()
    assert owner_of("sglang_server_flags") == "sglang_server"
    assert owner_of("sglang_flags_normalized") == "sglang_flags"
    assert owner_of("sweep_axes") is None

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
    assert ("sglang_server", "validate") in calls and ("sglang_server", "apply") in calls
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

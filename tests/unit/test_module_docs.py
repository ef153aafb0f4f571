"""The modules' documentation is valid Ansible module documentation and says what they take.

For every file of plugins/modules: DOCUMENTATION, EXAMPLES and RETURN parse as YAML (Ansible and
ansible-lint read them so); DOCUMENTATION names the module and documents exactly the options of
its ARGUMENT_SPEC (the spec main() gives AnsibleModule) with the same type, required, default,
choices and elements, suboptions included; EXAMPLES call it by its full name; every return value
has a description, a type and when it is returned. One ``ansible-doc --json`` over every module
(the way a reader and ansible-lint load them, through ansible.cfg's collections_path) succeeds.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py"))
COLLECTION = "sglang.deploy"
# what Ansible compares between an option's documentation and its spec, and the value of each
# when it is not given (type: Ansible's own default)
COMPARED = {"type": "str", "required": False, "default": None, "choices": None, "elements": None}


def load(name):
    return importlib.import_module("ansible_collections.sglang.deploy.plugins.modules." + name)


def parsed(name):
    module = load(name)
    return {part: yaml.safe_load(getattr(module, part)) for part in ("DOCUMENTATION", "EXAMPLES", "RETURN")}


def option_mismatches(documented, spec, where=""):
    """Every difference between documented options and an argument spec, as readable lines."""
    out = ["%s%s: in the argument spec, not documented" % (where, k) for k in sorted(set(spec) - set(documented))]
    out += ["%s%s: documented, not in the argument spec" % (where, k) for k in sorted(set(documented) - set(spec))]
    for key in sorted(set(spec) & set(documented)):
        doc, arg = documented[key] or {}, spec[key]
        for field, unset in COMPARED.items():
            if doc.get(field, unset) != arg.get(field, unset):
                out.append("%s%s: %s is %r in the documentation, %r in the argument spec"
                           % (where, key, field, doc.get(field, unset), arg.get(field, unset)))
        if not doc.get("description"):
            out.append("%s%s: no description" % (where, key))
        if doc.get("suboptions") or arg.get("options"):
            out += option_mismatches(doc.get("suboptions") or {}, arg.get("options") or {}, "%s%s." % (where, key))
    return out


def is_text(value):
    return isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(v, str) for v in value))


@pytest.mark.parametrize("name", NAMES)
def test_documentation_matches_the_argument_spec(name):
    docs = parsed(name)
    doc = docs["DOCUMENTATION"]
    assert doc["module"] == name
    for field in ("short_description", "description", "author"):
        assert is_text(doc.get(field)), field
    for option, entry in (doc.get("options") or {}).items():
        assert is_text(entry.get("description")), option
    assert option_mismatches(doc.get("options") or {}, load(name).ARGUMENT_SPEC) == []


@pytest.mark.parametrize("name", NAMES)
def test_examples_call_the_module_by_its_full_name(name):
    examples = parsed(name)["EXAMPLES"]
    assert isinstance(examples, list) and examples
    assert all(task.get("name") for task in examples)
    assert any("%s.%s" % (COLLECTION, name) in task for task in examples)
    assert not any(name in task for task in examples), "a short module name"


@pytest.mark.parametrize("name", NAMES)
def test_return_values_are_described(name):
    returned = parsed(name)["RETURN"]
    assert isinstance(returned, dict) and returned
    for key, entry in returned.items():
        assert is_text(entry.get("description")) and entry.get("type") and entry.get("returned"), key


def test_a_missing_or_mistyped_option_is_a_mismatch():
    spec = load("sglang_server_files").ARGUMENT_SPEC
    documented = parsed("sglang_server_files")["DOCUMENTATION"]["options"]
    assert option_mismatches(documented, spec) == []
    missing = copy.deepcopy(documented)
    del missing["files"]["suboptions"]["owner"]
    assert option_mismatches(missing, spec) == ["files.owner: in the argument spec, not documented"]
    mistyped = copy.deepcopy(documented)
    mistyped["files"]["suboptions"]["mode"]["type"] = "int"
    assert option_mismatches(mistyped, spec) == ["files.mode: type is 'int' in the documentation, 'str' in the argument spec"]
    untyped = copy.deepcopy(documented)
    del untyped["files"]["type"]
    assert option_mismatches(untyped, spec) == ["files: type is 'str' in the documentation, 'list' in the argument spec"]
    defaulted = {"tie_k": dict(parsed("sglang_sweep_report")["DOCUMENTATION"]["options"]["tie_k"], default=2.0)}
    assert option_mismatches(defaulted, {"tie_k": load("sglang_sweep_report").ARGUMENT_SPEC["tie_k"]}) == [
        "tie_k: default is 2.0 in the documentation, 3.0 in the argument spec"]


def test_ansible_doc_reads_every_module():
    """ansible-doc, run by this interpreter from the repository root (ansible.cfg's
    collections_path finds the collection), returns the documentation of every module."""
    command = [sys.executable, str(Path(sys.executable).parent / "ansible-doc"), "--json", "-t", "module"]
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(command + ["%s.%s" % (COLLECTION, n) for n in NAMES], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0 and "[ERROR]" not in proc.stderr, proc.stderr[-4000:]
    shown = json.loads(proc.stdout)
    assert sorted(shown) == ["%s.%s" % (COLLECTION, n) for n in NAMES]
    for name in NAMES:
        entry = shown["%s.%s" % (COLLECTION, name)]
        assert entry["doc"]["module"] == name and entry["examples"] and entry["return"], name
        assert sorted(entry["doc"].get("options") or {}) == sorted(load(name).ARGUMENT_SPEC), name

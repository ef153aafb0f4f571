"""The host paths several roles read have one source each (issue: copies drifted, and a prune
that read another copy of the release index than the one sglang_release writes protected
nothing): in Ansible roles/sglang_defaults/defaults/main.yml, in Python RELEASE_DIR and FACT of
plugins/module_utils/release/state.py. Comments and documentation may name the values;
no other setting or code may."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LITERALS = re.compile(r"/var/lib/sglang-deploy/(?:releases|starts)|/etc/ansible/facts\.d/sglang_release\.fact"
                      r"|/root/ml-env(?![s\w-])")
OWNER_YAML = ROOT / "roles" / "sglang_defaults" / "defaults" / "main.yml"
OWNER_PY = ROOT / "plugins" / "module_utils" / "release" / "state.py"
# a module's documentation must spell out its defaults (ansible-doc reads it without importing)
DOC_NAMES = {"DOCUMENTATION", "EXAMPLES", "RETURN"}


# prose: a task's name, an argument spec's or galaxy_info's description
PROSE = re.compile(r"^\s*(?:- )?(?:name|description|short_description):")


def yaml_copies(path: Path) -> list:
    """(line number, text) of every line of a YAML or Jinja file naming a literal, but comments
    and prose."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        code = "" if line.lstrip().startswith("#") or PROSE.match(line) else line.split(" #", 1)[0]
        if LITERALS.search(code):
            found.append((number, line.strip()))
    return found


def python_copies(path: Path) -> list:
    """(line number, value) of every string constant of a Python file naming a literal, but
    docstrings and the module documentation strings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skipped.add(id(body[0].value))
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in DOC_NAMES for t in node.targets):
            skipped.add(id(node.value))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped
            and LITERALS.search(node.value)]


def scanned():
    patterns = ["roles/*/defaults/*.yml", "roles/*/vars/*.yml", "roles/*/tasks/*.yml", "roles/*/handlers/*.yml",
                "roles/*/meta/*.yml", "roles/*/templates/*", "templates/*.j2", "playbooks/*.yml", "deploy.yml",
                "inventories/**/*.yml", "plugins/**/*.py"]
    return sorted({p for pattern in patterns for p in ROOT.glob(pattern) if p.is_file()} - {OWNER_YAML})


def copies_in(path: Path) -> list:
    return python_copies(path) if path.suffix == ".py" else yaml_copies(path)


def test_each_shared_host_path_has_one_source():
    found = {str(p.relative_to(ROOT)): copies_in(p) for p in scanned()}
    owner = found.pop(str(OWNER_PY.relative_to(ROOT)))
    assert sorted(value for _, value in owner) == ["/etc/ansible/facts.d/sglang_release.fact",
                                                   "/var/lib/sglang-deploy/releases"]
    assert {k: v for k, v in found.items() if v} == {}


def test_the_owner_sets_each_once():
    text = OWNER_YAML.read_text(encoding="utf-8")
    for name in ("sglang_defaults_release_dir", "sglang_defaults_release_fact", "sglang_defaults_ml_env_link",
                 "sglang_defaults_python", "sglang_defaults_start_log_dir"):
        assert len(re.findall(r"^%s:" % name, text, re.M)) == 1, name


def test_the_scan_finds_a_copy(tmp_path):
    """The scan itself can fail: a default, a task argument and a Python fallback are found; a
    comment and a docstring are not."""
    yml = tmp_path / "main.yml"
    yml.write_text("# sglang_release keeps /var/lib/sglang-deploy/releases\nx_python: /root/ml-env/bin/python\n"
                   "y: \"{{ a | default('/root/ml-env') }}\"\nz: /root/ml-envs\n- name: Point /root/ml-env at it\n"
                   "  start_log: /var/lib/sglang-deploy/starts/sglang.jsonl\n")
    assert [n for n, _ in yaml_copies(yml)] == [2, 3, 6]
    py = tmp_path / "m.py"
    py.write_text('"""Reads /etc/ansible/facts.d/sglang_release.fact."""\nDOCUMENTATION = "/var/lib/sglang-deploy/starts"\n'
                  'def f(p):\n    """/root/ml-env"""\n    return p or "/root/ml-env/bin/python"\n')
    assert python_copies(py) == [(5, "/root/ml-env/bin/python")]


def test_every_role_that_reads_a_shared_path_depends_on_its_owner():
    """A role that names a sglang_defaults_ variable lists sglang_defaults in its dependencies
    (a dependency's defaults are visible to the role, so it works alone too)."""
    for role in sorted(p for p in (ROOT / "roles").iterdir() if p.is_dir() and p.name != "sglang_defaults"):
        texts = [p.read_text(encoding="utf-8") for sub in ("defaults", "vars", "tasks", "templates")
                 for p in (role / sub).glob("*") if p.is_file()]
        # sglang_sweep names sglang_defaults_python only in the vars of its include of
        # sglang_flags, which are templated inside sglang_flags (whose dependency it is)
        if any("sglang_defaults_" in t for t in texts) and role.name != "sglang_sweep":
            meta = (role / "meta" / "main.yml").read_text(encoding="utf-8")
            assert re.search(r"^\s*- role: sglang_defaults\s*$", meta, re.M), role.name

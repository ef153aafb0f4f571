"""Every filter that plugins/filter exports is used by a YAML or Jinja file of the repository.

Ansible publishes each name a FilterModule returns as ``sglang.deploy.<name>``; a name that no
playbook, role, template, inventory or Molecule scenario applies (``| sglang.deploy.<name>``) is
an export for nothing. Tests call the Python functions directly and need no export, so tests/
does not count as a use.
"""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILTERS = ROOT / "plugins" / "filter"
TEMPLATE_SUFFIXES = (".yml", ".yaml", ".j2")


def exported_filters():
    """{filter name: the file of plugins/filter that exports it}."""
    owners = {}
    for path in sorted(FILTERS.glob("*.py")):
        module = importlib.import_module("ansible_collections.sglang.deploy.plugins.filter." + path.stem)
        for name in module.FilterModule().filters():
            owners[name] = path.name
    return owners


def repository_templates():
    """{path: text} of the YAML and Jinja files of the repository (tracked, or new and not
    ignored), tests/ left out."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, check=True).stdout
    paths = [p for p in out.decode().split("\0") if p.endswith(TEMPLATE_SUFFIXES) and not p.startswith("tests/")]
    return {p: (ROOT / p).read_text(encoding="utf-8") for p in paths if (ROOT / p).is_file()}


def unused(names, texts):
    """The names no text applies as a filter of the collection (``| sglang.deploy.<name>``)."""
    return sorted(name for name in names
                  if not any(re.search(r"\|\s*sglang\.deploy\.%s\b" % re.escape(name), text)
                             for text in texts.values()))


def test_every_exported_filter_is_used_outside_the_tests():
    owners = exported_filters()
    assert "sglang_flags_check" in owners and "sglang_monitoring_hosts" in owners
    missing = unused(owners, repository_templates())
    assert not missing, ["%s (%s)" % (name, owners[name]) for name in missing]


def test_an_export_used_only_by_the_tests_is_reported():
    """sglang_version_compare is a function the tests call; exported, it would be refused."""
    texts = repository_templates()
    assert unused(["sglang_flags_check", "sglang_version_compare"], texts) == ["sglang_version_compare"]
    assert any("sglang_version_compare" in p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    # a mention without the pipe (a comment, a module call) is not a use
    assert unused(["x_y"], {"a.yml": "# sglang.deploy.x_y\n- sglang.deploy.x_y:\n"}) == ["x_y"]
    assert unused(["x_y"], {"a.j2": "{{ v\n   | sglang.deploy.x_y }}"}) == []

"""Every option a role's argument spec declares is read somewhere: by the role's own tasks,
templates, vars, handlers or files, by another option's default, or by a playbook or another
role that passes it on. An option that nothing reads is a setting that silently does nothing
(a module parameter dropped from a task leaves its option accepted, checked and ignored)."""

from __future__ import annotations

import re
from pathlib import Path

from ansible_collections.sglang.deploy.plugins.module_utils.inputs.catalogue import load_specs

ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file())
# where an option can be read: the roles' files (not their specs, READMEs or kinds files),
# the playbooks and top-level templates
READERS = [p for pattern in ("roles/*/tasks/**/*.yml", "roles/*/handlers/*.yml", "roles/*/vars/*.yml",
                             "roles/*/defaults/*.yml", "roles/*/templates/**/*", "roles/*/files/**/*",
                             "playbooks/**/*.yml", "templates/*", "deploy.yml")
           for p in ROOT.glob(pattern) if p.is_file()]


def options(role):
    return sorted({name for entry in load_specs(role).values() for name in (entry.get("options") or {})})


def _texts():
    out = {}
    for path in READERS:
        try:
            out[path] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
    return out


TEXTS = _texts()


def unread(names, texts=None):
    """The options of ``names`` that no reader reads: named as a YAML key (a default, or a value
    set for an include) is not a read."""
    texts = TEXTS if texts is None else texts
    found = []
    for name in names:
        word = re.compile(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_]|\s*:(?:\s|$))" % re.escape(name))
        if not any(word.search(text) for text in texts.values()):
            found.append(name)
    return found


def test_every_option_of_every_role_is_read():
    offenders = {role: unread(options(role)) for role in ROLES}
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, "options nothing reads (a dropped module parameter?): %s" % offenders


def test_the_check_finds_an_option_nothing_reads():
    """The scan can fail: an option named only where it is defined is found; one a task reads is not."""
    texts = {Path("defaults.yml"): "demo_update_baseline: true\ndemo_other: 1\n",
             Path("tasks.yml"): "- demo.mod:\n    other: \"{{ demo_other }}\"\n",
             Path("include.yml"): "- include_role:\n  vars:\n    demo_update_baseline: false\n"}
    assert unread(["demo_update_baseline", "demo_other"], texts) == ["demo_update_baseline"]

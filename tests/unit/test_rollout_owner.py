"""One owner for the rollout (roles/sglang_rollout) and one answer to "which gateways front this
host" (roles/sglang_gateway, sglang_gateway_urls):

- no playbook, role or Molecule file outside roles/sglang_rollout includes the gateway role's
  `drain` or `rejoin` (the sequence drain -> apply -> gate -> rejoin is written once);
- no file outside roles/sglang_gateway names the gateway group literally (`groups['gateway']`,
  `groups.gateway`, a play on `hosts: gateway`): a renamed group (sglang_gateway_group) is
  followed everywhere;
- the scans themselves can fail (a probe file of each kind is found)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from test_role_contracts import INCLUDES, _tasks

ROOT = Path(__file__).resolve().parents[2]
YAML_FILES = [p for pattern in ("*.yml", "playbooks/*.yml", "roles/**/*.yml", "molecule/**/*.yml", "templates/*",
                                "inventories/**/*.yml")
              for p in sorted(ROOT.glob(pattern)) if ".venv" not in p.parts]
LITERAL_GROUP = re.compile(r"""groups\s*(?:\[\s*['"]gateway['"]\s*\]|\.gateway\b|\.get\(\s*['"]gateway['"])"""
                           r"""|^\s*-?\s*hosts:\s*['"]?(?:[^'"\n#]*[:,&!])?gateway(?:[:,&!][^'"\n#]*)?['"]?\s*(?:#.*)?$""",
                           re.M)


def drains_and_rejoins(path: Path):
    """The gateway role's drain/rejoin entry points that `path` includes."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError:
        return []
    found = []
    for node in _tasks(doc):
        for key in INCLUDES:
            call = node.get(key)
            if isinstance(call, dict) and call.get("name") in ("sglang_gateway", "sglang.deploy.sglang_gateway") \
                    and call.get("tasks_from") in ("drain", "rejoin", "drain.yml", "rejoin.yml"):
                found.append(call["tasks_from"])
    return found


def _outside(path: Path, role: str) -> bool:
    return path.relative_to(ROOT).parts[:2] != ("roles", role)


def test_only_the_rollout_role_drains_or_rejoins():
    offenders = {str(p.relative_to(ROOT)): drains_and_rejoins(p) for p in YAML_FILES if _outside(p, "sglang_rollout")}
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, ("drain/rejoin outside roles/sglang_rollout (call the rollout role instead): %s" % offenders)
    inside = [d for p in (ROOT / "roles" / "sglang_rollout").rglob("*.yml") for d in drains_and_rejoins(p)]
    assert sorted(set(inside)) == ["drain", "rejoin"], inside


def test_no_file_outside_the_gateway_role_names_the_gateway_group():
    offenders = sorted(str(p.relative_to(ROOT)) for p in YAML_FILES
                       if _outside(p, "sglang_gateway") and LITERAL_GROUP.search(p.read_text(encoding="utf-8")))
    assert not offenders, "the gateway group named literally (use sglang_gateway_urls / sglang_gateway_hosts): %s" % offenders


def test_the_scans_find_a_drain_and_a_literal_group(tmp_path):
    probe = ROOT / "playbooks" / "_rollout_owner_probe.yml"
    probe.write_text("- hosts: gateway\n  tasks:\n    - ansible.builtin.include_role: {name: sglang_gateway, "
                     "tasks_from: drain}\n      when: groups['gateway'] | length > 0\n"
                     "    - ansible.builtin.debug: {msg: \"{{ groups.get('gateway') }}\"}\n")
    try:
        assert drains_and_rejoins(probe) == ["drain"]
        text = probe.read_text(encoding="utf-8")
        assert len(LITERAL_GROUP.findall(text)) == 3
    finally:
        probe.unlink()
    assert not LITERAL_GROUP.search("hosts: sglang_gateway_hosts\nloop: \"{{ groups[sglang_gateway_group] }}\"\n")
    assert LITERAL_GROUP.search('  hosts: "gateway:localhost"\n') and LITERAL_GROUP.search("- hosts: all:!gateway\n")

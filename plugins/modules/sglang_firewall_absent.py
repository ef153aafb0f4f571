#!/usr/bin/python
"""Undo the SGLang port's firewall in one call: stop and remove its unit, its ruleset and its table."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_firewall_absent
short_description: Remove the SGLang port's nftables firewall (unit, ruleset file, live table)
description:
  - "What C(sglang_firewall_enabled: false) means on a host: first its watch (O(watch)), whose
    timer would load the table again, is stopped and disabled and its units and script removed;
    then, when the firewall's unit exists it is stopped (its ExecStop deletes the table) and disabled, the unit and the ruleset file are
    removed (then a daemon-reload), and a table still in the running ruleset (loaded without
    the unit) is deleted."
  - On a host that never had the firewall this is one read-only call and reports no change.
  - Check mode reports what would be removed and removes nothing.
options:
  service:
    description: The firewall's unit name, without C(.service).
    type: str
    required: true
  unit_dir:
    description: Directory of the unit file.
    type: path
    default: /etc/systemd/system
  ruleset_path:
    description: The ruleset file the unit loads.
    type: path
    required: true
  table:
    description: The C(inet) table of the ruleset.
    type: str
    required: true
  server_dropin:
    description: The drop-in of the server's unit that keeps it down without the table; removed too.
    type: path
  watch:
    description: The watch's unit name, without C(.timer)/C(.service); its timer goes first.
    type: str
  watch_script:
    description: The script the watch's service runs; removed with its units.
    type: path
author: sglang-deploy
"""

EXAMPLES = r"""
- name: Remove the firewall
  sglang.deploy.sglang_firewall_absent:
    service: sglang-firewall
    ruleset_path: /etc/nftables.d/sglang-firewall.nft
    table: sglang_firewall
    watch: sglang-firewall-watch
    watch_script: /usr/local/libexec/sglang-firewall-watch
"""

RETURN = r"""
removed:
  description: What was (or, in check mode, would be) removed.
  type: list
  elements: str
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule


def live_table(module, table):
    """True when the running ruleset has table inet <table> (no nft: no table)."""
    nft = module.get_bin_path("nft", opt_dirs=["/usr/sbin", "/sbin"])
    if not nft:
        return None, False
    rc, _, _ = module.run_command([nft, "list", "table", "inet", table])
    return nft, rc == 0


ARGUMENT_SPEC = dict(
    service=dict(type="str", required=True),
    unit_dir=dict(type="path", default="/etc/systemd/system"),
    ruleset_path=dict(type="path", required=True),
    table=dict(type="str", required=True),
    server_dropin=dict(type="path"),
    watch=dict(type="str"),
    watch_script=dict(type="path"),
)


def remove_watch(module, unit_dir, watch, script):
    """The watch first (running, it would load the table again): its timer stopped and disabled,
    its units and script removed. Returns (what was removed, whether a unit file went)."""
    removed, unit_gone = [], False
    if not watch:
        return removed, unit_gone
    timer = os.path.join(unit_dir, watch + ".timer")
    if os.path.exists(timer):
        removed.append(f"unit {watch}.timer (stopped, disabled)")
        if not module.check_mode:
            module.run_command(["systemctl", "disable", "--now", watch + ".timer"], check_rc=True)
    for path in (timer, os.path.join(unit_dir, watch + ".service"), script):
        if path and os.path.lexists(path):
            if path != timer:
                removed.append(path)
            unit_gone = unit_gone or path != script
            if not module.check_mode:
                os.unlink(path)
    return removed, unit_gone


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    unit = p["service"] + ".service"
    unit_path = os.path.join(p["unit_dir"], unit)
    removed, watch_unit_gone = remove_watch(module, p["unit_dir"], p["watch"], p["watch_script"])
    unit_exists = os.path.exists(unit_path)
    if unit_exists:
        removed.append(f"unit {unit} (stopped, disabled)")
        if not module.check_mode:
            module.run_command(["systemctl", "disable", "--now", unit], check_rc=True)
    dropin = p["server_dropin"]
    dropin_exists = bool(dropin) and os.path.lexists(dropin)
    for path in (unit_path, p["ruleset_path"], dropin):
        if path and os.path.lexists(path):
            if path != unit_path:
                removed.append(path)
            if not module.check_mode:
                os.unlink(path)
    if (unit_exists or dropin_exists or watch_unit_gone) and not module.check_mode:
        module.run_command(["systemctl", "daemon-reload"], check_rc=True)
    nft, live = live_table(module, p["table"])
    if live:
        removed.append(f"table inet {p['table']}")
        if not module.check_mode:
            module.run_command([nft, "delete", "table", "inet", p["table"]], check_rc=True)
    module.exit_json(changed=bool(removed), removed=removed)


if __name__ == "__main__":
    main()

"""The hardened unit and the API keys as sglang_server renders them (tests/integration/
test_unit_render.py renders them the way the role does):

* `systemd-analyze security --offline=true` rates the rendered production and local units
  under 4.0 ("OK"); the score is printed;
* with keys, the unit names the keys file (--config) and the environment file the redaction,
  and neither holds a key; the keys file holds them JSON-quoted, one per line;
* sglang_server_hardening: false (named in sglang_server_allow_weaker_sandbox) renders the unit
  without a sandbox.
"""

import os
import re
import shutil
import subprocess

import pytest
import yaml

from test_unit_render import ANSIBLE_PLAYBOOK, ROOT, TEMPLATES, render

KEY, ADMIN = 'sk-render-0123"456\\789', "adm-render-abcdef"
ANALYZE = shutil.which("systemd-analyze")


def score(tmp_path, unit):
    path = tmp_path / "sglang.service"
    path.write_text(unit)
    proc = subprocess.run([ANALYZE, "security", "--offline=true", "--no-pager", str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r"Overall exposure level for sglang\.service: ([0-9.]+)", proc.stdout + proc.stderr)
    assert found, proc.stdout + proc.stderr
    return float(found.group(1))


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("inventory", ["production", "local"])
def test_rendered_unit_scores_ok(tmp_path, inventory):
    unit, _ = render(tmp_path, inventory, {})
    value = score(tmp_path, unit)
    print(f"systemd-analyze security --offline=true, {inventory} unit: {value}")
    assert value < 4.0


def test_keys_go_to_the_keys_file_only(tmp_path):
    unit, env_file = render(tmp_path, "production", {"sglang_server_api_key": KEY, "sglang_server_admin_api_key": ADMIN})
    assert "    --config /etc/sglang/sglang-keys.yaml\n" in unit
    assert 'PYTHONPATH="/etc/sglang/python"' in env_file
    assert 'SGLANG_DEPLOY_REDACT_FILE="/etc/sglang/sglang-keys.yaml"' in env_file
    for text in (unit, env_file):
        assert "sk-render" not in text and ADMIN not in text
    play = [{"name": "Render the keys file", "hosts": "gpu-node-01.example.invalid", "gather_facts": False, "tasks": [
        {"name": "Render the paths", "ansible.builtin.include_role": {"name": "sglang_server", "tasks_from": "render", "public": True}},
        {"name": "Write it", "ansible.builtin.copy": {
            "content": "{{ lookup('ansible.builtin.template', '" + str(ROOT / "roles" / "sglang_server" / "templates" / "sglang.keys.yaml.j2") + "') }}",
            "dest": f"{tmp_path}/keys.yaml", "mode": "0600"}, "delegate_to": "localhost", "no_log": True}]}]
    (tmp_path / "keys-play.yml").write_text(yaml.safe_dump(play))
    env = {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1", "ANSIBLE_CACHE_PLUGIN": "memory",
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / ".ansible-tmp")}
    # extra.json: the variables of the render above, both keys included
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "inventories/production", str(tmp_path / "keys-play.yml"),
                           "-e", f"@{tmp_path / 'extra.json'}"],
                          cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sk-render" not in proc.stdout + proc.stderr and ADMIN not in proc.stdout + proc.stderr
    keys = yaml.safe_load((tmp_path / "keys.yaml").read_text())
    assert keys == {"api-key": KEY, "admin-api-key": ADMIN}  # quoting keeps every character


def test_hardening_off_renders_no_sandbox(tmp_path):
    # a weakening the inventory must name (plugins/module_utils/flags/sandbox.py)
    unit, env_file = render(tmp_path, "production", {
        "sglang_server_hardening": False,
        "sglang_server_allow_weaker_sandbox": {"sglang_server_hardening": "the test of the unsandboxed unit"}})
    for directive in ("ProtectSystem=", "CapabilityBoundingSet=", "DeviceAllow=", "CacheDirectory="):
        assert directive not in unit
    assert "XDG_CACHE_HOME" not in env_file

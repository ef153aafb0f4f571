"""Every role's defaults, with each inventory's variables over them, pass every role's kinds: what
each entry point's first task judges when the role runs (sglang.deploy.sglang_inputs in the role's
own context, its defaults loaded), through ansible-playbook on the controller with both
inventories (no host contacted: the check needs no connection). A kind too strict for a default
would stop every deploy at that role's entry point; the lint alone (which sees the inventory's
variables, not the roles' defaults) would not show it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
ROLES = sorted(p.parent.parent.name for p in ROOT.glob("roles/*/meta/input_kinds.yml"))
# what the production profile's operator sets before the first deploy (README.md, "Production use")
PRODUCTION = {"model_files_revision": "0123456789abcdef0123456789abcdef01234567",
              "sglang_server_allow_no_api_key": "a test of the defaults"}


@pytest.mark.parametrize("inventory", ["local", "production"])
def test_the_roles_defaults_and_the_inventories_pass_every_roles_kinds(tmp_path, inventory):
    # one role whose defaults are every role's (the lowest precedence, as in each role) and whose
    # task is the check of every role
    probe = tmp_path / "roles" / "kinds_probe"
    (probe / "defaults").mkdir(parents=True)
    (probe / "tasks").mkdir()
    defaults = {}
    for role in ROLES + ["sglang_defaults"]:
        path = ROOT / "roles" / role / "defaults" / "main.yml"
        defaults.update(yaml.safe_load(path.read_text()) or {} if path.is_file() else {})
    (probe / "defaults" / "main.yml").write_text(yaml.safe_dump(defaults))
    (probe / "tasks" / "main.yml").write_text(yaml.safe_dump([
        {"name": "Judge every role's inputs, the roles' defaults loaded", "register": "judged",
         "sglang.deploy.sglang_inputs": {"roles": ROLES, "report": True}}]))
    play = [{"name": "Defaults", "hosts": "sglang_hosts", "gather_facts": False,
             "tasks": [{"name": "The flag model's output, as the lint play leaves it (sglang_flags_normalized)",
                        "ansible.builtin.set_fact": {"sglang_flags_normalized": "{{ sglang_server_args | default({}) | "
                                                     "sglang.deploy.sglang_normalize_args }}"}},
                       {"name": "Probe", "ansible.builtin.include_role": {"name": "kinds_probe"}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "extra.json").write_text(json.dumps(dict(PRODUCTION, ansible_connection="local")))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / ".ansible-tmp"), ANSIBLE_ROLES_PATH=f"{tmp_path / 'roles'}:{ROOT / 'roles'}")
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", f"inventories/{inventory}", str(tmp_path / "play.yml"),
                           "-e", f"@{tmp_path / 'extra.json'}"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    result = json.loads(proc.stdout[proc.stdout.index("{"):])
    judged = [h for play in result["plays"] for task in play["tasks"] for h in task["hosts"].values() if "checked" in h]
    assert judged and all(sorted(h["checked"]) == ROLES for h in judged)
    assert [r for h in judged for r in h["refusals"]] == []

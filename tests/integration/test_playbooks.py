"""The playbooks users run from the repo root parse and select the documented hosts."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
PLAYBOOKS = ["deploy.yml", "playbooks/verify.yml", "playbooks/lint.yml", "playbooks/rollback.yml",
             "playbooks/wheelhouse.yml", "playbooks/local_hosts.yml", "playbooks/admit.yml"]


def run(*args):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)  # the repo's ansible.cfg, as a user at the root gets it
    return subprocess.run([ANSIBLE_PLAYBOOK, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_syntax_check_with_no_extra_arguments(playbook):
    proc = run(playbook, "-l", "blackwell", "--syntax-check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_list_hosts_of_the_blackwell_group_from_the_default_inventory():
    proc = run("deploy.yml", "-l", "blackwell", "--list-hosts")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gpu-node-01.example.invalid" in proc.stdout
    assert "gpu-node-02.example.invalid" in proc.stdout
    assert "sglang-local" not in proc.stdout  # the local inventory is not the default


def test_local_inventory_lists_the_container_hosts():
    proc = run("-i", "inventories/local", "deploy.yml", "--list-hosts")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sglang-local-1" in proc.stdout and "gpu-node-01" not in proc.stdout

"""playbooks/lint.yml against the production inventory and against a copy with a bad host.

The inventory's hosts are *.invalid names: any connection attempt would make them unreachable,
so these runs also show that the lint never touches a host.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PLAYBOOK = os.path.join(ROOT, "playbooks", "lint.yml")
PRODUCTION = os.path.join(ROOT, "inventories", "production")
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run_lint(*extra):
    if not os.path.exists(ANSIBLE_PLAYBOOK):
        pytest.fail(f"{ANSIBLE_PLAYBOOK} missing: run the tests with the controller venv (.venv)")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run([ANSIBLE_PLAYBOOK, PLAYBOOK, *extra], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    print(out)
    return proc.returncode, out


def flat(text):
    """The default callback wraps long YAML strings: compare on whitespace-folded text."""
    return " ".join(text.replace("''", "'").split())


def production_copy(tmp_path):
    """A copy of the production inventory under tmp_path, and its Blackwell profile (sglang.yml)."""
    copy = tmp_path / "production"
    shutil.copytree(PRODUCTION, copy)
    with open(copy / "group_vars" / "blackwell" / "sglang.yml", encoding="utf-8") as fh:
        return copy, yaml.safe_load(fh)


@pytest.fixture
def bad_inventory(tmp_path):
    copy, profile = production_copy(tmp_path)
    args = dict(profile["sglang_server_args"])
    # what the hand tuning tried first: SM100-only MoE kernels and a Hopper attention backend
    args["moe-runner-backend"] = "flashinfer_trtllm"
    args["attention-backend"] = "fa3"
    (copy / "host_vars").mkdir(exist_ok=True)
    with open(copy / "host_vars" / "gpu-node-02.example.invalid.yml", "w", encoding="utf-8") as fh:
        yaml.safe_dump({"sglang_server_args": args}, fh, sort_keys=False)
    return copy


def test_production_inventory_passes():
    rc, out = run_lint("-l", "blackwell")
    assert rc == 0
    assert "sglang_flags lint: 2 host(s) pass (0 warning(s))" in out
    assert "unreachable=0" in out and "unreachable=1" not in out


def test_bad_host_fails_naming_host_flag_rule_and_fix(bad_inventory):
    rc, out = run_lint("-i", str(bad_inventory), "-l", "blackwell")
    text = flat(out)
    failure = text[text.index("FAILED! =>"):text.index("PLAY RECAP")]
    assert rc != 0
    assert "sglang_flags lint: 2 violation(s) in 2 host(s):" in failure
    assert ("gpu-node-02.example.invalid: --moe-runner-backend [sm120-moe-flashinfer-trtllm]" in text)
    assert "Fix: use --moe-runner-backend flashinfer_cutlass" in text
    # every violation, not just the first
    assert "gpu-node-02.example.invalid: --attention-backend [sm120-hybrid-gdn-attention-backend]" in text
    # the good host is not blamed, and nothing was contacted
    assert "gpu-node-01.example.invalid: --" not in failure
    assert "unreachable=1" not in out


def test_waiver_in_host_vars_turns_the_failure_into_a_warning(bad_inventory):
    path = bad_inventory / "host_vars" / "gpu-node-02.example.invalid.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["sglang_flags_waive"] = ["sm120-moe-flashinfer-trtllm", "sm120-hybrid-gdn-attention-backend"]
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    rc, out = run_lint("-i", str(bad_inventory))
    assert rc == 0
    assert "waived by sglang_flags_waive" in flat(out)


def test_argument_spec_violation_is_reported(bad_inventory):
    path = bad_inventory / "host_vars" / "gpu-node-01.example.invalid.yml"
    path.write_text("ml_env_keep_generations: many\n", encoding="utf-8")
    rc, out = run_lint("-i", str(bad_inventory), "-l", "gpu-node-01.example.invalid")
    text = flat(out)
    assert rc != 0
    assert "gpu-node-01.example.invalid: role ml_env [argument-spec]" in text
    assert "ml_env_keep_generations" in text


def test_main_entry_point_fails_the_bad_host_only(bad_inventory):
    """What sglang_server's meta dependency runs on every deploy: per host, offline."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, os.path.join(ROOT, "tests", "fixtures", "flags", "offline_main.yml"),
         "-i", str(bad_inventory), "--check"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    print(out)
    text = flat(out)
    assert proc.returncode != 0
    assert "gpu-node-02.example.invalid : ok=" in text and "failed=1" in text
    assert "gpu-node-01.example.invalid : ok=" in text
    recap = text[text.index("PLAY RECAP"):]
    assert re.search(r"gpu-node-01\.example\.invalid : ok=\d+ changed=0 unreachable=0 failed=0", recap)
    assert re.search(r"gpu-node-02\.example\.invalid : ok=\d+ changed=0 unreachable=0 failed=1", recap)
    assert "[sm120-moe-flashinfer-trtllm]" in text and "[sm120-hybrid-gdn-attention-backend]" in text


def test_local_inventory_passes_without_docker():
    """The CPU demo inventory reaches its hosts through docker exec: the lint must not."""
    rc, out = run_lint("-i", os.path.join(ROOT, "inventories", "local"))
    assert rc == 0
    assert "host(s) pass" in out and "unreachable=1" not in out

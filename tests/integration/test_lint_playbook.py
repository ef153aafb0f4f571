"""playbooks/lint.yml against the production inventory and against a copy with a bad host.

The inventory's hosts are *.invalid names: any connection attempt would make them unreachable,
so these runs also show that the lint never touches a host.
"""

import json
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


def run_lint(*extra, playbook=PLAYBOOK):
    if not os.path.exists(ANSIBLE_PLAYBOOK):
        pytest.fail(f"{ANSIBLE_PLAYBOOK} missing: run the tests with the controller venv (.venv)")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run([ANSIBLE_PLAYBOOK, playbook, *extra], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    print(out)
    return proc.returncode, out


def flat(text):
    """The default callback wraps long YAML strings: compare on whitespace-folded text."""
    return " ".join(text.replace("''", "'").split())


# a well-formed commit sha standing in for the revision a site pins (not a real revision)
PINNED = "0123456789abcdef0123456789abcdef01234567"


def production_copy(tmp_path, pin=True, key=True):
    """A copy of the production inventory under tmp_path, and its Blackwell profile (sglang.yml).
    ``pin``: the copy's model revision is PINNED instead of the shipped placeholder. ``key``: with
    group_vars/blackwell/keys.yml, the file README.md ("Production use") has the operator create,
    here with a plain stand-in key instead of a vault-encrypted one."""
    copy = tmp_path / "production"
    shutil.copytree(PRODUCTION, copy)
    if pin:
        model = copy / "group_vars" / "blackwell" / "model.yml"
        text = model.read_text(encoding="utf-8")
        assert "model_files_revision: PIN-ME" in text
        model.write_text(text.replace("model_files_revision: PIN-ME", f"model_files_revision: {PINNED}"),
                         encoding="utf-8")
    if key:
        (copy / "group_vars" / "blackwell" / "keys.yml").write_text(
            'sglang_server_api_key: "stand-in-for-the-vault-encrypted-key"\n', encoding="utf-8")
    with open(copy / "group_vars" / "blackwell" / "sglang.yml", encoding="utf-8") as fh:
        return copy, yaml.safe_load(fh)


def makefile_lint_extra_vars():
    """The extra variables `make lint` (CI) gives the production lint (Makefile, LINT_NO_KEY)."""
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as fh:
        line = next(line for line in fh if line.startswith("LINT_NO_KEY :="))
    return line.split(":=", 1)[1].strip()


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


def test_production_inventory_as_shipped_fails_naming_the_unpinned_revision():
    """As shipped, with the key's risk named as `make lint` names it (its own test below)."""
    rc, out = run_lint("-l", "blackwell", "-e", makefile_lint_extra_vars())
    text = flat(out)
    assert rc != 0
    for host in ("gpu-node-01.example.invalid", "gpu-node-02.example.invalid"):
        assert f"{host}: model_files_revision [model-files-revision] 'PIN-ME' is the placeholder" in text
    assert "HfApi().model_info('nvidia/Qwen3.5-397B-A17B-NVFP4').sha" in text
    assert "https://huggingface.co/nvidia/Qwen3.5-397B-A17B-NVFP4/commits/main" in text
    assert "unreachable=0" in out and "unreachable=1" not in out


@pytest.mark.parametrize("tags", [["--tags", "rollout"], ["--tags", "firewall"]])
def test_deploy_under_any_tag_refuses_a_bad_input_before_any_host_is_contacted(tags):
    """The lint runs under every --tags (the tag an operator rolls a flag change with included):
    a unit name that would be read as an option and a wildcard bind smuggled in a list are
    refused, naming host and variable, before the hosts' facts are gathered."""
    bad = {"sglang_server_service_name": "--help", "model_files_revision": PINNED}
    rc, out = run_lint("-l", "blackwell", "-e", makefile_lint_extra_vars(), "-e", json.dumps(bad), *tags,
                       playbook=os.path.join(ROOT, "deploy.yml"))
    text = flat(out)
    assert rc != 0
    assert "gpu-node-01.example.invalid" in text and "sglang_server_service_name" in text, text[-3000:]
    assert "unreachable=1" not in out and "Gather the minimal facts" not in out


@pytest.mark.parametrize("tags", [[], ["--tags", "rollout"], ["--tags", "install"]])
def test_deploy_refuses_the_unpinned_revision_before_any_host_is_contacted(tags):
    """deploy.yml imports the lint first; the model's check runs under any --tags."""
    rc, out = run_lint("-l", "blackwell", "-e", makefile_lint_extra_vars(), *tags,
                       playbook=os.path.join(ROOT, "deploy.yml"))
    assert rc != 0
    assert "model_files_revision [model-files-revision] 'PIN-ME'" in flat(out)
    assert "unreachable=1" not in out and "Gather the minimal facts" not in out


def test_production_inventory_passes_with_a_pinned_revision(tmp_path):
    rc, out = run_lint("-i", str(production_copy(tmp_path, pin=False)[0]), "-l", "blackwell",
                       "-e", f"model_files_revision={PINNED}")
    assert rc == 0
    # no warning: the shipped profile's context length is decided (131072, docs/blackwell-profile.md,
    # Context length), so the NEXTN context rule (docs/sglang-versions.md#qwen35-397b-nextn-context)
    # says nothing
    assert "sglang_flags lint: 2 host(s) pass (0 warning(s))" in out
    assert "[qwen35-397b-nextn-context-" not in flat(out)
    assert "unreachable=0" in out and "unreachable=1" not in out
    assert "0123456789abcdef" not in out


def test_production_inventory_passes_with_its_vault_key(tmp_path):
    """The production profile with the keys file README.md has the operator write, vault-encrypted
    with a password file, passes with no warning."""
    copy, _ = production_copy(tmp_path, key=False)
    password = tmp_path / "vault-pass"
    password.write_text("lint-test-password\n", encoding="utf-8")
    vault = os.path.join(os.path.dirname(ANSIBLE_PLAYBOOK), "ansible-vault")
    encrypted = subprocess.run([vault, "encrypt_string", "--vault-password-file", str(password),
                                "0123456789abcdef0123456789abcdef", "--name", "sglang_server_api_key"],
                               capture_output=True, text=True, timeout=120, check=True).stdout
    (copy / "group_vars" / "blackwell" / "keys.yml").write_text(encrypted, encoding="utf-8")
    rc, out = run_lint("-i", str(copy), "-l", "blackwell", "--vault-password-file", str(password))
    assert rc == 0
    # no warning: the shipped profile's context length is decided (131072, docs/blackwell-profile.md,
    # Context length), so the NEXTN context rule (docs/sglang-versions.md#qwen35-397b-nextn-context)
    # says nothing
    assert "sglang_flags lint: 2 host(s) pass (0 warning(s))" in out
    assert "[qwen35-397b-nextn-context-" not in flat(out)
    assert "unreachable=0" in out and "unreachable=1" not in out
    assert "0123456789abcdef" not in out


def test_production_without_a_key_fails_naming_the_variable_and_the_fix():
    """The shipped profile binds 0.0.0.0 and has no key in the repository: the lint refuses it
    until the operator's vault file sets sglang_server_api_key."""
    rc, out = run_lint("-l", "blackwell", "-e", f"model_files_revision={PINNED}")
    text = flat(out)
    assert rc != 0
    for host in ("gpu-node-01.example.invalid", "gpu-node-02.example.invalid"):
        assert (f"{host}: --host [exposed-without-key] '0.0.0.0' (sglang_server_args) binds beyond "
                "loopback and sglang_server_api_key is empty") in text
    assert "Fix: set sglang_server_api_key, vault-encrypted (README.md, 'Production use'" in text
    assert "name the risk in sglang_server_allow_no_api_key" in text
    assert "unreachable=1" not in out


def test_production_lint_as_make_lint_runs_it_passes_with_a_warning_naming_the_risk():
    """CI has no vault file: `make lint` names the risk it accepts, and the lint repeats it."""
    rc, out = run_lint("-l", "blackwell", "-e", makefile_lint_extra_vars(), "-e", f"model_files_revision={PINNED}")
    text = flat(out)
    assert rc == 0, text
    # per host: the accepted risk (the profile's context length is decided: no NEXTN context warning)
    assert "sglang_flags lint: 2 host(s) pass (2 warning(s))" in text
    assert ("accepted in sglang_server_allow_no_api_key: make lint: the API key is in a vault file of "
            "the operator") in text


def test_a_loopback_bind_needs_no_key(tmp_path):
    copy, profile = production_copy(tmp_path, key=False)
    (copy / "host_vars").mkdir()
    for host, bind in (("gpu-node-01.example.invalid", "127.0.0.1"), ("gpu-node-02.example.invalid", "::1")):
        args = dict(profile["sglang_server_args"], host=bind)
        (copy / "host_vars" / f"{host}.yml").write_text(yaml.safe_dump({"sglang_server_args": args}))
    rc, out = run_lint("-i", str(copy), "-l", "blackwell")
    assert rc == 0, flat(out)
    # no warning at all (the profile's context length is decided)
    assert "sglang_flags lint: 2 host(s) pass (0 warning(s))" in out
    assert "exposed-without-key" not in out


def test_bad_host_fails_naming_host_flag_rule_and_fix(bad_inventory):
    rc, out = run_lint("-i", str(bad_inventory), "-l", "blackwell")
    text = flat(out)
    failure = text[text.index("FAILED! =>"):text.index("PLAY RECAP")]
    assert rc != 0
    assert "sglang_flags lint: 3 violation(s) in 2 host(s):" in failure
    assert ("gpu-node-02.example.invalid: --moe-runner-backend [sm120-moe-flashinfer-trtllm]" in text)
    assert "Fix: use --moe-runner-backend flashinfer_cutlass" in text
    # every violation, not just the first
    assert "gpu-node-02.example.invalid: --attention-backend [sm120-hybrid-gdn-attention-backend]" in text
    assert "gpu-node-02.example.invalid: --attention-backend [sm120-attention-fa3]" in text
    # the good host is not blamed, and nothing was contacted
    assert "gpu-node-01.example.invalid: --" not in failure
    assert "unreachable=1" not in out


def test_waiver_in_host_vars_turns_the_failure_into_a_warning(bad_inventory):
    path = bad_inventory / "host_vars" / "gpu-node-02.example.invalid.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["sglang_flags_waive"] = ["sm120-moe-flashinfer-trtllm", "sm120-hybrid-gdn-attention-backend",
                                  "sm120-attention-fa3"]
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
    # refused by its kind (roles/ml_env/meta/input_kinds.yml) first, before the rules are judged
    assert "gpu-node-01.example.invalid: ml_env_keep_generations [input-type] 'many' is not an integer" in text


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
    # every role's argument spec was checked: no value of the inventory failed to template there
    # (an [ERROR] of that loop is collected, not fatal, and would hide the role's check)
    assert "[ERROR]" not in out, out[-3000:]


# --- flag names the declared version's catalog does not know ------------------------------------

def host_vars(inventory, data, host="gpu-node-02.example.invalid"):
    """Write ``data`` as the host_vars of ``host`` in the inventory copy."""
    (inventory / "host_vars").mkdir(exist_ok=True)
    with open(inventory / "host_vars" / f"{host}.yml", "w", encoding="utf-8") as fh:
        yaml.safe_dump(data, fh, sort_keys=False)


@pytest.fixture
def typo_inventory(tmp_path):
    """The production profile with a misspelt flag on one host (SGLang 0.5.23: a catalog exists)."""
    copy, profile = production_copy(tmp_path)
    args = dict(profile["sglang_server_args"], **{"max-runing-requests": 4})
    host_vars(copy, {"sglang_server_args": args})
    return copy, args


def test_unknown_flag_fails_naming_the_closest_flag(typo_inventory):
    inventory, _ = typo_inventory
    rc, out = run_lint("-i", str(inventory), "-l", "blackwell")
    text = flat(out)
    assert rc != 0
    assert "gpu-node-02.example.invalid: --max-runing-requests [flag-unknown]" in text
    assert "SGLang 0.5.23 has no flag --max-runing-requests" in text
    assert "the closest flags it has: --max-running-requests" in text
    assert "Fix: write the flag you mean (e.g. max-running-requests)" in text
    assert "gpu-node-01.example.invalid: --" not in text[text.index("FAILED! =>"):]


def test_unknown_flag_on_a_version_without_a_catalog_only_warns(typo_inventory):
    inventory, args = typo_inventory
    host_vars(inventory, {"sglang_server_args": args, "sglang_flags_sglang_version": "0.5.24.dev0"})
    rc, out = run_lint("-i", str(inventory), "-l", "blackwell")
    text = flat(out)
    assert rc == 0, text
    assert "gpu-node-02.example.invalid: sglang_flags_sglang_version [flag-catalog-missing]" in text
    assert "no exact flag catalog exists for SGLang 0.5.24.dev0" in text
    assert "unknown flag names could not be refused" in text
    assert "[flag-unknown]" not in text


def test_extra_known_flag_lets_a_patched_sglangs_flag_through(typo_inventory):
    inventory, args = typo_inventory
    args = {k: v for k, v in args.items() if k != "max-runing-requests"}
    args["site-numa-pin"] = "0-15"
    host_vars(inventory, {"sglang_server_args": args, "sglang_flags_extra_known_flags": ["site-numa-pin"]})
    rc, out = run_lint("-i", str(inventory), "-l", "blackwell")
    assert rc == 0, flat(out)
    assert "[flag-unknown]" not in out
    # without the escape the same flag fails
    host_vars(inventory, {"sglang_server_args": args})
    rc, out = run_lint("-i", str(inventory), "-l", "blackwell")
    assert rc != 0 and "gpu-node-02.example.invalid: --site-numa-pin [flag-unknown]" in flat(out)

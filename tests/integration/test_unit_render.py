"""The systemd unit and environment file that sglang_server renders for each inventory, compared
byte for byte with tests/fixtures/units/: a change to the flag model, the renderer or the
templates that alters what a host runs shows here first (regenerate the fixtures on purpose with
UPDATE_UNIT_FIXTURES=1). Rendered by ansible-playbook on the controller, as the role does."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
FIXTURES = ROOT / "tests" / "fixtures" / "units"
TEMPLATES = ROOT / "templates"
HOSTS = {"production": "gpu-node-01.example.invalid", "local": "sglang-local-1"}
# case -> (inventory, extra variables): each inventory as it is, and production with every opt-in
# PCIe lever of sglang_server switched on (the environment file gains their variables)
# what the cuda_toolkit role exports on a GPU host (roles/cuda_toolkit/tasks/main.yml), which
# sglang_server composes into the environment
CUDA = {"cuda_toolkit_env": {"CUDA_HOME": "/usr/local/cuda-13.0", "PATH_PREFIX": "/usr/local/cuda-13.0/bin",
                             "LD_LIBRARY_PATH": "/usr/local/cuda-13.0/lib64"}}
# production's model-path names the revision model_files puts in place: a pinned stand-in sha here
# (the shipped profile leaves model_files_revision to the site: model.yml)
PINNED = {"model_files_revision": "0123456789abcdef0123456789abcdef01234567"}
CASES = {"production": ("production", {**CUDA, **PINNED}), "local": ("local", {}),
         "production-pcie": ("production", {**CUDA, **PINNED, "sglang_server_pcie_ipc_allreduce": True,
                                            "sglang_server_nccl_ib_disable": True,
                                            "sglang_server_nccl_p2p_level_sys": True})}


def run_render(tmp_path, inventory, extra, options=()):
    """The ansible-playbook run that renders the inventory's first host's unit and environment
    file into tmp_path (roles/sglang_server tasks_from render, then the templates as configure.yml
    writes them), with ``options`` on its command line (test_render_guard.py: --skip-tags)."""
    play = [{"name": "Render", "hosts": HOSTS[inventory], "gather_facts": False, "tasks": [
        {"name": "Render the flags", "ansible.builtin.include_role": {"name": "sglang_server", "tasks_from": "render", "public": True}},
        {"name": "Write the files", "ansible.builtin.copy": {
            "content": "{{ lookup('ansible.builtin.template', item) }}",
            "dest": f"{tmp_path}/{{{{ item | basename }}}}", "mode": "0600"},
         "loop": [str(TEMPLATES / "sglang.service.j2"), str(TEMPLATES / "sglang.env.j2")],
         "delegate_to": "localhost"}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    # a fixed generation: the one ml_env would name (the file must not depend on this machine)
    (tmp_path / "extra.json").write_text(json.dumps({
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "ml_env_generation": "gen-fixture",
        "sglang_server_allow_no_api_key": "a test render: no server is started", **extra}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_LOCAL_TEMP=str(tmp_path / ".ansible-tmp"))
    return subprocess.run([ANSIBLE_PLAYBOOK, "-i", f"inventories/{inventory}", str(tmp_path / "play.yml"),
                           "-e", f"@{tmp_path / 'extra.json'}", *options],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def render(tmp_path, inventory, extra):
    """(unit text, environment file text) of the inventory's first host. The role's offline
    check runs first (its meta dependency): production binds 0.0.0.0 without the vault's API
    key here, so the render names that risk (sglang_server_allow_no_api_key) unless ``extra``
    sets a key or its own reason."""
    proc = run_render(tmp_path, inventory, extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return (tmp_path / "sglang.service.j2").read_text(), (tmp_path / "sglang.env.j2").read_text()


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_unit_and_environment_match_the_fixtures(tmp_path, case):
    unit, env_file = render(tmp_path, *CASES[case])
    for text, name in ((unit, f"{case}.service"), (env_file, f"{case}.env")):
        if os.environ.get("UPDATE_UNIT_FIXTURES") == "1":
            (FIXTURES / name).write_text(text)
        assert text == (FIXTURES / name).read_text(), name


def test_flags_written_with_underscores_render_the_same_unit(tmp_path):
    """model_path and model-path are one flag (plugins/module_utils/flags/model.py)."""
    with open(ROOT / "inventories" / "local" / "group_vars" / "all" / "sglang.yml", encoding="utf-8") as handle:
        args = yaml.safe_load(handle)["sglang_server_args"]
    spelt = {name.replace("-", "_"): value for name, value in args.items()}
    assert spelt != args
    unit, env_file = render(tmp_path, "local", {"sglang_server_args": spelt})
    assert unit == (FIXTURES / "local.service").read_text()
    assert env_file == (FIXTURES / "local.env").read_text()

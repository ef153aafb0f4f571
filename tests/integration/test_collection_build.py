"""The collection as someone outside this repository gets it: `ansible-galaxy collection build`
from the repository root, the artifact's file list (galaxy.yml build_ignore), `ansible-galaxy
collection install` into a temporary directory, then a playbook in another temporary directory
that uses two roles, one module and one filter of the INSTALLED copy by their full names.

Measured on the development machine: the artifact is about 1.30 MB (1,301,176 bytes, 426 entries); build 0.6 s,
install 0.7 s, the playbook 2.3 s, this file's two tests 4 s when the machine is idle, 12 s on its
two cores shared with other test runs.

Outside the repository there is no ansible.cfg of ours (ANSIBLE_CONFIG is an empty file) and the
checkout must not be found: the venv's .pth file (scripts/collections.sh) puts the checkout's
./collections on sys.path, where Ansible finds a collection unless COLLECTIONS_SCAN_SYS_PATH is off
(without it, install reports sglang.deploy "already installed" and installs nothing). The repo's
ansible.cfg turns it off too. The module runs under the venv's python (sys.executable): this
machine's interpreter discovery picks a python without the venv's packages."""

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
GALAXY = str(BIN / "ansible-galaxy")
ARTIFACT = "sglang-deploy-1.0.0.tar.gz"  # galaxy.yml namespace-name-version
# what the collection must carry, as a prefix of a file's path in the artifact
REQUIRED = ["roles/", "plugins/modules/", "plugins/module_utils/", "plugins/filter/",
            "plugins/callback/", "playbooks/", "meta/runtime.yml"]
# what galaxy.yml build_ignore leaves out: first path component (or any component, __pycache__)
EXCLUDED_TOP = {".venv", ".cache", "collections", "reports", "tests", "molecule", ".git"}
# 1.30 MB measured. The largest legitimate content is roles/model_files/files/tiny-qwen2 (an
# 0.82 MB safetensors) and the flag catalogs (~50 KB each). Anything build_ignore should have
# left out is far larger (.cache 9.7 GB, .venv 429 MB, .git 11 MB), so 2 MiB catches any of them
# and leaves room for the roles and docs to grow by half.
MAX_BYTES = 2 * 1024 * 1024

PLAYBOOK = """\
---
- name: Use the installed collection sglang.deploy from outside the repository
  hosts: localhost
  gather_facts: false
  vars:
    sglang_server_args: {model_path: /srv/models/tiny, host: 127.0.0.1, port: 30001, tp_size: 2, api_key: k-test}
  tasks:
    - name: Normalise the launch flags (sglang_flags_normalized)
      ansible.builtin.include_role: {name: sglang.deploy.sglang_flags, tasks_from: model}
    - name: Judge the firewall settings offline
      ansible.builtin.include_role: {name: sglang.deploy.sglang_firewall, tasks_from: lint}
    - name: Record a release in this directory
      sglang.deploy.sglang_release:
        state: record
        release_dir: "{{ playbook_dir }}/releases"
        fact: "{{ playbook_dir }}/release.fact"
        unit_path: "{{ playbook_dir }}/unit"
        env_path: "{{ playbook_dir }}/env"
        args: "{{ sglang_flags_normalized }}"
      register: use_release
    - name: Write what the play found
      ansible.builtin.copy:
        dest: "{{ playbook_dir }}/result.json"
        # the key flag is the release record's test below: argv refuses it (the keys go through a file)
        content: >-
          {{ {'argv': sglang_flags_normalized | dict2items | rejectattr('key', 'equalto', 'api-key') | items2dict
                      | sglang.deploy.sglang_argv, 'release': use_release} | to_json }}
        mode: "0600"
"""


def run(cmd, cwd, env=None):
    """The command's CompletedProcess; fails the test with its output when it exits non-zero."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False)
    if proc.returncode != 0:
        pytest.fail("%s exited %d (cwd %s)\n--- stdout\n%s\n--- stderr\n%s"
                    % (" ".join(cmd), proc.returncode, cwd, proc.stdout, proc.stderr))
    return proc


def outside_env(workdir, colls):
    """os.environ without any ANSIBLE_* of the caller, with an empty config file and only the
    temporary collections directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    config = workdir / "empty.cfg"
    config.write_text("", encoding="utf-8")
    env.update(ANSIBLE_CONFIG=str(config), ANSIBLE_COLLECTIONS_PATH=str(colls),
               ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false", ANSIBLE_NOCOLOR="1")
    return env


@pytest.fixture(name="artifact", scope="module")
def fixture_artifact(tmp_path_factory):
    out = tmp_path_factory.mktemp("collection-build")
    run([GALAXY, "collection", "build", "--output-path", str(out)], cwd=ROOT)
    path = out / ARTIFACT
    assert path.is_file(), "ansible-galaxy built no %s in %s: %s" % (ARTIFACT, out, sorted(os.listdir(out)))
    return path


@pytest.fixture(name="installed", scope="module")
def fixture_installed(artifact, tmp_path_factory):
    """(collections directory, working directory outside the repository, environment)."""
    work = tmp_path_factory.mktemp("collection-use")
    assert ROOT not in work.resolve().parents, "the temporary directory is inside the repository"
    colls = work / "colls"
    env = outside_env(work, colls)
    run([GALAXY, "collection", "install", "--offline", "--no-deps", str(artifact), "-p", str(colls)],
        cwd=work, env=env)
    return colls, work, env


def test_the_artifact_carries_the_collection_and_leaves_out_the_checkouts_tooling(artifact):
    with tarfile.open(artifact) as tar:
        members = [m.name for m in tar.getmembers()]
        files = json.load(tar.extractfile("FILES.json"))["files"]
        manifest = json.load(tar.extractfile("MANIFEST.json"))["collection_info"]
    listed = [entry["name"] for entry in files]
    assert (manifest["namespace"], manifest["name"]) == ("sglang", "deploy")
    missing = [p for p in REQUIRED if not any(name.startswith(p) for name in listed)]
    assert not missing, "the artifact lacks %s" % missing
    for names, what in ((listed, "FILES.json"), (members, "the archive")):
        leaked = sorted(n for n in names if n.split("/")[0] in EXCLUDED_TOP or "__pycache__" in n.split("/"))
        assert not leaked, "%s holds what galaxy.yml build_ignore leaves out: %s" % (what, leaked[:20])
    size = artifact.stat().st_size
    assert size <= MAX_BYTES, "the artifact is %d bytes (at most %d): %s" % (size, MAX_BYTES, sorted(
        ((m.size, m.name) for m in tarfile.open(artifact).getmembers()), reverse=True)[:10])


def test_a_playbook_outside_the_repository_uses_the_installed_roles_module_and_filter(installed):
    colls, work, env = installed
    installed_root = colls / "ansible_collections" / "sglang" / "deploy"
    assert (installed_root / "MANIFEST.json").is_file(), "the install left no %s" % installed_root
    play = work / "play"
    play.mkdir()
    (play / "use.yml").write_text(PLAYBOOK, encoding="utf-8")
    (play / "unit").write_text("[Service]\nExecStart=/opt/sglang/bin/python -m sglang.launch_server\n",
                               encoding="utf-8")
    (play / "env").write_text('SGLANG_DEPLOY_ML_ENV="gen-test"\n', encoding="utf-8")
    proc = run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", "-vvvvv",
                "-e", "ansible_python_interpreter=" + sys.executable, "use.yml"], cwd=play, env=env)
    log = proc.stdout + proc.stderr

    result = json.loads((play / "result.json").read_text(encoding="utf-8"))
    # the filter (through the role's sglang_flags_normalized) renders SGLang's argv
    assert result["argv"] == ["--model-path", "/srv/models/tiny", "--host", "127.0.0.1", "--port", "30001",
                              "--tp-size", "2"]
    # the module recorded the release with its module_utils: generation read from the env file,
    # the secret flag left out of the record
    release = result["release"]
    assert release["changed"] is True and release["generation"] == "gen-test", release
    assert release["state"]["current"] == release["id"] and len(release["id"]) == 12, release
    recorded = json.loads((play / "releases" / release["id"] / "release.json").read_text(encoding="utf-8"))
    assert recorded["args"] == {"model-path": "/srv/models/tiny", "host": "127.0.0.1", "port": 30001,
                                "tp-size": 2}, recorded

    # what ran is the installed copy: the collection's package, the role task files, the module
    loaded = [line for line in log.splitlines() if line.startswith("Loading collection sglang.deploy from ")]
    assert loaded == ["Loading collection sglang.deploy from %s" % installed_root], loaded or log
    task_paths = [line.split("task path: ", 1)[1] for line in log.splitlines() if line.startswith("task path: ")]
    for role, entry in (("sglang_flags", "model"), ("sglang_firewall", "lint")):
        prefix = "%s/roles/%s/tasks/%s.yml:" % (installed_root, role, entry)
        assert any(p.startswith(prefix) for p in task_paths), "no task of %s ran: %s" % (prefix, task_paths)
    assert not [p for p in task_paths if not p.startswith((str(installed_root), str(play)))], task_paths
    assert "Using module file %s/plugins/modules/sglang_release.py" % installed_root in log, log
    assert str(ROOT / "roles") not in log and str(ROOT / "plugins") not in log, log

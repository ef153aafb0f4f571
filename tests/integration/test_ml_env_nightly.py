"""ml_env's nightly track through Ansible (roles/ml_env/tasks/spec.yml on localhost, controller
only, no install): the first run resolves the spec into a lock under ml_env_lock_dir/nightly/ and
names the generation by it; a run after the index moved keeps the lock and the generation; a run
with ml_env_refresh=true moves both. The index is a find-links directory of tiny wheels in
tmp_path, so nothing is downloaded."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")


def toy_wheel(directory, version):
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(directory / f"sgdtoy-{version}-py3-none-any.whl", "w") as zf:
        zf.writestr("sgdtoy/__init__.py", "")
        zf.writestr(f"sgdtoy-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: sgdtoy\nVersion: {version}\n")
        zf.writestr(f"sgdtoy-{version}.dist-info/WHEEL",
                    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"sgdtoy-{version}.dist-info/RECORD", "")


def spec_run(tmp_path, **extra):
    """tasks_from spec on localhost; (rc, output, the generation's requirements)."""
    (tmp_path / "empty-index").mkdir(exist_ok=True)
    play = [{"name": "Spec", "hosts": "all", "gather_facts": False, "tasks": [
        {"name": "The spec", "ansible.builtin.include_role": {"name": "ml_env", "tasks_from": "spec"}},
        {"name": "Show it", "ansible.builtin.copy": {
            "dest": str(tmp_path / "spec.json"), "mode": "0644",
            "content": "{{ {'generation': _ml_env_generation, 'nodeps': _ml_env_nodeps, 'deps': _ml_env_deps} | to_json }}"}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    variables = dict(dict(ansible_python_interpreter=sys.executable, ml_env_track="nightly",
                          ml_env_packages=["sgdtoy"], ml_env_index_url=(tmp_path / "empty-index").as_uri(),
                          ml_env_find_links=[str(tmp_path / "links")], ml_env_lock_dir=str(tmp_path / "locks"),
                          ml_env_root=str(tmp_path / "ml-envs")), **extra)
    (tmp_path / "extra.json").write_text(json.dumps(variables))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_ROLES_PATH=str(ROOT / "roles"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_LOCAL_TEMP=str(tmp_path / ".ansible-tmp"))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", str(tmp_path / "play.yml"),
                           "-e", f"@{tmp_path / 'extra.json'}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    print(out)
    spec = json.loads((tmp_path / "spec.json").read_text()) if proc.returncode == 0 else {}
    return proc.returncode, out, spec


def test_nightly_lock_is_kept_until_refreshed(tmp_path):
    toy_wheel(tmp_path / "links", "1.0")
    rc, out, first = spec_run(tmp_path)
    assert rc == 0, out
    assert first["deps"] == [] and len(first["nodeps"]) == 1 and first["nodeps"][0].startswith("sgdtoy==1.0 --hash=")
    assert "resolved now" in out
    locks = list((tmp_path / "locks" / "nightly").iterdir())
    assert len(locks) == 1 and (locks[0] / "lock.json").is_file()

    toy_wheel(tmp_path / "links", "1.1")  # the index moved on
    rc, out, kept = spec_run(tmp_path)
    assert rc == 0, out
    assert kept == first and "kept; -e ml_env_refresh=true resolves again" in out

    rc, out, refreshed = spec_run(tmp_path, ml_env_refresh=True)
    assert rc == 0, out
    assert refreshed["nodeps"][0].startswith("sgdtoy==1.1 --hash=")
    assert refreshed["generation"] != first["generation"]
    assert "(resolved now): sgdtoy 1.0 -> 1.1;" in " ".join(out.split())


def test_nightly_needs_a_lock_dir(tmp_path):
    toy_wheel(tmp_path / "links", "1.0")
    rc, out, _ = spec_run(tmp_path, ml_env_lock_dir="")
    assert rc != 0 and "ml_env_track nightly keeps its lock under ml_env_lock_dir" in " ".join(out.split())

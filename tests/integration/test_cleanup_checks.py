"""The roles' cleanup and rollback checks run for real by ansible-playbook on localhost, on
directory trees in tmp_path: ml_env's prune removes only finished generations that nothing
protects, sglang_release refuses a release whose ml_env generation is gone before anything is
written, and ml_env refuses ml_env_root '/' or a relative path. Plus the task order that makes
"nothing written before the check" hold in restore.yml and rollback.yml."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
RECORD = "ml-env-generation.json"


def run_role(tmp_path, include, extra, *args):
    """Run one include_role on localhost (local connection, this interpreter); (rc, output)."""
    play = [{"name": "Local run", "hosts": "all", "gather_facts": False,
             "tasks": [{"name": "The role", "ansible.builtin.include_role": include}]}]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(play))
    extra_file = tmp_path / "extra.json"
    extra_file.write_text(json.dumps(dict(extra, ansible_python_interpreter=sys.executable)))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_ROLES_PATH=str(ROOT / "roles"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_LOCAL_TEMP=str(tmp_path / ".ansible-tmp"))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", str(playbook),
                           "-e", f"@{extra_file}", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    print(out)
    return proc.returncode, " ".join(out.replace("''", "'").split())


def generation(root, name, record=True):
    path = root / name
    (path / "bin").mkdir(parents=True)
    if record:
        (path / RECORD).write_text(json.dumps({"generation": name}))
    return path


def tree(path):
    """Every file and directory under path with its content and mtime: a change shows."""
    return {str(p): (p.is_dir(), p.stat().st_mtime_ns, None if p.is_dir() or p.is_symlink() else p.read_bytes())
            for p in sorted(path.rglob("*"))}


@pytest.fixture
def host(host_tmp):
    """Two recorded releases: current runs generation `present`, previous runs `gone` (pruned); the
    host's directories outside /tmp (the roles refuse a state directory there)."""
    tmp_path = host_tmp
    envs, releases = tmp_path / "host" / "ml-envs", tmp_path / "host" / "releases"
    generation(envs, "present")
    for rid, gen in [("rnew", "present"), ("rold", "gone"), ("rpart", "partial")]:
        (releases / rid).mkdir(parents=True)
        (releases / rid / "unit").write_text("[Service]\n")
        (releases / rid / "env").write_text(f'PATH="/usr/bin"\nSGLANG_DEPLOY_ML_ENV="{gen}"\n')
    generation(envs, "partial", record=False)
    fact = tmp_path / "host" / "sglang_release.fact"
    fact.write_text(json.dumps({
        "current": "rnew", "current_generation": "present", "previous": "rold", "previous_generation": "gone",
        "history": ["rnew", "rold", "rpart"], "generations": {"rnew": "present", "rold": "gone", "rpart": "partial"}}))
    return {"sglang_release_dir": str(releases), "sglang_release_fact": str(fact), "ml_env_root": str(envs)}


CHECK = {"name": "sglang_release", "tasks_from": "check"}


def test_a_release_whose_generation_was_removed_is_refused_and_nothing_changes(tmp_path, host, host_tmp):
    host_dir = host_tmp / "host"
    before = tree(host_dir)
    rc, out = run_role(tmp_path, CHECK, dict(host, sglang_release_target="previous"))
    assert rc != 0
    assert "localhost: release rold runs ml_env generation gone" in out, out[-3000:]
    assert f"{host['ml_env_root']}/gone is missing or has no {RECORD}" in out
    assert "Nothing was written: the host is as it was" in out and "Fix: rebuild that generation" in out
    assert "rollback_target=ID" in out
    assert tree(host_dir) == before


def test_a_partial_generation_is_refused_too(tmp_path, host):
    rc, out = run_role(tmp_path, CHECK, dict(host, sglang_release_target="rpart"))
    assert rc != 0 and "release rpart runs ml_env generation partial" in out, out[-3000:]


def test_a_release_with_its_generation_passes(tmp_path, host):
    rc, out = run_role(tmp_path, CHECK, dict(host, sglang_release_target="current"))
    assert rc == 0, out[-3000:]


def test_a_release_id_that_is_not_on_the_host_is_refused(tmp_path, host):
    rc, out = run_role(tmp_path, CHECK, dict(host, sglang_release_target="nosuch"))
    assert rc != 0
    assert "release 'nosuch' has no unit and environment copy" in out and "rnew, rold, rpart" in out, out[-3000:]


@pytest.mark.parametrize("root", ["/", "ml-envs", "/data/../"])
def test_ml_env_refuses_the_filesystem_root_and_relative_paths(tmp_path, root):
    rc, out = run_role(tmp_path, {"name": "ml_env"},
                       {"ml_env_root": root, "ml_env_link": str(tmp_path / "ml-env"),
                        "ml_env_packages": ["tqdm"], "ml_env_os_packages": []}, "--check")
    assert rc != 0
    # refused by its kind first (roles/ml_env/meta/input_kinds.yml), before anything is touched
    assert "localhost: ml_env_root [input-" in out and "Fix: " in out and "nothing was touched" in out, out[-3000:]


def test_prune_removes_only_unprotected_generations(tmp_path):
    """ml_env_root is /data-like: a models directory beside the generations survives, and so do
    the active generation and the generation of a recorded release."""
    data = tmp_path / "data"
    (data / "models" / "tiny").mkdir(parents=True)
    for name in ["active", "released", "old"]:
        generation(data, name)
    generation(data, "partial", record=False)
    (tmp_path / "ml-env").symlink_to(data / "active")
    fact = tmp_path / "sglang_release.fact"
    fact.write_text(json.dumps({"current": "r1", "current_generation": "active",
                                "generations": {"r1": "active", "r0": "released"}}))
    rc, out = run_role(tmp_path, {"name": "ml_env", "tasks_from": "prune"},
                       {"ml_env_root": str(data), "ml_env_link": str(tmp_path / "ml-env"),
                        "ml_env_keep_generations": 0, "ml_env_release_fact": str(fact)})
    assert rc == 0, out[-3000:]
    assert sorted(p.name for p in data.iterdir()) == ["active", "models", "partial", "released"]
    assert (data / "models" / "tiny").is_dir()


def test_prune_stops_on_a_malformed_release_index_and_the_release_dir_comes_from_sglang_defaults(tmp_path):
    """An index that is not a JSON object would protect no release's generation: the prune fails
    naming the file and the fix, and removes nothing. ml_env_release_dir is not given, so the
    directory the message names is sglang_defaults_release_dir, reached through ml_env's
    dependency on roles/sglang_defaults."""
    data = tmp_path / "data"
    for name in ["released", "old"]:
        generation(data, name)
    fact = tmp_path / "sglang_release.fact"
    fact.write_text("[\"r1\"]")
    rc, out = run_role(tmp_path, {"name": "ml_env", "tasks_from": "prune"},
                       {"ml_env_root": str(data), "ml_env_link": str(tmp_path / "ml-env"),
                        "ml_env_keep_generations": 0, "ml_env_release_fact": str(fact)})
    assert rc != 0
    assert f"ml_env_prune_plan: the release index {fact} is not a JSON object" in out, out[-3000:]
    assert "nothing was removed. Fix: repair the file" in out
    assert "the copies under /var/lib/sglang-deploy/releases name" in out
    assert sorted(p.name for p in data.iterdir()) == ["old", "released"]


def tasks_of(path):
    return yaml.safe_load((ROOT / path).read_text())


def test_restore_checks_before_it_writes_anything():
    tasks = tasks_of("roles/sglang_release/tasks/restore.yml")
    at = next(i for i, t in enumerate(tasks) if t.get("ansible.builtin.include_tasks") == "check.yml")
    assert at == 0  # nothing runs before the check
    # the release's files are put in place by sglang_server's restart, after the check
    restart = next(i for i, t in enumerate(tasks) if t.get("ansible.builtin.include_role", {}).get("tasks_from") == "restart")
    assert restart > at and set(tasks[restart]["vars"]) == {"sglang_server_restore_unit", "sglang_server_restore_env"}


def _calls(tasks):
    """(role, entry point, when) of each include_role in `tasks`, blocks flattened in order."""
    out = []
    for t in tasks:
        if "block" in t:
            out += _calls(t["block"])
        elif "ansible.builtin.include_role" in t:
            call = t["ansible.builtin.include_role"]
            out.append((call["name"], call.get("tasks_from"), t.get("when")))
        elif "ansible.builtin.include_tasks" in t:
            out.append(("", t["ansible.builtin.include_tasks"], t.get("when")))
    return out


def test_rollback_checks_before_the_host_leaves_the_gateway():
    """rollback.yml is the rollout's turn with action restore (roles/sglang_rollout): the release
    and its generation are checked before the host leaves any gateway, then restored."""
    tasks = tasks_of("playbooks/rollback.yml")[0]["tasks"]
    assert [(c[0], c[1]) for c in _calls(tasks)] == [("sglang_rollout", None)]
    assert tasks[0]["vars"]["sglang_rollout_action"] == "restore"
    turn = [(role, entry) for role, entry, _ in _calls(tasks_of("roles/sglang_rollout/tasks/main.yml"))]
    check, drain = turn.index(("sglang_release", "check")), turn.index(("sglang_gateway", "drain"))
    assert check < drain < turn.index(("", "{{ sglang_rollout_action }}.yml"))
    restore = [(role, entry) for role, entry, _ in _calls(tasks_of("roles/sglang_rollout/tasks/restore.yml"))]
    assert restore[0] == ("sglang_release", "restore")

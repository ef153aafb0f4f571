"""roles/gpu_admit refuses a gpu_admit_state_dir that is not a directory of the admission's own
(its bin/ holds the measurement scripts that run as root) before anything is copied or run:
control characters, relative paths, '..', system directories and trees, other users' trees (its
kind, state-dir, in roles/gpu_admit/meta/input_kinds.yml, judged by the check the role's entry point
runs first). Through ansible-playbook on this machine (connection local): the role's check alone
(sglang.deploy.sglang_inputs), and the whole role on a host with a GPU."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
REFUSED = {
    "etc": ("/etc", "[input-system-dir]"),
    "usr-tree": ("/usr/local/admission", "[input-system-dir]"),
    "var-lib-systemd": ("/var/lib/systemd/admission", "[input-system-dir]"),
    "tmp": ("/tmp", "[input-system-dir]"),
    "var-lib": ("/var/lib/", "[input-system-dir]"),
    "relative": ("admission", "[input-path]"),
    "home": ("/home/alice/admission", "[input-user-tree]"),
    "var-tmp": ("/var/tmp/admission", "[input-user-tree]"),
    "traversal": ("/var/lib/sglang-deploy/../../../etc/cron.d", "[input-path]"),
    "newline": ("/var/lib/sglang-deploy/admission\nExecStartPre=/tmp/x", "[input-control-char]"),
    "line-separator": ("/var/lib/sglang-deploy/admission\u2028x", "[input-control-char]"),
}


def run(tmp_path, state_dir, whole_role=False):
    task = ({"ansible.builtin.include_role": {"name": "gpu_admit"}} if whole_role else
            {"sglang.deploy.sglang_inputs": {"role": "gpu_admit"}})
    play = [{"name": "State dir", "hosts": "localhost", "connection": "local", "gather_facts": False,
             "tasks": [dict(task, name="The admission")]}]
    (tmp_path / "play.json").write_text(json.dumps(play))
    (tmp_path / "extra.json").write_text(json.dumps({
        "ansible_python_interpreter": sys.executable, "gpu_admit_state_dir": state_dir,
        "gpu_host_facts": {"gpu_count": 1}, "gpu_admit_enabled": True,
        # the record's directories as a test host would have them (not under /tmp: another user's tree)
        "gpu_admit_local_fact_dir": "/var/lib/sglang-deploy-test/facts",
        "gpu_admit_textfile_dir": "/var/lib/sglang-deploy-test/tf"}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / ".ansible-tmp"))
    return subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", str(tmp_path / "play.json"),
                           "-e", f"@{tmp_path / 'extra.json'}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def refusal(tmp_path, value, whole_role=False):
    """The output of a run that must fail at the guard, naming the variable and the fix."""
    proc = run(tmp_path, value, whole_role)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "localhost: gpu_admit_state_dir [input-" in out, out
    assert "Fix: " in out and "(nothing was touched)" in out, out
    return out


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_state_dir_not_of_its_own_is_refused_naming_the_variable_rule_and_fix(tmp_path, name):
    value, rule = REFUSED[name]
    assert rule in refusal(tmp_path, value)


@pytest.mark.parametrize("value", ["/var/lib/sglang-deploy/admission", "/srv/admission"])
def test_a_directory_of_its_own_passes(tmp_path, value):
    proc = run(tmp_path, value)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_role_refuses_before_it_copies_or_runs_anything(tmp_path):
    out = refusal(tmp_path, "/etc", whole_role=True)
    assert "Is an admission due?" not in out and "Copy the measurement script" not in out, out

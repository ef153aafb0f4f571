"""roles/gpu_admit through Ansible on this machine (connection local), with the measurement
replaced by the lent H200's real document (tests/fixtures/gpu-admit/h200-1gpu/measure-run1.json,
printed by a stand-in python) and gpu_host_facts from the same machine's gpu_host run: due and
measured, admitted under the production profile, changed=0 on the second run, check mode, an
unmeetable profile refused naming the figure without measuring again, a serving host deferred
or refused, and a host without a GPU skipped with its line."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
MEASURED = os.path.join(ROOT, "tests", "fixtures", "gpu-admit", "h200-1gpu", "measure-run1.json")
HOST_FACTS = os.path.join(ROOT, "tests", "fixtures", "gpu-host", "h200-1gpu-device-run", "gpu_host.fact.json")
PROFILE = os.path.join(ROOT, "inventories", "production", "group_vars", "blackwell", "admission.yml")

PLAY = """
- name: Admission on this machine with a stand-in measurement
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{{{ ansible_playbook_python }}}}"
    gpu_host_facts: "{{{{ lookup('file', '{facts}') | from_json }}}}"
    gpu_admit_python: {python}
    gpu_admit_server_unit: {unit}
    sglang_server_service_name: {unit}
    gpu_admit_local_fact_dir: {tmp}/facts
    gpu_admit_state_dir: {tmp}/state
    gpu_admit_textfile_dir: {tmp}/textfile
  roles:
    - role: gpu_admit
"""


@pytest.fixture(name="host")
def fixture_host(host_tmp):
    """(run(*args, facts=..., unit=...) -> (rc, out), the host's directory); the stand-in python counts
    its runs. The host's directories are not under /tmp: the role refuses a state directory there."""
    tmp_path = host_tmp
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho run >> %s/measured\ncat %s\n" % (tmp_path, MEASURED), encoding="utf-8")
    python.chmod(0o755)
    (tmp_path / "textfile").mkdir()

    def run(*args, facts=HOST_FACTS, unit="sglang-admission-test-none", path=None):
        play = tmp_path / "play.yml"
        play.write_text(PLAY.format(facts=facts, python=python, unit=unit, tmp=tmp_path), encoding="utf-8")
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_FORCE_COLOR="0", ANSIBLE_LOCALHOST_WARNING="0", PATH=path or os.environ.get("PATH", ""))
        proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", str(play), *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        return proc.returncode, proc.stdout + proc.stderr
    return run, tmp_path


def flat(out):
    """The output with the callback's line wrapping undone."""
    return " ".join(out.split())


def recap(out):
    line = next(x for x in out.splitlines() if x.startswith("localhost ") and "ok=" in x)
    return dict(part.split("=") for part in line.split(":", 1)[1].split())


def measurements(tmp_path):
    path = tmp_path / "measured"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_due_measured_admitted_then_idempotent_then_refused_by_an_unmeetable_profile(host):
    run, tmp = host
    rc, out = run("-e", "@" + PROFILE)
    assert rc == 0, out
    assert "gpu_admit localhost: admitted (measured now): admitted: 1x NVIDIA H200 Gen5" in flat(out)
    assert measurements(tmp) == 1 and recap(out)["changed"] != "0"
    fact = json.loads((tmp / "facts" / "gpu_admit.fact").read_text())
    assert fact["verdict"]["admitted"] and fact["summary"]["h2d_gbps_min"] == 55.29
    assert (tmp / "state" / "measurement.json").exists() and (tmp / "textfile" / "gpu_admit.prom").exists()

    rc, out = run("-e", "@" + PROFILE)
    assert rc == 0 and recap(out)["changed"] == "0", out
    assert "judged again" in out and measurements(tmp) == 1

    rc, out = run("-e", "@" + PROFILE, "--check")
    assert rc == 0 and recap(out)["changed"] == "0", out

    rc, out = run("-e", '{"gpu_admit_expect": {"memory_gbps": {"expect": 9000, "tolerance": 0.1}}}')
    assert rc != 0 and measurements(tmp) == 1, out
    text = flat(out)
    assert "localhost is refused (1 finding(s)); no server change was made on it" in text
    assert "GPU 0 device memory copy, read + write 4263.0 GB/s, expected 9000 (refused under 8100.0)" in text


def test_check_mode_says_due_and_measures_nothing(host):
    run, tmp = host
    rc, out = run("--check")
    assert rc == 0, out
    assert "gpu_admit localhost: due: never admitted; check mode measures nothing" in flat(out)
    assert measurements(tmp) == 0 and not (tmp / "facts").exists()


def test_a_serving_host_is_never_measured(host):
    run, tmp = host
    # a stand-in systemctl that says the unit is active (this machine has no systemd)
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text("#!/bin/sh\necho active\n", encoding="utf-8")
    (bin_dir / "systemctl").chmod(0o755)
    path = "%s:%s" % (bin_dir, os.environ.get("PATH", ""))
    rc, out = run("-e", "gpu_admit_when_serving=defer", path=path)
    assert rc == 0 and "admission deferred" in out and measurements(tmp) == 0, out
    rc, out = run(path=path)
    assert rc != 0 and "is active. The admission never runs beside the server" in flat(out)


def test_a_host_without_gpu_is_skipped_with_its_line(host, tmp_path):
    run, tmp = host
    facts = tmp_path / "no-gpu.json"
    facts.write_text(json.dumps({"gpu_count": 0, "cpu_test_host": True}), encoding="utf-8")
    rc, out = run(facts=str(facts))
    assert rc == 0 and recap(out)["changed"] == "0", out
    assert ("gpu_admit: localhost has no GPU (gpu_host_facts.gpu_count 0, a CPU test host): admission skipped, "
            "nothing measured.") in flat(out)
    assert measurements(tmp) == 0

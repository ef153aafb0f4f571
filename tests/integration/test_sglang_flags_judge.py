"""sglang_flags' `judge` entry point (the sweep's offline judgement of each candidate) exports what
the kinds refuse as findings instead of failing: a candidate smuggling the API key in a list value
with a token in its environment is a rejected candidate, and the sweep goes on with the others
(molecule/default's keyed sweep shows it end to end). Run on the controller, offline."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
KEY = "sk-judge-test-0123456789"
PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Judge a candidate
      ansible.builtin.include_role:
        name: sglang_flags
        tasks_from: judge
      vars:
        sglang_flags_server_args: {model-path: /data/models/x, lora-paths: [x, --api-key, "%s"], port: 30000}
        sglang_flags_server_env: {HF_TOKEN: hf_judge_test_token}
    - name: Write the errors
      ansible.builtin.copy:
        content: "{{ sglang_flags_findings | selectattr('severity', 'equalto', 'error') | list | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
""" % KEY


def test_judge_reports_a_refused_input_as_a_finding(tmp_path):
    (tmp_path / "play.yml").write_text(PLAY)
    out = tmp_path / "errors.json"
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / ".ansible-tmp"))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "inventories/local", str(tmp_path / "play.yml"),
                           "-e", f"out={out}"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    errors = json.loads(out.read_text())
    assert "input-dash-value" in [e["rule"] for e in errors], errors
    assert KEY not in proc.stdout + proc.stderr

"""The inputs' kinds refuse before any host is touched, whatever the tags: deploy.yml on the local
inventory (its container hosts need not exist: a task that reached one would fail UNREACHABLE) with
refused inputs of several roles, run plain, with --skip-tags sglang_flags_lint and with --tags of
each phase. Every run fails in the lint play's first tasks (playbooks/lint.yml: the check every
role's entry points run, sglang.deploy.sglang_inputs, over every role), naming each host, variable,
rule and fix at once, and nothing after it runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
HOSTS = ("sglang-local-1", "sglang-local-2")
BAD = {
    "sglang_watchdog_failure_threshold": 0,
    "gpu_admit_env": {"LD_PRELOAD": "/opt/x.so"},
    "sglang_firewall_enabled": True,
    "sglang_firewall_port": 22,
    "sglang_verify_quality_tolerance": {"mean_abs_dlogprob": 0.02, "min_top_1": 0.97},
    "sglang_gateway_extra_args": {"worker-urls": ["http://10.9.9.9:1"]},
    "sglang_watchdog_probe_base": "http://10.9.9.9:30000",
}
NAMED = [
    ("sglang_watchdog_failure_threshold", "input-range"),
    ("gpu_admit_env['LD_PRELOAD']", "input-env-loader"),
    ("sglang_firewall_port", "input-firewall-port"),
    ("sglang_verify_quality_tolerance['min_top_1']", "input-unknown-key"),
    ("sglang_gateway_extra_args['worker-urls']", "input-unsafe-option"),
    ("sglang_watchdog_probe_base", "input-url-host"),
]
RUNS = {"plain": (), "lint-skipped": ("--skip-tags", "sglang_flags_lint")}
RUNS.update({f"tags-{t}": ("--tags", t) for t in ("check", "install", "admit", "rollout", "firewall", "gateway")})


def deploy(tmp_path, extra, options, playbook="deploy.yml"):
    (tmp_path / "extra.json").write_text(json.dumps(extra))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / ".ansible-tmp"), ANSIBLE_CACHE_PLUGIN="memory")
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "inventories/local", playbook, "-e",
                           f"@{tmp_path / 'extra.json'}", *options],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("run", sorted(RUNS))
def test_refused_before_any_host_is_touched_whatever_the_tags(tmp_path, run):
    rc, out = deploy(tmp_path, BAD, RUNS[run])
    assert rc != 0, out
    flat = " ".join(out.split())
    assert "refused input(s) in 2 host(s); nothing was touched:" in flat or "sglang_flags lint:" in flat, out
    for host in HOSTS:
        for variable, rule in NAMED:
            head = f"{host}: {variable} [{rule}] "
            line = flat[flat.index(head):] if head in flat else ""
            assert line and " Fix: " in line.split("', ")[0], (head, out)
    assert "UNREACHABLE" not in out and "unreachable=1" not in out, out
    assert "PLAY [Gather the minimal facts" not in out, out


@pytest.mark.parametrize("options", [(), ("--skip-tags", "sglang_flags_lint"), ("--tags", "rollout")])
def test_good_inputs_pass_the_check(tmp_path, options):
    """The local inventory as it is passes the same check (playbooks/lint.yml: no host contacted,
    whatever a demo host on this machine is doing)."""
    rc, out = deploy(tmp_path, {}, options, "playbooks/lint.yml")
    assert rc == 0 and "nothing was touched" not in out, out


def test_the_check_validates_the_argument_spec_where_ansibles_task_is_left_out(tmp_path):
    """An include with ``rolespec_validate: false`` (deploy.yml's hot path) loses Ansible's own
    validation task; the entry point's check runs it instead: a required option missing is refused
    with the argument spec's message, on the controller, before anything else of the role."""
    play = [{"name": "No spec task", "hosts": "sglang-local-1", "gather_facts": False, "tasks": [
        {"name": "ml_env's check without its generation", "ansible.builtin.include_role": {
            "name": "ml_env", "tasks_from": "check", "rolespec_validate": False}}]}]
    (tmp_path / "play.json").write_text(json.dumps(play))
    rc, out = deploy(tmp_path, {"ansible_connection": "local"}, (), str(tmp_path / "play.json"))
    flat = " ".join(out.split())
    assert rc != 0
    assert "Validating arguments against arg spec" not in out
    assert ("sglang-local-1: role ml_env (check) [argument-spec] missing required arguments: ml_env_target_generation"
            in flat), out

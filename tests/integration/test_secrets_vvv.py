"""No key, token or endpoint credential in what ansible-playbook -vvv prints (each module's
invocation.module_args included), in the files the modules write, in Ansible's log or in the
async job's file. Through ansible-playbook on this machine (connection local, no
network): the sweep's plan and record modules with an API key in the flags, HF_TOKEN in the
environment and a key smuggled inside a list value, as roles/sglang_sweep calls them and without
the secrets option; a model fetch in the background whose endpoint (user:password@, a bare
user@, ?token=) refuses the connection."""

import json
import os
import subprocess
import sys
import time

from ansible_collections.sglang.deploy.tests.hub.hub_endpoint import refusing_port

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
KEY, ADMIN, LORA, TOKEN, AXIS = ("KEY-vvv-0123456789", "ADMIN-vvv-0123456789", "LORA-vvv-0123456789",
                                 "hf_vvv_0123456789", "hf_axis_vvv_01234")
SWEEP_SECRETS = (KEY, ADMIN, LORA, TOKEN, AXIS)
PLAN = {"host": "canary", "sweep_name": "s",
        "current_args": {"model-path": "/m", "port": 30000, "api-key": KEY, "admin-api-key": ADMIN},
        "current_env": {"OMP_NUM_THREADS": "1", "HF_TOKEN": TOKEN},
        "axes": {"lora": [{"lora-paths": ["x", "--api-key", LORA]}], "WANDB_API_KEY": [AXIS]}}
SECRETS_FACT = ("{{ {'flags': plan.current_args, 'env': plan.current_env} | sglang.deploy.sglang_sweep_secrets("
                "{}, plan.axes, plan.candidates | default([])) }}")


def playbook(tmp_path, tasks, extra):
    (tmp_path / "play.json").write_text(json.dumps([{"name": "Secrets", "hosts": "localhost", "connection": "local",
                                                     "gather_facts": False, "tasks": tasks}]))
    (tmp_path / "extra.json").write_text(json.dumps(dict(extra, ansible_python_interpreter=sys.executable)))
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1", HOME=str(home),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_REMOTE_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_ASYNC_DIR=str(tmp_path / "async"), ANSIBLE_LOG_PATH=str(tmp_path / "ansible.log"),
               ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"), ANSIBLE_KEEP_REMOTE_FILES="0")
    for var in ("HF_TOKEN", "HF_ENDPOINT", "HF_HUB_OFFLINE"):
        env.pop(var, None)
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-vvv", "-i", "localhost,", str(tmp_path / "play.json"),
                           "-e", f"@{tmp_path / 'extra.json'}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.stdout + proc.stderr


def leaks(tmp_path, out, secrets):
    """(secret, where) for every secret in the output or in any file under tmp_path."""
    found = [(s, "output") for s in secrets if s in out]
    for folder, _, names in os.walk(tmp_path):
        for name in names:
            path = os.path.join(folder, name)
            if name in ("play.json", "extra.json"):
                continue  # the test's own inputs
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
            found += [(s, path) for s in secrets if s in text]
    return found


def plan_task(name, **kw):
    args = {k: "{{ plan.%s }}" % k for k in PLAN}
    args.update(report_dir="{{ report_dir }}", **kw)
    return {"name": name, "sglang.deploy.sglang_sweep_plan": args}


def sweep_tasks(secrets):
    """The role's sequence (roles/sglang_sweep/tasks/main.yml, candidate.yml): plan, the no_log
    reveal, a candidate recorded running and then finished with a journal that quotes the key."""
    record = {"host": "canary", "report_dir": "{{ report_dir }}", "sweep_name": "s",
              "candidate": "{{ launch.todo[1] }}"}
    if secrets:
        record["secrets"] = "{{ sweep_secrets }}"
    tasks = [{"name": "The secret values (hidden)", "ansible.builtin.set_fact": {"sweep_secrets": SECRETS_FACT},
              "no_log": True}] if secrets else []
    tasks += [
        plan_task("Plan", **({"secrets": "{{ sweep_secrets }}"} if secrets else {})),
        dict(plan_task("Reveal", reveal=True), check_mode=True, no_log=True, register="launch"),
        {"name": "Running", "sglang.deploy.sglang_sweep_record": dict(record, status="running")},
        {"name": "Finished", "sglang.deploy.sglang_sweep_record": dict(
            record, status="finished", journal=["server_args=ServerArgs(api_key='%s')" % KEY, "--api-key " + KEY],
            wait={"failed": True, "outcome": "crashed", "msg": "exited", "journal": []})},
    ]
    return tasks


def run_sweep(tmp_path, secrets):
    extra = {"plan": PLAN, "report_dir": str(tmp_path / "reports")}
    out = playbook(tmp_path, sweep_tasks(secrets), extra)
    assert "failed=0" in out and "ok=" in out, out
    records = sorted(os.listdir(tmp_path / "reports" / "s" / "canary"))
    assert records[0].startswith("candidate-") and records[-1] == "sweep.json", records
    return out


def test_the_sweep_modules_at_vvv_show_no_secret_as_the_role_calls_them(tmp_path):
    out = run_sweep(tmp_path, secrets=True)
    assert "module_args:" in out and "<redacted>" in out, out  # -vvv printed the arguments
    assert not leaks(tmp_path, out, SWEEP_SECRETS), leaks(tmp_path, out, SWEEP_SECRETS)


def test_the_sweep_modules_mask_what_they_find_without_the_secrets_option(tmp_path):
    out = run_sweep(tmp_path, secrets=False)
    assert not leaks(tmp_path, out, SWEEP_SECRETS), leaks(tmp_path, out, SWEEP_SECRETS)


def test_a_refused_argument_fails_without_the_secrets(tmp_path):
    # the argument check fails before the module's own code runs: only the secrets option masks then
    bad = dict(plan_task("Plan", secrets="{{ sweep_secrets }}"), ignore_errors=True)
    bad["sglang.deploy.sglang_sweep_plan"]["candidates"] = ["not a mapping"]
    tasks = [{"name": "The secret values (hidden)", "ansible.builtin.set_fact": {"sweep_secrets": SECRETS_FACT},
              "no_log": True}, bad]
    out = playbook(tmp_path, tasks, {"plan": PLAN, "report_dir": str(tmp_path / "reports")})
    assert "unable to convert to dict" in out and "module_args:" in out, out
    assert not leaks(tmp_path, out, SWEEP_SECRETS), leaks(tmp_path, out, SWEEP_SECRETS)


def test_a_failed_background_fetch_at_vvv_shows_no_endpoint_credential(tmp_path):
    port = refusing_port()
    endpoints = {"password": "http://alice9user:pw9secret@127.0.0.1:%d/hf?token=tok9secret" % port,
                 "bare": "http://bob9user@127.0.0.1:%d/hf" % port}
    tasks = []
    for name, endpoint in endpoints.items():
        tasks += [
            {"name": "Fetch " + name, "sglang.deploy.model_files_fetch": {
                "repo_id": "org/model", "revision": "0" * 40, "root": str(tmp_path / "models"),
                "endpoint": endpoint, "token": "hf_tok9secret"},
             "async": 60, "poll": 0, "register": "job_" + name},
            {"name": "Wait " + name, "ansible.builtin.async_status": {"jid": "{{ job_%s.ansible_job_id }}" % name},
             "register": "done_" + name, "until": "done_%s.finished" % name, "retries": 60, "delay": 1,
             "ignore_errors": True},
            {"name": "It failed " + name, "ansible.builtin.assert": {
                "that": ["done_%s is failed" % name, "'127.0.0.1' in done_%s.msg" % name]}},
        ]
    out = playbook(tmp_path, tasks, {})
    # the job's payload (AnsiballZ_*.py: the arguments, as Ansible ships them, in a 0700 directory)
    # is removed by Ansible's async wrapper once the job has written its result
    for _ in range(100):
        if not os.listdir(tmp_path / "tmp"):
            break
        time.sleep(0.1)
    assert "failed=0" in out and "ignored=2" in out and "Connection refused" in out, out
    jobs = os.listdir(tmp_path / "async")
    # the job files are kept (no cleanup here) and hold the results; their mode is Ansible's own
    # (its async wrapper sets umask 022), so what keeps them safe is that they hold no credential
    assert len(jobs) == 2, jobs
    secrets = ("alice9user", "pw9secret", "tok9secret", "bob9user", "hf_tok9secret")
    assert not leaks(tmp_path, out, secrets), leaks(tmp_path, out, secrets)

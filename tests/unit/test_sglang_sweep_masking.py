"""No key or credential in what Ansible prints at -vvv for the sweep's plan and record tasks: the
modules' whole results, their arguments (invocation.module_args) included, the line they log
("Invoked with ...") and a failure of the argument check. The secret strings travel alone in the
no_log option `secrets` (the sglang_sweep_secrets filter); the modules mask what they find
themselves too; a port or a path is never masked (plugins/module_utils/sweep/redact.py,
plan_secrets; plugins/module_utils/sweep/redact.py)."""

import json

import pytest
from ansible.module_utils import basic

from ansible_collections.sglang.deploy.plugins.module_utils.sweep.redact import sweep_secrets
from ansible_collections.sglang.deploy.plugins.module_utils.sweep import redact as R
from ansible_collections.sglang.deploy.plugins.modules import sglang_sweep_plan, sglang_sweep_record

KEY, LORA, PFX, TOKEN, BASE, AXIS = ("KEY-0123456789", "LORA-0123456789", "PFX-0123456789", "hf_0123456789",
                                     "hf_base_01234", "wandb_axis_0123")
SECRETS = (KEY, LORA, PFX, TOKEN, BASE, AXIS)
ARGS = {"model-path": "/data/models/m", "port": 31234, "api-key": KEY}
ENV = {"OMP_NUM_THREADS": "1", "HF_TOKEN": TOKEN, "SGLANG_AUTH": "1"}  # "1": too short to mask
BASE_SETTINGS = {"env": {"HF_TOKEN": BASE}}
AXES = {"lora": [{"lora-paths": ["x", "--api-key", LORA]}, {"lora-paths": ["x", "--api-k=" + PFX]}],
        "WANDB_API_KEY": [AXIS]}


def plan_args(tmp_path, **kw):
    return dict(host="h", report_dir=str(tmp_path), sweep_name="s", current_args=ARGS, current_env=ENV,
                base=BASE_SETTINGS, axes=AXES, **kw)


def leaked(result):
    text = json.dumps(result)
    return [s for s in SECRETS if s in text]


def test_the_secrets_are_the_values_the_redaction_hides_and_nothing_short():
    found = R.plan_secrets(ARGS, ENV, BASE_SETTINGS, AXES, [], None)
    assert sorted(found) == sorted(SECRETS)  # not "1", the port or the path
    assert sweep_secrets({"flags": ARGS, "env": ENV}, BASE_SETTINGS, AXES, []) == found
    assert R.plan_secrets({}, {}) == [] and sweep_secrets(None) == []
    assert R.hidden_values(["--api-key=K123", "x"], ["--api-key=" + R.REDACTED, "x"]) == {"K123"}
    assert R.hidden_values({"api-key": ["a123", "b123"]}, {"api-key": R.REDACTED}) == {"a123", "b123"}
    assert R.candidate_secrets({"args": ARGS, "env": ENV}) == sorted([KEY, TOKEN], key=lambda v: (-len(v), v))


@pytest.mark.parametrize("secrets", [False, True])
def test_the_plans_result_and_arguments_hold_no_secret_and_keep_ports(run_module, tmp_path, secrets):
    extra = {"secrets": R.plan_secrets(ARGS, ENV, BASE_SETTINGS, AXES)} if secrets else {}
    out = run_module(sglang_sweep_plan, plan_args(tmp_path, **extra))
    assert not out.get("failed"), out
    assert not leaked(out), leaked(out)  # -vvv prints all of it, invocation.module_args included
    shown = out["invocation"]["module_args"]
    assert shown["current_args"]["port"] == 31234 and shown["current_args"]["model-path"] == "/data/models/m"
    assert shown["current_env"]["SGLANG_AUTH"] == "1" and out["budget"]["candidate_timeout_s"] == 600


def test_reveal_is_refused_without_no_log_or_with_secrets_and_says_nothing(run_module, tmp_path):
    for extra in ({}, {"_ansible_no_log": True, "secrets": [KEY]}):
        out = run_module(sglang_sweep_plan, plan_args(tmp_path, reveal=True, **extra), check_mode=True)
        assert out["failed"] and "only for a task with no_log" in out["msg"] and not leaked(out), out
    out = run_module(sglang_sweep_plan, plan_args(tmp_path, reveal=True, _ansible_no_log=True), check_mode=True)
    assert out["candidates"][0]["args"]["api-key"] == KEY  # the role's no_log task: what is launched


def test_the_records_result_and_arguments_hold_no_secret(run_module, tmp_path):
    launch = run_module(sglang_sweep_plan, plan_args(tmp_path, reveal=True, _ansible_no_log=True), check_mode=True)
    cand = next(c for c in launch["candidates"] if c["args"].get("lora-paths") == ["x", "--api-key", LORA])
    out = run_module(sglang_sweep_record, dict(
        host="h", report_dir=str(tmp_path), sweep_name="s", candidate=cand, status="finished",
        journal=["server_args=ServerArgs(api_key='%s', lora_paths=['x', '--api-key', '%s'])" % (KEY, LORA)],
        wait={"failed": True, "outcome": "crashed", "msg": "exited"}))
    assert out["outcome"] == "crashed" and not leaked(out), out


def test_the_logged_invocation_and_a_refused_argument_hold_no_secret(run_module, tmp_path, monkeypatch):
    # the module logs its arguments ("Invoked with ...", syslog or the journal) and fails a refused
    # argument before its own code runs: only the secrets option masks them there
    logged = []
    monkeypatch.setattr(basic.AnsibleModule, "log", lambda self, msg, log_args=None: logged.append(msg))
    secrets = R.plan_secrets(ARGS, ENV, BASE_SETTINGS, AXES)
    out = run_module(sglang_sweep_plan, plan_args(tmp_path, secrets=secrets, candidates=["not a mapping"]))
    assert out["failed"] and "unable to convert to dict" in out["msg"], out
    assert not leaked(out), leaked(out)
    run_module(sglang_sweep_plan, plan_args(tmp_path, secrets=secrets))
    assert logged and "Invoked with" in logged[-1] and "31234" in logged[-1]
    assert not [s for s in SECRETS if s in " ".join(logged)], logged


def test_the_candidate_s_journal_is_shown_only_through_the_record():
    """SGLang logs its server_args, the key among them, at start: the tasks that read and keep a
    candidate's journal print nothing at any verbosity (no_log); the record redacts it."""
    from pathlib import Path
    import yaml

    def tasks(node):
        for task in node if isinstance(node, list) else []:
            yield task
            for key in ("block", "rescue", "always"):
                yield from tasks(task.get(key))

    path = Path(__file__).resolve().parents[2] / "roles/sglang_sweep/tasks/candidate.yml"
    journal = [t for t in tasks(yaml.safe_load(path.read_text()))
               if "journalctl" in str(t.get("ansible.builtin.command", ""))
               or "_sglang_sweep_journal_read" in str(t.get("ansible.builtin.set_fact", ""))]
    assert len(journal) == 2, [t.get("name") for t in journal]  # the read and the keep
    assert all(t.get("no_log") is True for t in journal), [t.get("name") for t in journal]

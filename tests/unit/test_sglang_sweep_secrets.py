"""No key or credential in what the sweep's plan returns or writes: the module's result
(what -v prints) and sweep.json show secret flags (api-key, admin-api-key, any prefix), secret
options smuggled inside list values (lora-paths: [x, --api-key, K]) and credential variables
(HF_TOKEN) as <redacted>; only the play's no_log task asks for the values it launches
(plugins/modules/sglang_sweep_plan.py, reveal; plugins/module_utils/sweep/redact.py)."""

import json
import os

import pytest
import yaml

from ansible_collections.sglang.deploy.plugins.module_utils.sweep import redact as R
from ansible_collections.sglang.deploy.plugins.modules import sglang_sweep_plan

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SECRETS = ("KEY-0123456789", "ADMIN-0123456789", "LORA-0123456789", "hf_0123456789", "hf_base_01234",
           "hf_cand_01234", "hf_axis_01234", "PFX-0123456789")
CURRENT_ARGS = {"model-path": "/m", "api-key": SECRETS[0], "admin-api-key": SECRETS[1]}
CURRENT_ENV = {"OMP_NUM_THREADS": "1", "HF_TOKEN": SECRETS[3]}


def plan(run_module, tmp_path, check_mode=False, **kw):
    return run_module(sglang_sweep_plan, dict(
        host="h", report_dir=str(tmp_path), sweep_name="s", current_args=CURRENT_ARGS, current_env=CURRENT_ENV,
        base={"env": {"HF_TOKEN": SECRETS[4]}},
        axes={"lora": [{"lora-paths": ["x", "--api-key", SECRETS[2]]}, {"lora-paths": ["x", "--api-k=" + SECRETS[7]]}],
              "WANDB_API_KEY": [SECRETS[6]]},
        candidates=[{"name": "token", "env": {"HF_TOKEN": SECRETS[5]}}], **kw), check_mode=check_mode)


def test_the_result_at_v_and_sweep_json_hold_no_secret(run_module, tmp_path):
    out = plan(run_module, tmp_path)
    assert out.get("failed") is not True, out
    with open(os.path.join(out["sweep_dir"], "sweep.json"), encoding="utf-8") as fh:
        written = fh.read()
    shown = {k: v for k, v in out.items() if k != "invocation"}  # -v: the result; -vvv adds the arguments
    for text in (json.dumps(shown), written):
        leaked = [s for s in SECRETS if s in text]
        assert not leaked, (leaked, text)
    base = out["candidates"][0]
    assert base["args"]["api-key"] == base["args"]["admin-api-key"] == R.REDACTED
    assert base["env"] == {"OMP_NUM_THREADS": "1", "HF_TOKEN": R.REDACTED}
    assert out["candidates"][1]["args"]["lora-paths"] == ["x", "--api-key", R.REDACTED]
    assert out["todo"] == out["candidates"]
    assert "HF_TOKEN=<redacted>" in " ".join(out["lines"])
    data = json.loads(written)
    assert data["settings"]["base"]["env"] == {"HF_TOKEN": R.REDACTED}
    assert data["settings"]["candidates"][0]["env"] == {"HF_TOKEN": R.REDACTED}
    assert data["settings"]["axes"]["WANDB_API_KEY"] == [R.REDACTED]


def test_reveal_returns_what_the_play_launches(run_module, tmp_path):
    out = plan(run_module, tmp_path, check_mode=True, reveal=True, _ansible_no_log=True)  # the role's no_log task
    assert out["candidates"][0]["args"]["api-key"] == SECRETS[0]
    assert out["candidates"][0]["env"]["HF_TOKEN"] == SECRETS[3]
    assert out["candidates"][1]["args"]["lora-paths"] == ["x", "--api-key", SECRETS[2]]
    assert [c["key"] for c in out["candidates"]] == [c["key"] for c in plan(run_module, tmp_path)["candidates"]]


@pytest.mark.parametrize("value, shown", [
    (["x", "--api-key", "K"], ["x", "--api-key", R.REDACTED]),
    (["--admin-api-key=K", "y"], ["--admin-api-key=" + R.REDACTED, "y"]),
    (["--api-k", "K", "z"], ["--api-k", R.REDACTED, "z"]),
    (["x", "-1", "--max-loras", "2"], ["x", "-1", "--max-loras", "2"]),
])
def test_secret_options_inside_a_list_value(value, shown):
    assert R.redact_list(value, R.secret_of()) == shown
    assert R.redact_args({"lora-paths": value})["lora-paths"] == shown


def test_the_role_launches_from_a_no_log_plan_and_shows_the_redacted_one():
    with open(os.path.join(ROOT, "roles", "sglang_sweep", "tasks", "main.yml"), encoding="utf-8") as fh:
        tasks = yaml.safe_load(fh)
    plans = [t for t in tasks if "sglang.deploy.sglang_sweep_plan" in t]
    shown, launch = plans
    assert "reveal" not in shown["sglang.deploy.sglang_sweep_plan"] and not shown.get("no_log")
    args = dict(launch["sglang.deploy.sglang_sweep_plan"])
    assert args.pop("reveal") is True and launch["no_log"] is True and launch["check_mode"] is True
    # the values it reveals would be masked: the no_log task passes no secrets, the shown plan does
    assert "secrets" not in args and shown["sglang.deploy.sglang_sweep_plan"]["secrets"] == "{{ _sglang_sweep_secrets }}"
    assert args == {k: v for k, v in shown["sglang.deploy.sglang_sweep_plan"].items() if k != "secrets"}
    text = yaml.safe_dump(tasks)
    assert "_sglang_sweep_plan.todo" not in text and "_sglang_sweep_launch.todo" in text
    with open(os.path.join(ROOT, "roles", "sglang_sweep", "tasks", "keep_best.yml"), encoding="utf-8") as fh:
        keep = yaml.safe_load(fh)
    winner = next(t for t in keep if "_sglang_sweep_winner" in str(t.get("ansible.builtin.set_fact")))
    assert "_sglang_sweep_launch.candidates" in str(winner) and winner["no_log"] is True

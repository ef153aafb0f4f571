"""playbooks/lint.yml refuses inputs that would break the rendered systemd unit, before any host
is touched: a copy of the production inventory with one bad host, one lint run, every finding
named by host, variable or flag, rule and fix (plugins/module_utils/flags/inputs.py)."""

import re

import pytest
import yaml
from test_lint_playbook import flat, production_copy, run_lint

BAD = "gpu-node-02.example.invalid"


@pytest.fixture
def bad_inputs_inventory(tmp_path):
    copy, profile = production_copy(tmp_path)
    args = {k: v for k, v in profile["sglang_server_args"].items()
            if k not in ("moe-runner-backend", "served-model-name")}
    args["port"] = 0
    args["moe-runner"] = "flashinfer_trtllm"  # argparse reads it as --moe-runner-backend
    host_vars = {
        "sglang_server_user": "root\nExecStartPre=/tmp/pwn",
        "sglang_server_service_name": "../../../x",
        "sglang_server_env": dict(profile["sglang_server_env"], **{"FOO=BAR": "1"}),
        "sglang_server_args": args,
    }
    text = yaml.safe_dump(host_vars, sort_keys=False, default_flow_style=False)
    # a YAML `|` block: the value keeps its trailing newline
    text += "  served-model-name: |\n    qwen3.5-397b\n"
    (copy / "host_vars").mkdir(exist_ok=True)
    (copy / "host_vars" / f"{BAD}.yml").write_text(text, encoding="utf-8")
    return copy


def test_bad_inputs_are_refused_offline_naming_host_variable_rule_and_fix(bad_inputs_inventory):
    rc, out = run_lint("-i", str(bad_inputs_inventory))
    text = flat(out)
    assert rc != 0
    failure = text[text.index("FAILED! =>"):text.index("PLAY RECAP")]
    expected = [
        # (variable or flag, rule, part of the fix)
        ("--served-model-name", "input-control-char", "Fix: remove it"),
        ("sglang_server_user", "input-control-char", "Fix: remove it"),
        ("sglang_server_service_name", "input-unit-name", "no '/'"),
        ("--port", "input-port", "Fix: give an integer 1-65535"),
        ("sglang_server_env['FOO=BAR']", "input-env-name", "[A-Za-z_][A-Za-z0-9_]*"),
        ("--moe-runner", "flag-abbreviation", "Fix: write it in full: moe-runner-backend"),
        # the SM120 rule sees the full name
        ("--moe-runner-backend", "sm120-moe-flashinfer-trtllm", "Fix: use --moe-runner-backend flashinfer_cutlass"),
    ]
    for what, rule, fix in expected:
        head = f"{BAD}: {what} [{rule}]"
        assert head in failure, head
        line = re.split(r" - '?gpu-node-0\d", failure[failure.index(head):])[0]
        assert fix in line, (fix, line)
    assert "ExecStartPre=/tmp/pwn" in failure and "/etc/systemd/system/../../../x.service" in failure
    # the good host is not blamed, and no host was contacted
    assert "gpu-node-01.example.invalid: " not in failure
    assert "unreachable=1" not in out and "changed=1" not in out

"""The values of sglang_server_args are values (plugins/module_utils/flags/inputs.py):
an item that starts with '-' would be read by SGLang's argparse as a flag of its own (argv gives every
list item its own token, sglang_exec_lines its own ExecStart line), so it is refused unless it is a
number; and the flags the role never takes from the inventory (the keys, --config) are refused by the
same rule. Judged as tasks/evaluate.yml judges them (test_sglang_flags_inputs.judge)."""

import pytest
from test_sglang_flags_inputs import GOOD_ARGS, I, args_with, judge, refused


@pytest.mark.parametrize("flag, value, shown", [
    ("lora-paths", ["x", "--api-key", "known"], "'--api-key'"),   # the review's example
    ("lora-paths", ["x", "--api-key=known"], "'--api-key=known'"),
    ("served-model-name", "--config=/tmp/x.yaml", "'--config=/tmp/x.yaml'"),
    ("served-model-name", "-h", "'-h'"),
    ("cuda-graph-bs", [1, "-inf"], "'-inf'"),
    ("tool-call-parser", "-", "'-'"),
])
def test_a_value_or_item_starting_with_a_dash_is_refused(flag, value, shown):
    findings, report = judge(args_with(**{flag: value}))
    line = refused(report, f"--{flag}", "input-dash-value", "remove it; a value may start with '-' only as a number (-1)",
                   [f"sglang_server_args['{flag}']", shown, "SGLang's argparse reads it as a flag"])
    assert "'known'" not in line  # only the first item that starts with '-' is quoted


@pytest.mark.parametrize("value", [-1, "-1", -0.5, "-0.25", "-.5", "-1e3", "-2E-2", [2, -1]])
def test_negative_numbers_are_values(value):
    # SGLang 0.5.23: --mamba-max-states-per-path and --offload-group-size default to -1
    assert judge(args_with(mamba_max_states_per_path=value))[0] == []


def test_dash_in_the_middle_of_a_value_is_fine():
    assert judge(args_with(served_model_name="qwen3.5-397b", lora_paths=["a-b", "c=-d"]))[0] == []


def test_the_dash_rule_names_the_first_bad_item_only_once_per_flag():
    findings, _ = judge(args_with(lora_paths=["--api-key", "k", "--admin-api-key", "k2"]))
    dashed = [f for f in findings if f["rule"] == "input-dash-value"]
    assert len(dashed) == 1 and dashed[0]["value"] == "--api-key"


@pytest.mark.parametrize("name", ["config", "--config", "conf"])
def test_config_is_refused_like_the_keys(name):
    args = dict(GOOD_ARGS, **{name: "/etc/sglang/mine.yaml"})
    _, report = judge(args)
    label = "--" + name.lstrip("-")
    line = refused(report, label, "input-config-flag", "remove it and write each flag of that file into "
                   "sglang_server_args", ["--config FILE.yaml sets any SGLang flag", "the firewall"])
    assert "/etc/sglang/mine.yaml" not in line


@pytest.mark.parametrize("name, var", [("api-key", "sglang_server_api_key"),
                                       ("admin_api_key", "sglang_server_admin_api_key")])
def test_key_flags_are_still_refused_without_showing_the_key(name, var):
    _, report = judge(dict(GOOD_ARGS, **{name: "s3cret"}))
    line = refused(report, "--" + name.replace("_", "-"), "input-key-flag", f"remove it from sglang_server_args and set {var}")
    assert "s3cret" not in line
    assert set(I.REFUSED_FLAGS) == {"api-key", "admin-api-key", "config"}

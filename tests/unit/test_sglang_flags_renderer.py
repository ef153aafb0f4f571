"""Unit tests of the flag renderer, plugins/module_utils/flags/render.py."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.sglang.deploy.plugins.filter.filters import FilterModule
from ansible_collections.sglang.deploy.plugins.module_utils.flags import render as R


def test_filter_names_are_public():
    published = FilterModule().filters()
    assert {name for name, function in published.items() if getattr(R, name, None) is function} == {
        "sglang_normalize_args", "sglang_argv", "sglang_exec_lines", "sglang_env_lines", "systemd_quote",
    }


def test_normalize_folds_underscores_and_dashes_and_drops_omitted():
    args = {"--model_path": "/m", "trust-remote-code": True, "enable-mscclpp": False, "port": None, "tp": 8}
    assert R.sglang_normalize_args(args) == {"model-path": "/m", "trust-remote-code": True, "tp": 8}


def test_normalize_keeps_inventory_order():
    args = {"z-last": 1, "a-first": 2, "m-middle": 3}
    assert list(R.sglang_normalize_args(args)) == ["z-last", "a-first", "m-middle"]


def test_normalize_rejects_two_spellings_of_one_flag():
    with pytest.raises(AnsibleFilterError, match="same flag --model-path"):
        R.sglang_normalize_args({"model_path": "/a", "model-path": "/b"})


@pytest.mark.parametrize("bad", ["model path", "-", "", "mo$del", 3])
def test_normalize_rejects_invalid_names(bad):
    with pytest.raises(AnsibleFilterError):
        R.sglang_normalize_args({bad: 1})


@pytest.mark.parametrize("bad", [["--tp", "8"], "tp=8", 8])
def test_normalize_rejects_non_mappings(bad):
    with pytest.raises(AnsibleFilterError, match="mapping"):
        R.sglang_normalize_args(bad)


def test_normalize_none_is_empty():
    assert R.sglang_normalize_args(None) == {}


def test_argv_bare_flags_values_lists_and_json():
    args = {
        "model-path": "/data/m",
        "trust-remote-code": True,
        "disable-radix-cache": False,
        "tp-size": 8,
        "cuda-graph-bs": [1, 2, 4],
        "json-model-override-args": {"b": 1, "a": "x"},
        "mem-fraction-static": 0.85,
    }
    assert R.sglang_argv(args) == [
        "--model-path", "/data/m",
        "--trust-remote-code",
        "--tp-size", "8",
        "--cuda-graph-bs", "1", "2", "4",
        "--json-model-override-args", '{"a":"x","b":1}',
        "--mem-fraction-static", "0.85",
    ]


def test_argv_rejects_empty_and_nested_lists():
    with pytest.raises(AnsibleFilterError, match="empty list"):
        R.sglang_argv({"cuda-graph-bs": []})
    with pytest.raises(AnsibleFilterError, match="nested"):
        R.sglang_argv({"cuda-graph-bs": [[1, 2]]})


def test_argv_booleans_inside_lists_are_words():
    assert R.sglang_argv({"x": [True, False]}) == ["--x", "true", "false"]


@pytest.mark.parametrize("token,want", [
    ("/data/models/Qwen3.5-397B", "/data/models/Qwen3.5-397B"),
    ("0.0.0.0", "0.0.0.0"),
    ("has space", '"has space"'),
    ("100%", '"100%%"'),
    ("$HOME", '"$$HOME"'),
    ('{"a":1}', '"{\\"a\\":1}"'),
    ("back\\slash", '"back\\\\slash"'),
    ("", '""'),
])
def test_systemd_quote(token, want):
    assert R.systemd_quote(token) == want


def test_exec_lines_one_flag_per_line():
    argv = ["--model-path", "/m", "--trust-remote-code", "--cuda-graph-bs", "1", "2", "--api-key", "a b"]
    assert R.sglang_exec_lines(argv) == [
        "--model-path /m", "--trust-remote-code", "--cuda-graph-bs 1 2", '--api-key "a b"',
    ]


def test_exec_lines_leading_value_starts_a_line():
    assert R.sglang_exec_lines(["value", "--flag"]) == ["value", "--flag"]


def test_env_lines_sorted_quoted_null_dropped_bools():
    env = {"OMP_NUM_THREADS": 16, "B": None, "A_FLAG": True, "OFF": False, "Q": 'say "hi" \\o/'}
    assert R.sglang_env_lines(env) == [
        'A_FLAG="1"', 'OFF="0"', 'OMP_NUM_THREADS="16"', 'Q="say \\"hi\\" \\\\o/"',
    ]


@pytest.mark.parametrize("env,match", [
    ({"1BAD": 1}, "not a valid environment variable"),
    ({"BAD-NAME": 1}, "not a valid environment variable"),
    ({"X": "a\nb"}, "newline"),
    (["X=1"], "mapping"),
])
def test_env_lines_rejects(env, match):
    with pytest.raises(AnsibleFilterError, match=match):
        R.sglang_env_lines(env)


def test_env_lines_none_is_empty():
    assert R.sglang_env_lines(None) == []

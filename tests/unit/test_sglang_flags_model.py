"""The flag model (plugins/module_utils/flags/model.py), the one owner of what a launch flag is:
its name, its rendering, its reading back from SGLang's launch_command, the secret flags, the
value comparison; and the drift comparison of roles/sglang_verify that reads through it."""

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.flags import model
from ansible_collections.sglang.deploy.plugins.module_utils.verify import drift

SERVER = {"launch_command": "python3 -m sglang.launch_server --model-path /m --served-model-name tiny "
                            "--tp-size 2 --enable-metrics --cuda-graph-bs 1 2 4 --api-key s3cret",
          "model_path": "/m", "served_model_name": "tiny", "tp_size": 2, "enable_metrics": True}


def test_names_fold_underscores_and_leading_dashes_and_keep_case():
    assert model.normalize_flag("--model_path") == "model-path"
    assert model.normalize_flag(" tp_size ") == "tp-size"
    # SGLang's argparse options are case-sensitive: a name is not lower-cased
    assert model.normalize_flag("Model-Path") == "Model-Path"


def test_fold_keeps_omitted_flags_and_normalize_drops_them():
    args = {"model_path": "/m", "enable_mscclpp": False, "port": None, "tp": 2}
    assert model.fold_args(args) == {"model-path": "/m", "enable-mscclpp": False, "port": None, "tp": 2}
    assert model.normalize_args(args) == {"model-path": "/m", "tp": 2}
    assert model.normalize_args(model.normalize_args(args)) == model.normalize_args(args)


def test_two_spellings_of_one_flag_are_refused():
    with pytest.raises(model.FlagModelError, match="same flag --model-path"):
        model.fold_args({"model_path": "/a", "model-path": "/b"})


def test_argv_renders_what_parse_launch_command_reads_back():
    args = {"model_path": "/m", "trust_remote_code": True, "cuda_graph_bs": [1, 2, 4],
            "json_model_override_args": {"b": 1, "a": [True]}, "enable_mscclpp": False}
    argv = model.argv(args)
    assert argv == ["--model-path", "/m", "--trust-remote-code", "--cuda-graph-bs", "1", "2", "4",
                    "--json-model-override-args", '{"a":[true],"b":1}']
    back = model.parse_launch_command("python3 -m sglang.launch_server " + " ".join(argv))
    assert sorted(back) == ["cuda-graph-bs", "json-model-override-args", "model-path", "trust-remote-code"]
    for flag, value in model.normalize_args(args).items():
        assert model.norm_value(back[flag]) == model.norm_value(value), flag


def test_launch_command_names_fold_like_the_inventory():
    assert model.parse_launch_command("--model_path /m --enable_metrics --tp_size=2") == {
        "model-path": "/m", "enable-metrics": True, "tp-size": "2"}


def test_boolean_list_items_compare_as_rendered():
    assert model.norm_value([True, False]) == model.norm_value("true false")


def test_secret_flags_are_redacted_in_either_spelling():
    assert model.redact_launch_command("--api_key abc --port 1 --admin-api-key=xyz") == \
        "--api_key <redacted> --port 1 --admin-api-key=<redacted>"
    assert model.redact_flags({"api-key": "k", "port": 1}) == {"api-key": "<redacted>", "port": 1}


def test_flag_hash_of_the_normalised_flags_does_not_depend_on_the_spelling():
    spelt = {"model_path": "/m", "tp-size": 2, "enable_mscclpp": False}
    assert model.flag_hash(model.normalize_args(spelt)) == model.flag_hash({"model-path": "/m", "tp-size": 2})


# ---------------------------------------------------------------- the bug: underscores were drift
def test_drift_accepts_a_flag_written_with_underscores():
    """`model_path: /m` is accepted by the lint, the on-host validation and the unit (which
    renders --model-path); drift compared the raw name with the launch command's and reported
    "not on its command line", which failed the gate and rolled the host back."""
    expected = {"model_path": "/m", "served_model_name": "tiny", "tp_size": 2, "enable_metrics": True,
                "cuda_graph_bs": [1, 2, 4], "api_key": "s3cret", "enable_mscclpp": False}
    d = drift.compare_args(expected, SERVER)
    assert d["ok"], d
    assert d["mismatches"] == [] and d["extra"] == []
    assert d["checked"] == 6


def test_drift_ignore_list_folds_names_too():
    d = drift.compare_args({"model-path": "/other"}, SERVER,
                           ignore=["model_path", "served-model-name", "tp-size", "enable-metrics",
                                   "cuda_graph_bs", "api-key"])
    assert d["ok"] and d["extra"] == []


def test_drift_a_flag_set_false_in_either_spelling_must_be_absent():
    d = drift.compare_args({"model-path": "/m", "enable_metrics": False}, SERVER)
    assert [m["flag"] for m in d["mismatches"]] == ["enable-metrics"]

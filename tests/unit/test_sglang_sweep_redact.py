"""A sweep keeps secret flag values out of what it writes and shows
(plugins/module_utils/sweep/redact.py): a setting of api-key, admin-api-key or
an abbreviation of one (api-k, resolved through the host's catalog first) is stored as <redacted>
in sweep.json (plan and settings), the candidate records, the report built from them and every
label, while the candidates the play launches keep the value."""

import json
import os

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.flags import catalog as C
from ansible_collections.sglang.deploy.plugins.modules import sglang_sweep_plan
from ansible_collections.sglang.deploy.plugins.modules import sglang_sweep_record
from ansible_collections.sglang.deploy.plugins.modules import sglang_sweep_report
from ansible_collections.sglang.deploy.plugins.module_utils.sweep import redact as R
from test_sglang_sweep_classify import WORKING

HOST = "sglang-local-1"
SECRET = "sk-sweep-0123456789"
ADMIN = "adm-sweep-abcdef"
OPTIONS = sorted(C.sglang_flags_catalog_of("0.5.23")["options"])
CURRENT = {"model-path": "/data/models/tiny-qwen2", "device": "cpu"}


@pytest.mark.parametrize("name", ["api-key", "--api-key", "api_key", "admin-api-key", "admin_api_key", "api-k",
                                  "api", "admin-api", "ssl-keyfile-password", "watermark-key"])
def test_secret_flags_and_their_abbreviations_are_secret(name):
    assert R.is_secret(name, OPTIONS) and R.is_secret(name)


@pytest.mark.parametrize("name", ["ssl-keyfile", "model-path", "host", "max-running-requests", "OMP_NUM_THREADS"])
def test_other_flags_are_not_secret_with_the_catalog(name):
    assert not R.is_secret(name, OPTIONS)


def test_without_a_catalog_every_prefix_of_a_secret_flag_is_secret():
    assert R.is_secret("ssl-keyfile") and R.is_secret("a")  # over-redaction, never a leak
    assert not R.is_secret("model-path")


def _sweep(tmp_path):
    return dict(host=HOST, report_dir=str(tmp_path), sweep_name="secrets", current_args=CURRENT,
                current_env={"OMP_NUM_THREADS": "1"}, catalog_options=OPTIONS,
                base={"args": {"admin_api_key": ADMIN}},
                axes={"api-k": [SECRET, None], "linked": [{"api-key": SECRET, "max-running-requests": 4}]},
                candidates=[{"name": "explicit", "args": {"api-key": SECRET}}])


def test_the_sweep_files_labels_and_lines_hold_no_secret(run_module, tmp_path):
    plan = run_module(sglang_sweep_plan, _sweep(tmp_path))
    launch = run_module(sglang_sweep_plan, dict(_sweep(tmp_path), reveal=True, _ansible_no_log=True),
                        check_mode=True)  # the play's no_log task
    launched = [c for c in launch["candidates"] if c["args"].get("api-k") == SECRET]
    assert launched, launch["candidates"]  # the play launches with the value
    assert not any(c["args"].get("api-k") == SECRET for c in plan["candidates"])  # -v shows no key
    shown = [c["label"] for c in plan["candidates"]] + [a for c in plan["candidates"] for a in c["aliases"]] + plan["lines"]
    assert not any(SECRET in text or ADMIN in text for text in shown), shown
    assert any("api-k=<redacted>" in label for label in shown)
    for cand in launch["todo"]:
        run_module(sglang_sweep_record, dict(host=HOST, report_dir=str(tmp_path), sweep_name="secrets",
                                             candidate=cand, status="running", catalog_options=OPTIONS))
        run_module(sglang_sweep_record, dict(host=HOST, report_dir=str(tmp_path), sweep_name="secrets",
                                             candidate=cand, catalog_options=OPTIONS,
                                             journal=["--api-key %s given" % SECRET], **WORKING))
    report = run_module(sglang_sweep_report, dict(host=HOST, report_dir=str(tmp_path), sweep_name="secrets"))
    directory = tmp_path / "secrets" / HOST
    written = {name: (directory / name).read_text() for name in os.listdir(directory) if not name.endswith(".png")}
    assert "sweep.json" in written and any(n.startswith("candidate-") for n in written)
    for name, text in written.items():
        assert SECRET not in text and ADMIN not in text, name
    data = json.loads(written["sweep.json"])
    assert data["settings"]["axes"]["api-k"] == ["<redacted>", None]
    assert data["settings"]["axes"]["linked"] == [{"api-key": "<redacted>", "max-running-requests": 4}]
    assert data["settings"]["base"]["args"] == {"admin_api_key": "<redacted>"}
    assert data["settings"]["candidates"][0]["args"] == {"api-key": "<redacted>"}
    assert all(c["args"].get("admin-api-key") in (None, "<redacted>") for c in data["candidates"])
    assert any(c["changes"]["args"].get("api-k") == "<redacted>" for c in data["candidates"])
    assert SECRET not in json.dumps(report) and ADMIN not in json.dumps(report)


@pytest.mark.parametrize("name,secret", [("HF_TOKEN", True), ("WANDB_API_KEY", True), ("AWS_SECRET_ACCESS_KEY", True),
                                         ("HUGGING_FACE_HUB_TOKEN", True), ("TOKENIZERS_PARALLELISM", False),
                                         ("NCCL_IB_DISABLE", False), ("PYTHONPATH", False), ("MONKEY", False)])
def test_credential_environment_variables_are_known_by_their_words(name, secret):
    assert R.is_secret_env(name) is secret


def test_a_records_environment_holds_no_credential():
    assert R.redact_env({"HF_TOKEN": "hf_abc", "NCCL_IB_DISABLE": "1", "X_KEY": ""}) == {
        "HF_TOKEN": "<redacted>", "NCCL_IB_DISABLE": "1", "X_KEY": ""}

"""scripts/sglang_drift_watch.py: `make drift` reads again, in a newer wheel, the source lines the
rules rest on (their `watch` in roles/sglang_flags/vars/main.yml) and names each rule whose fact
changed. The wheels here are zips written by the test with the watched file's text before and after
the upstream change a rule waits for (SGLang PR 36357 adds SM120 to the GDN prefill default; a
capability-12 entry in the symm-mem sizes); the table's own watches are checked for shape."""

import os
import zipfile

import pytest
import yaml

from ansible_collections.sglang.deploy.scripts import sglang_drift as S
from ansible_collections.sglang.deploy.scripts import sglang_drift_watch as W

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
with open(os.path.join(ROOT, "roles", "sglang_flags", "vars", "main.yml"), encoding="utf-8") as fh:
    RULES = yaml.safe_load(fh)["sglang_flags_rules"]

GDN = "sglang/srt/layers/attention/linear/gdn_backend.py"
SIZES = "sglang/srt/distributed/device_communicators/all_reduce_utils.py"
RULE = [{"id": "r-gdn", "source": "docs/x.md#r", "watch": [
    {"package": "sglang", "read_in": "0.5.23", "file": GDN, "present": r"sm_major not in \(9, 10\)",
     "means": "GDN prefill default on SM90/SM100 only"}]},
        {"id": "r-symm", "source": "docs/x.md#s", "watch": [
            {"package": "sglang", "read_in": "0.5.23", "file": SIZES, "absent": r"^\s*12\s*:",
             "means": "no capability-12 sizes"}]}]


def wheel(path, files):
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return str(path)


BEFORE = {GDN: "        or sm_major not in (9, 10)\n", SIZES: "SIZES = {\n    9: {2: 1},\n    10: {2: 1},\n}\n"}
AFTER = {GDN: "        or sm_major not in (9, 10, 12)\n", SIZES: "SIZES = {\n    9: {2: 1},\n    12: {2: 1},\n}\n"}


def test_the_tables_watches_are_well_formed_and_name_real_rules():
    assert W.problems(RULES) == []
    found = {rule_id for rule_id, _, _ in W.watches(RULES)}
    # the December rules that wait for an upstream change or rest on a line of the 0.5.23 / 0.7.2 wheels
    assert {"sm120-torch-symm-mem", "sm120-custom-all-reduce-pcie", "sm120-gdn-flashinfer-prefill-state-dtype",
            "flashinfer-jit-cache-provider", "flashinfer-kernel-version", "hybrid-gdn-mamba-no-buffer"} <= found


@pytest.mark.parametrize("watch,why", [
    ({"package": "pip", "read_in": "1", "file": "f", "present": "x", "means": "m"}, "package must be"),
    ({"package": "sglang", "read_in": "1", "file": "f", "present": "x", "absent": "y", "means": "m"}, "exactly one"),
    ({"package": "sglang", "file": "f", "present": "x", "means": "m"}, "required"),
    ({"package": "sglang", "read_in": "1", "file": "f", "present": "(", "means": "m"}, "not a regular expression")])
def test_a_malformed_watch_is_named(watch, why):
    assert any(why in p for p in W.problems([{"id": "r", "watch": [watch]}]))


def test_facts_as_read_are_not_read_again():
    def fetch(package, version):
        raise AssertionError("no wheel wanted at the version read")
    lines = W.report_lines(RULE, {"sglang": "0.5.23"}, fetch)
    assert lines == ["== facts the rules rest on: 0 changed, 2 as read, 0 not checked "
                     "(sglang 0.5.23, flashinfer-python ?)"]


def test_a_newer_wheel_that_keeps_the_facts_says_nothing(tmp_path):
    path = wheel(tmp_path / "old.whl", BEFORE)
    lines = W.report_lines(RULE, {"sglang": "0.5.24"}, lambda p, v: path)
    assert lines[0].startswith("== facts the rules rest on: 0 changed, 2 as read") and len(lines) == 1


def test_the_landed_upstream_changes_are_named_with_the_rule(tmp_path):
    asked = []
    path = wheel(tmp_path / "new.whl", AFTER)

    def fetch(package, version):
        asked.append((package, version))
        return path
    lines = W.report_lines(RULE, {"sglang": "0.5.24"}, fetch)
    assert asked == [("sglang", "0.5.24")]  # one download for every watch of the package
    assert lines[0].startswith("== facts the rules rest on: 2 changed, 0 as read, 0 not checked")
    assert any(line.startswith("  r-gdn: sglang 0.5.24: " + GDN + r" no longer has /sm_major not in \(9, 10\)/")
               and "re-read the rule, docs/x.md#r" in line for line in lines)
    assert any(line.startswith("  r-symm: sglang 0.5.24: " + SIZES + r" now has /^\s*12\s*:/") for line in lines)


def test_a_file_gone_and_a_wheel_missing_are_named(tmp_path):
    path = wheel(tmp_path / "moved.whl", {"sglang/other.py": ""})
    lines = W.report_lines(RULE[:1], {"sglang": "0.5.24"}, lambda p, v: path)
    assert f"{GDN} is gone" in lines[1]
    lines = W.report_lines(RULE[:1], {"sglang": "0.5.24"}, lambda p, v: None)
    assert lines[0].endswith("1 not checked (sglang 0.5.24, flashinfer-python ?)")
    assert "not checked, no sglang 0.5.24 wheel" in lines[1]


def test_drift_reports_the_watches_and_offline_reads_no_wheel(capsys):
    catalog = os.path.join(ROOT, "roles", "sglang_flags", "files", "catalogs", "sglang-0.5.22.json")
    assert S.main([ROOT, "--newest-catalog", catalog]) == 0
    out = capsys.readouterr().out
    # 0.5.22 pins flashinfer-python 0.7.1: neither version the facts were read in, and no download
    assert "== facts the rules rest on: 0 changed, 0 as read, " in out
    assert "sm120-torch-symm-mem: not checked, no sglang 0.5.22 wheel" in out
    assert "flashinfer-jit-cache-provider: not checked, no flashinfer-python 0.7.1 wheel" in out


def test_the_provider_pins_follow_flashinfer_python_with_their_cuda_label():
    prof = {"ml_env_packages": ["flashinfer-python==0.7.2", "flashinfer-cubin==0.7.2", "sglang==0.5.23"],
            "ml_env_packages_nodeps": ["flashinfer-jit-cache==0.7.2+cu130", "flashinfer-jit-cache-sm120f==0.7.2+cu130"]}
    moves = S.pin_moves(prof, "0.5.23", "0.5.24", {"flashinfer-python": "==0.7.2"}, {"flashinfer-python": "==0.7.4"})
    assert ("flashinfer-jit-cache", "==0.7.2+cu130", "==0.7.4+cu130 (matches flashinfer-python)") in moves
    assert ("flashinfer-jit-cache-sm120f", "==0.7.2+cu130", "==0.7.4+cu130 (matches flashinfer-python)") in moves
    assert ("flashinfer-cubin", "==0.7.2", "==0.7.4 (matches flashinfer-python)") in moves

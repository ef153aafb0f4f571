"""The code beside the rules evaluator in plugins/module_utils/flags/ that the evaluation
and the lint use: flags/report.py (report lines),
flags/env.py (task environment), flags/version.py, flags/sm.py and
flags/requirements.py (versions, SM, package spec), and the folder's filter names."""

import importlib
import os

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.flags import env as sglang_flags_env
from ansible_collections.sglang.deploy.plugins.module_utils.flags import report as sglang_flags_report
from ansible_collections.sglang.deploy.plugins.module_utils.flags import requirements as sglang_flags_requirements
from ansible_collections.sglang.deploy.plugins.module_utils.flags import rules as F
from ansible_collections.sglang.deploy.plugins.module_utils.flags import sm as sglang_flags_sm
from ansible_collections.sglang.deploy.plugins.module_utils.flags import version as sglang_flags_version
import yaml
from sglang_flags_rules_support import MINIMAL, ROLE, ROOT, check


# ---------------------------------------------------------------------------------------------
# report lines, task environment
# ---------------------------------------------------------------------------------------------
def test_format_and_report_name_host_flag_rule_fix():
    found = check(dict(MINIMAL, **{"moe-runner-backend": "flashinfer_trtllm"}), {"SGLANG_ENABLE_SPEC_V2": 1})
    lines = sglang_flags_report.sglang_flags_format(found, "gpu-node-01")
    assert any(ln.startswith("gpu-node-01: --moe-runner-backend [sm120-moe-flashinfer-trtllm]")
               and "Fix: use --moe-runner-backend flashinfer_cutlass" in ln for ln in lines)
    assert any("SGLANG_ENABLE_SPEC_V2 [removed-env-spec-v2]" in ln for ln in lines)
    report = sglang_flags_report.sglang_flags_report({"b-host": found, "a-host": []})
    assert len(report["errors"]) == 1 and report["errors"][0].startswith("b-host: ")
    assert len(report["warnings"]) == 1


def test_collect_marks_hosts_without_findings():
    hostvars = {"a": {"_x": []}, "b": {}}
    out = sglang_flags_report.sglang_flags_collect(hostvars, ["a", "b"], "_x")
    assert out["a"] == [] and out["b"][0]["rule"] == "not-evaluated"


def test_env_dict_for_the_task_environment():
    assert sglang_flags_env.sglang_flags_env_dict({"A": 1, "B": None, "C": True, "D": False}) == {
        "A": "1", "C": "1", "D": "0"}


def test_env_dict_without_credentials_for_the_parser_run():
    env = {"HF_TOKEN": "hf_x", "WANDB_API_KEY": "k", "OMP_NUM_THREADS": 4, "TOKENIZERS_PARALLELISM": False,
           "SGLANG_CPU_OMP_THREADS_BIND": "0|1"}
    assert sglang_flags_env.sglang_flags_env_dict(env, credentials=False) == {
        "OMP_NUM_THREADS": "4", "TOKENIZERS_PARALLELISM": "0", "SGLANG_CPU_OMP_THREADS_BIND": "0|1"}
    assert sglang_flags_env.sglang_flags_env_dict(env)["HF_TOKEN"] == "hf_x"


def test_no_credential_reaches_a_task_environment_a_result_or_a_backup():
    """host_validate.yml runs the parser with the environment minus credentials (a task's
    environment is on the host's command line and in -vvv output); the server's environment
    fact is composed in a no_log task (a result prints from -v on); its file is not backed up."""
    role = os.path.join(ROOT, "roles", "sglang_server")
    validate = open(os.path.join(ROOT, "roles", "sglang_flags", "tasks", "host_validate.yml"), encoding="utf-8").read()
    assert "sglang_flags_env_dict(credentials=false)" in validate
    render = yaml.safe_load(open(os.path.join(role, "tasks", "render.yml"), encoding="utf-8"))
    composing = [t for t in render if "sglang_server_environment" in (t.get("ansible.builtin.set_fact") or {})]
    assert len(composing) == 1 and composing[0].get("no_log") is True, composing
    files = yaml.safe_load(open(os.path.join(role, "vars", "main.yml"), encoding="utf-8"))["_sglang_server_files"]
    assert [f.get("backup", True) for f in files] == [False, True], files  # the environment file, the unit
    configure = open(os.path.join(role, "tasks", "configure.yml"), encoding="utf-8").read()
    assert 'backup: "{{ item.backup | default(true) }}"' in configure


# ---------------------------------------------------------------------------------------------
# versions, SM, package spec
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lower,higher", [
    ("0.5.9", "0.5.10"),
    ("0.5.23", "0.5.24.dev0+g1234"),
    ("0.5.24.dev0+g1234", "0.5.24a1"),
    ("0.5.24a1", "0.5.24b2"),
    ("0.5.24rc1", "0.5.24"),
    ("0.5.24", "0.5.24.post1"),
    ("0.5.6", "0.5.6.post2"),
    ("0.5.6.post2", "0.5.7"),
    ("0.5.6.post2.dev1", "0.5.6.post2"),
    ("0.5.20", "0.5.20.1"),
    ("0.5", "0.5.0.1"),
    ("1!0.1", "2!0.0"),
])
def test_version_order(lower, higher):
    assert F.sglang_version_compare(lower, higher) == -1
    assert F.sglang_version_compare(higher, lower) == 1


@pytest.mark.parametrize("a,b", [("0.5", "0.5.0"), ("0.5.23", "0.5.23+local"), ("v0.5.23", "0.5.23"),
                                 ("0.5.14-rc1", "0.5.14rc1"), ("0.5.6-1", "0.5.6.post1")])
def test_version_equal(a, b):
    assert F.sglang_version_compare(a, b) == 0


@pytest.mark.parametrize("bad", ["", "latest", "0.5.x", "main"])
def test_version_rejects_garbage(bad):
    with pytest.raises(ValueError):
        sglang_flags_version.version_key(bad)


def test_version_in_range_bounds():
    assert sglang_flags_version.version_in_range("0.5.20", "0.5.20", None)
    assert not sglang_flags_version.version_in_range("0.5.20", None, "0.5.20")
    assert sglang_flags_version.version_in_range("0.5.19.post3", None, "0.5.20")
    assert not sglang_flags_version.version_in_range("0.5.20.dev0", "0.5.20", None)


@pytest.mark.parametrize("spec,want", [
    (["torch==2.14.1", "sglang==0.5.23"], "0.5.23"),
    (["sglang[all]==0.5.6.post2"], "0.5.6.post2"),
    (["sglang===0.5.24.dev0+g1a2b"], "0.5.24.dev0+g1a2b"),
    (["sglang-router==0.3.2", "sglang-kernel==0.4.10"], ""),
    (["sglang>=0.5.20"], ""),
    (["-e python"], ""),
    (["/srv/wheelhouse/sglang-0.5.23-py3-none-any.whl"], "0.5.23"),
    (["sglang @ https://example.invalid/sglang-0.5.24.dev3-py3-none-any.whl"], "0.5.24.dev3"),
    ([], ""),
    (None, ""),
    ("sglang==0.5.23", "0.5.23"),
])
def test_version_from_spec(spec, want):
    assert sglang_flags_requirements.sglang_flags_version_from_spec(spec) == want


def test_version_from_the_local_inventory_spec():
    with open(os.path.join(ROOT, "inventories", "local", "group_vars", "all", "ml_env.yml"), encoding="utf-8") as fh:
        ml_env = yaml.safe_load(fh)
    reqs = ml_env.get("ml_env_packages", []) + ml_env.get("ml_env_packages_nodeps", [])
    assert sglang_flags_requirements.sglang_flags_version_from_spec(reqs) == "0.5.23"


def test_package_names():
    assert sglang_flags_requirements.sglang_flags_package_names(
        ["MSCCLPP==0.7", "flashinfer_python>=0.6", "-e python", "# c", "/w/sgl_kernel-0.4.10-cp311-abi3.whl"]
    ) == ["flashinfer-python", "mscclpp", "sgl-kernel"]


@pytest.mark.parametrize("line,name,pin", [
    ("torch==2.9.0+cu130 --hash=sha256:abc", "torch", "2.9.0+cu130"),  # a lock line (ml_env_lock_requirements)
    ("sglang[all]==0.5.23  # pinned", "sglang", "0.5.23"),
    ("Flashinfer_Cubin===0.6.1", "flashinfer-cubin", "0.6.1"),
    ('sglang==0.5.23; python_version >= "3.10"', "sglang", "0.5.23"),
    ("torch (==2.14.1)", "torch", "2.14.1"),  # a wheel METADATA's Requires-Dist
    ("nvidia-cudnn-cu13>=9.10", "nvidia-cudnn-cu13", ""),
    ("torch==2.*", "torch", ""),
    ("-e python", None, ""), ("--index-url https://x", None, ""), ("# c", None, ""), ("git+https://x/y", None, ""),
])
def test_requirement_lines_are_parsed_by_packaging(line, name, pin):
    parsed = sglang_flags_requirements.parse_requirement(line)
    assert (sglang_flags_requirements.canonical_package(parsed.name) if parsed else None) == name
    assert sglang_flags_requirements.exact_pin(parsed) == pin


@pytest.mark.parametrize("value,want", [
    ("12.0", "12.0"), (12.0, "12.0"), (12, "12.0"), ("sm_120", "12.0"), ("SM120", "12.0"),
    ("120", "12.0"), ("9.0", "9.0"), ("90", "9.0"), ("sm_90", "9.0"), ("12.1", "12.1"),
    ("sm_75", "7.5"), ("", ""), (None, ""),
])
def test_normalize_sm(value, want):
    assert sglang_flags_sm.sglang_flags_normalize_sm(value) == want


def test_every_filter_of_the_collection_is_published_once():
    """Ansible merges the filters of every file of plugins/filter under sglang.deploy.<name>: a
    name published by two files would leave one of them unused."""
    folder = os.path.join(ROOT, "plugins", "filter")
    owners = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        module = importlib.import_module("ansible_collections.sglang.deploy.plugins.filter." + name[:-3])
        for filter_name in module.FilterModule().filters():
            assert filter_name not in owners, f"{filter_name}: {owners.get(filter_name)} and {name}"
            owners[filter_name] = name
    assert owners["sglang_flags_check"] == "filters.py"
    assert owners["sglang_monitoring_hosts"] == "filters.py"

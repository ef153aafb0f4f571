"""Unit tests of the offline input checks (plugins/module_utils/flags/inputs.py),
the flag catalog (flags/catalog.py, files/catalogs/) and scripts/flag_catalog.py.

Every bad input is judged the way tasks/evaluate.yml judges it (input checks, then the rules on the
flags as argparse reads them) and must come out as an error line of the lint report that names the
host, the variable or flag, the rule and the fix."""

import json
import os
import subprocess
import sys
import zipfile

import re

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_flags")
CATALOGS = os.path.join(ROLE, "files", "catalogs")
HOST = "gpu-node-02.example.invalid"




from ansible_collections.sglang.deploy.plugins.module_utils.flags import inputs as I
from ansible_collections.sglang.deploy.plugins.module_utils.flags import catalog as C
from ansible_collections.sglang.deploy.plugins.module_utils.flags import rules as R
from ansible_collections.sglang.deploy.plugins.module_utils.flags import report as REPORT
with open(os.path.join(ROLE, "vars", "main.yml"), encoding="utf-8") as fh:
    RULES = yaml.safe_load(fh)["sglang_flags_rules"]


def _inventory_vars(inventory, group):
    with open(os.path.join(ROOT, "inventories", inventory, "group_vars", group, "sglang.yml"),
              encoding="utf-8") as fh:
        return yaml.safe_load(fh)


PRODUCTION = _inventory_vars("production", "blackwell")
# The shipped profile passes without a finding (its context length is decided: 131072 for
# SGLang issue 34239), so each test judges only the input it changes.
GOOD_ARGS = dict(PRODUCTION["sglang_server_args"])
GOOD_ENV = PRODUCTION["sglang_server_env"]


def judge(args=None, env=None, unit=None, version="0.5.23"):
    """(findings, report) as tasks/evaluate.yml + tasks/lint.yml produce them for HOST."""
    args = dict(GOOD_ARGS) if args is None else args
    env = dict(GOOD_ENV) if env is None else env
    catalog = C.sglang_flags_catalog_of(version)
    findings = I.sglang_flags_inputs(args, env=env, unit=unit or {}, catalog=catalog, rules=RULES,
                                     version=version)
    findings += R.sglang_flags_check(I.sglang_flags_expand(args, catalog), RULES, env=env, sm="12.0",
                                     version=version, gpu_count=8, packages=["sglang"],
                                     errors_as_findings=True)
    return findings, REPORT.sglang_flags_report({HOST: findings})


def refused(report, label, rule, fix, names=()):
    """The one error line for ``label [rule]`` (``rule``: one id or a tuple of them; the label may be
    followed by the part of the value, ``[0]``): names the host, the label, the rule, the fix."""
    rules = "|".join(re.escape(r) for r in ((rule,) if isinstance(rule, str) else rule))
    head = re.compile(re.escape(f"{HOST}: {label}") + r"(\[[^\]]*\])* \[(%s)\] " % rules)
    lines = [e for e in report["errors"] if head.match(e)]
    assert lines, f"no error {label} [{rule}] in {report['errors']}"
    assert f"Fix: {fix}" in lines[0], lines[0]
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def args_with(**flags):
    args = dict(GOOD_ARGS)
    args.update({k.replace("_", "-"): v for k, v in flags.items()})
    return args


# --- what is shipped passes ---------------------------------------------------------------------

@pytest.mark.parametrize("inventory,group", [("production", "blackwell"), ("local", "all")])
def test_shipped_inventories_have_no_input_findings(inventory, group):
    data = _inventory_vars(inventory, group)
    unit = {k: v for k, v in data.items() if k in I.UNIT_INPUTS}
    findings, report = judge(data["sglang_server_args"], data["sglang_server_env"], unit)
    assert report["errors"] == []
    assert [f["rule"] for f in findings] == []


def test_role_defaults_pass():
    with open(os.path.join(ROOT, "roles", "sglang_server", "defaults", "main.yml"), encoding="utf-8") as fh:
        defaults = yaml.safe_load(fh)
    unit = {k: v for k, v in defaults.items() if k in I.UNIT_INPUTS and "{{" not in str(v)}
    assert len(unit) >= 12
    assert I.sglang_flags_inputs({"model-path": "/m"}, unit=unit, catalog=C.sglang_flags_catalog_of("0.5.23")) == []


# --- control characters -------------------------------------------------------------------------

def test_trailing_newline_of_a_yaml_block_in_a_flag_value_is_refused():
    value = yaml.safe_load("v: |\n  qwen3.5-397b\n")["v"]
    assert value == "qwen3.5-397b\n"
    _, report = judge(args_with(served_model_name=value))
    refused(report, "--served-model-name", "input-control-char", "remove it",
            ["sglang_server_args['served-model-name']", r"\n", "ExecStart drops every later flag"])


@pytest.mark.parametrize("char", ["\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\x85"])
def test_any_control_character_in_a_flag_value_or_list_item_is_refused(char):
    _, report = judge(args_with(cuda_graph_bs=[1, f"2{char}"]))
    refused(report, "--cuda-graph-bs", "input-control-char", "remove it")


def test_control_character_in_a_flag_name_is_refused():
    args = dict(GOOD_ARGS, **{"enable-metrics\nExecStartPre": True})
    _, report = judge(args)
    refused(report, "sglang_server_args['enable-metrics\\nExecStartPre'] (name)", "input-control-char",
            "remove it")


def test_control_character_in_an_environment_value_is_refused():
    _, report = judge(env=dict(GOOD_ENV, CUDA_HOME="/usr/local/cuda\nExecStartPre=/bin/x"))
    refused(report, "sglang_server_env['CUDA_HOME']", "input-control-char", "remove it")


# --- the variables sglang_server templates into the unit ----------------------------------------

def test_user_with_an_injected_directive_is_refused():
    _, report = judge(unit={"sglang_server_user": "root\nExecStartPre=/path"})
    refused(report, "sglang_server_user", "input-control-char", "remove it", ["ExecStartPre=/path"])


@pytest.mark.parametrize("user", ["bad user", "-root", "root;x", "a" * 40])
def test_user_that_is_not_a_user_name_is_refused(user):
    _, report = judge(unit={"sglang_server_user": user})
    refused(report, "sglang_server_user", "input-user", "give an existing user name")


def test_an_empty_user_is_refused():
    _, report = judge(unit={"sglang_server_user": ""})
    refused(report, "sglang_server_user", "input-required", "give a value")


@pytest.mark.parametrize("user", ["root", "sglang", "svc_llm-1", "1000"])
def test_user_names_and_uids_pass(user):
    assert judge(unit={"sglang_server_user": user})[0] == []


def test_workdir_with_an_injected_directive_is_refused():
    _, report = judge(unit={"sglang_server_workdir": "/var/lib/sglang\nExecStartPre=/path"})
    refused(report, "sglang_server_workdir", "input-control-char", "remove it")


@pytest.mark.parametrize("name,path,why", [
    ("sglang_server_workdir", "var/lib/sglang", "is not an absolute path"),
    ("sglang_server_config_dir", "/etc/sglang/../../tmp", "has a '..' component"),
    ("sglang_server_python", "/root/ml env/bin/python", "whitespace or '%'"),
    ("sglang_server_workdir", "/var/lib/%h", "whitespace or '%'"),
    ("sglang_server_path", "/usr/bin:bin", "is not an absolute path"),
])
def test_paths_must_be_absolute_without_dotdot(name, path, why):
    _, report = judge(unit={name: path})
    line = refused(report, name, "input-path", "give an absolute path")
    assert why in line


def test_the_readiness_path_is_a_url_path():
    _, report = judge(unit={"sglang_server_ready_path": "health_generate"})
    assert "is not a URL path" in refused(report, "sglang_server_ready_path", "input-url-path", "e.g. /health_generate")


@pytest.mark.parametrize("name", ["../../../x", "sglang/x", ".sglang", "sgl ang", "sglang\n"])
def test_service_name_outside_the_unit_name_pattern_is_refused(name):
    _, report = judge(unit={"sglang_server_service_name": name})
    rule = "input-control-char" if "\n" in name else "input-unit-name"
    refused(report, "sglang_server_service_name", rule, "letters, digits" if "\n" not in name else "remove it")


@pytest.mark.parametrize("name", ["sglang", "sglang-b", "llm@1", "a.b:c_d"])
def test_unit_names_pass(name):
    assert judge(unit={"sglang_server_service_name": name})[0] == []


@pytest.mark.parametrize("value", ["30\nExecStartPre=/x", -1, "soon", True, 1.5])
def test_numeric_unit_values_must_be_integers(value):
    _, report = judge(unit={"sglang_server_timeout_stop_sec": value})
    refused(report, "sglang_server_timeout_stop_sec", ("input-type", "input-range"), "give an integer >= 1")


def test_limit_nofile_zero_is_refused_and_numeric_strings_pass():
    _, report = judge(unit={"sglang_server_limit_nofile": 0})
    refused(report, "sglang_server_limit_nofile", "input-range", "give an integer >= 1024")
    assert judge(unit={"sglang_server_restart_sec": "5"})[0] == []


# every variable of the unit templates: tests/unit/test_unit_inputs_complete.py


# --- environment names --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["FOO=BAR", "FOO\nBAR", "1X", "A-B", ""])
def test_environment_name_outside_the_pattern_is_refused(name):
    _, report = judge(env=dict(GOOD_ENV, **{name: "1"}))
    refused(report, f"sglang_server_env[{name!r}]", "input-env-name", "letters, digits and '_'",
            ["[A-Za-z_][A-Za-z0-9_]*"])


# --- ports and parallel sizes -------------------------------------------------------------------

@pytest.mark.parametrize("flag,value", [("port", -1), ("port", 0), ("port", 99999), ("port", "http"),
                                        ("port", True), ("nccl-port", 70000)])
def test_ports_must_be_1_to_65535(flag, value):
    _, report = judge(args_with(**{flag: value}))
    refused(report, f"--{flag}", "input-port", "give an integer 1-65535", [f"sglang_server_args['{flag}']"])


@pytest.mark.parametrize("port", [1, 65535, "30000"])
def test_ports_in_range_pass(port):
    assert judge(args_with(port=port))[0] == []


@pytest.mark.parametrize("flag,value", [("tp-size", 0), ("tp-size", -8), ("tensor-parallel-size", 0),
                                        ("dp-size", 0), ("ep-size", -1), ("ep", 0), ("pp-size", 0),
                                        ("pipeline-parallel-size", "two"), ("nnodes", 0)])
def test_parallel_sizes_must_be_at_least_1(flag, value):
    args = {k: v for k, v in GOOD_ARGS.items() if k != "tp-size"}
    args[flag] = value
    _, report = judge(args)
    refused(report, f"--{flag}", "input-parallel-size", "give an integer >= 1")


def test_tp_abbreviation_with_zero_is_refused_twice():
    args = {k: v for k, v in GOOD_ARGS.items() if k != "tp-size"}
    args["tp"] = 0
    _, report = judge(args)
    refused(report, "--tp", "input-parallel-size", "give an integer >= 1")
    refused(report, "--tp", "flag-abbreviation", "write it in full: tp-size")


# --- flag names against SGLang's own list -------------------------------------------------------

def test_abbreviation_is_refused_and_the_rules_see_the_full_name():
    args = {k: v for k, v in GOOD_ARGS.items() if k != "moe-runner-backend"}
    args["moe-runner"] = "flashinfer_trtllm"
    _, report = judge(args)
    refused(report, "--moe-runner", "flag-abbreviation", "write it in full: moe-runner-backend",
            ["abbreviation of --moe-runner-backend", "sglang_server_args['moe-runner']"])
    refused(report, "--moe-runner-backend", "sm120-moe-flashinfer-trtllm", "use --moe-runner-backend flashinfer_cutlass")


def test_expand_writes_abbreviations_in_full_and_drops_refused_names():
    catalog = C.sglang_flags_catalog_of("0.5.23")
    args = {"model_path": "/m", "moe-runner": "x", "mamba": 1, "bad name": 1, "enable-metrics": False}
    assert I.sglang_flags_expand(args, catalog) == {"model-path": "/m", "moe-runner-backend": "x", "mamba": 1}
    assert I.sglang_flags_expand({"tp": 2, "tp-size": 2}, catalog) == {"tp": 2, "tp-size": 2}
    assert I.sglang_flags_expand({"moe-runner": "x"}, {}) == {"moe-runner": "x"}


def test_ambiguous_prefix_is_refused_listing_the_candidates():
    _, report = judge(args_with(mamba="extra_buffer"))
    refused(report, "--mamba", "flag-ambiguous", "write the flag you mean in full",
            ["--mamba-radix-cache-strategy", "--mamba-ssm-dtype"])


def test_unknown_flag_is_an_error_naming_the_closest_flags():
    findings, report = judge(args_with(max_runing_requests=4))
    refused(report, "--max-runing-requests", "flag-unknown", "write the flag you mean (e.g. max-running-requests)",
            ["SGLang 0.5.23 has no flag --max-runing-requests", "unrecognized arguments",
             "the closest flags it has: --max-running-requests", "sglang_flags_extra_known_flags"])
    assert report["warnings"] == []


def test_an_extra_known_flag_passes_the_name_checks_and_keeps_its_value_checks():
    catalog = C.sglang_flags_catalog_extend(C.sglang_flags_catalog_of("0.5.23"), ["site-numa-pin"])
    findings = I.sglang_flags_inputs(args_with(site_numa_pin="0-15"), env=GOOD_ENV, catalog=catalog, rules=RULES,
                                     version="0.5.23")
    assert findings == []
    findings = I.sglang_flags_inputs(args_with(site_numa_pin="--api-key"), env=GOOD_ENV, catalog=catalog,
                                     rules=RULES, version="0.5.23")
    assert {f["rule"] for f in findings} == {"input-dash-value"}
    # a typo of it is still unknown, and named after it
    findings = I.sglang_flags_inputs(args_with(site_numa_pn="0-15"), env=GOOD_ENV, catalog=catalog, rules=RULES,
                                     version="0.5.23")
    assert [f["rule"] for f in findings] == ["flag-unknown"]
    assert "--site-numa-pin" in findings[0]["message"]


def test_removed_flag_is_left_to_its_rename_rule():
    findings, report = judge(args_with(mamba_scheduler_strategy="extra_buffer"))
    assert "flag-unknown" not in {f["rule"] for f in findings}
    refused(report, "--mamba-scheduler-strategy", "removed-mamba-scheduler-strategy",
            "write mamba-radix-cache-strategy")


def test_two_spellings_of_one_option_are_refused():
    _, report = judge(args_with(tensor_parallel_size=8))
    refused(report, "--tp-size", "flag-duplicate", "keep one of them", ["--tensor-parallel-size", "tp_size"])


def test_value_outside_literal_choices_is_refused():
    _, report = judge(args_with(attention_backend="fa5"))
    refused(report, "--attention-backend", "flag-choice", "use one of: ", ["'fa5'", "triton"])


def test_without_a_catalog_names_are_not_checked_and_a_warning_says_so():
    args = args_with(moe_runner="flashinfer_cutlass", max_runing_requests=4)
    findings, report = judge(args, version="0.5.99")
    assert not {"flag-abbreviation", "flag-unknown"} & {f["rule"] for f in findings}
    assert report["errors"] == []
    assert any("[flag-catalog-missing]" in w and "0.5.23" in w and "no exact flag catalog exists" in w
               and "could not be refused" in w for w in report["warnings"])
    assert C.sglang_flags_catalog_of("") == {} and C.sglang_flags_catalog_of(None) == {}
    assert C.sglang_flags_catalog_of("0.5.23+g1a2b")["sglang"] == "0.5.23"


def test_not_a_mapping_is_one_finding():
    findings = I.sglang_flags_inputs(["--tp", "8"])
    assert [f["rule"] for f in findings] == ["input-flag-name"]


# --- the catalog and the script that writes it --------------------------------------------------

def test_committed_catalog_is_sorted_and_says_how_it_was_made():
    path = os.path.join(CATALOGS, "sglang-0.5.23.json")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    data = json.loads(text)
    assert data["sglang"] == "0.5.23" and "scripts/flag_catalog.py" in data["generated_by"]
    names = list(data["options"])
    assert names == sorted(names) and len(names) > 500
    assert data["options"]["--tensor-parallel-size"]["dest"] == "tp_size"
    assert "flashinfer_cutlass" in data["options"]["--moe-runner-backend"]["choices"]
    assert "--tp" not in data["options"] and "--mamba-scheduler-strategy" not in data["options"]
    assert C.resolve("tp", data) == ("abbreviation", ["tp-size"])


FAKE_FIELDS = '''
from typing import Literal, Optional
from sglang.srt.arg_groups.arg_utils import A, Arg
from sglang.srt.arg_groups.choices import BACKENDS

class Parallel(msgspec.Struct):
    _NS_PATH = "parallel"
    tp_size: A[int, Arg(help="tp", aliases=["--tensor-parallel-size"])] = 1
    hidden: A[bool, Arg(no_cli=True)] = False
    mode: A[Optional[Literal["a", "b"]], "mode"] = None
    backend: A[str, Arg(help="b", choices=BACKENDS + ["extra"])] = "x"
    gemm: A[str, Arg(help="g", cli_name="--gemm-backend", choices=compute())] = "x"
    plain: int = 3
'''
FAKE_SERVER_ARGS = '''
from sglang.srt.arg_groups.fields.parallel import (Parallel,)

class ServerArgs:
    @staticmethod
    def add_cli_args(parser):
        add_cli_args_from_dataclass(parser, ServerArgs)
        parser.add_argument("--config", type=str)
        parser.add_argument("--monokernel-backend", dest="enable_amd_monokernel", choices=["amd"])

_INPUT_NAMESPACES = [Parallel]
'''


def test_flag_catalog_script_reads_a_wheel_statically(tmp_path):
    wheel = tmp_path / "sglang-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("sglang-9.9.9.dist-info/METADATA", "Name: sglang\nVersion: 9.9.9\n")
        zf.writestr("sglang/srt/server_args.py", FAKE_SERVER_ARGS)
        zf.writestr("sglang/srt/arg_groups/fields/parallel.py", FAKE_FIELDS)
        zf.writestr("sglang/srt/arg_groups/choices.py", 'BACKENDS = ["z", "y"]\n')
    out = tmp_path / "catalog.json"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "flag_catalog.py"), str(wheel),
                           "-o", str(out)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["sglang"] == "9.9.9"
    assert data["options"] == {
        "--backend": {"choices": ["extra", "y", "z"], "default": "x", "dest": "backend"},
        "--config": {"dest": "config"},
        "--gemm-backend": {"default": "x", "dest": "gemm"},
        "--mode": {"choices": ["a", "b"], "default": None, "dest": "mode"},
        "--monokernel-backend": {"choices": ["amd"], "dest": "enable_amd_monokernel"},
        "--tensor-parallel-size": {"default": 1, "dest": "tp_size"},
        "--tp-size": {"default": 1, "dest": "tp_size"},
    }

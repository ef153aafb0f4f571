"""roles/sglang_flags/files/sglang_preflight.py and tasks/host_validate.yml with the real
SGLang 0.5.23 that deploy.yml installed on the Molecule host (/root/ml-env, CPU).

The Qwen3.5 resolution path uses tests/fixtures/flags/qwen3.5-397b-a17b-nvfp4/config.json
(the resolver needs only config.json), copied into the host, with SGLang's GPU probes
simulated as SM120.
"""

import json
import os
import subprocess
import sys
import time

import pytest
import yaml
from ansible_collections.sglang.deploy.plugins.module_utils.flags import rules as rules_filter

testinfra_hosts = ["molecule-sglang-1"]
HOST = "molecule-sglang-1"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(ROOT, "roles", "sglang_flags", "files", "sglang_preflight.py")
LAYOUT = os.path.join(ROOT, "plugins", "module_utils", "flags", "parallel_layout.py")
QWEN35_LOCAL = os.path.join(ROOT, "tests", "fixtures", "flags", "qwen3.5-397b-a17b-nvfp4")
QWEN35 = "/tmp/preflight/qwen3.5-397b-a17b-nvfp4"
with open(os.path.join(ROOT, "inventories", "local", "group_vars", "all", "sglang.yml"), encoding="utf-8") as _fh:
    TINY = yaml.safe_load(_fh)["sglang_server_args"]["model-path"]  # the tiny model's revision directory
PYTHON = "/root/ml-env/bin/python"
PLAYBOOK = os.path.join(os.path.dirname(__file__), "..", "host_validate.yml")
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


@pytest.fixture(scope="module", autouse=True)
def _fixtures_on_host():
    subprocess.run(["docker", "exec", HOST, "mkdir", "-p", "/tmp/preflight"], check=True)
    subprocess.run(["docker", "cp", QWEN35_LOCAL, f"{HOST}:/tmp/preflight/"], check=True)
    subprocess.run(["docker", "cp", SCRIPT, f"{HOST}:/tmp/preflight/sglang_preflight.py"], check=True)


# The production profile's hand-tuned launch (docs/blackwell-profile.md): rejected by 0.5.23
# (the renamed mamba flag); FIXED is the profile as deployed.
HAND_TUNED = [
    "--model-path", QWEN35, "--served-model-name", "qwen3.5-397b", "--tp", "8",
    "--trust-remote-code", "--quantization", "modelopt_fp4", "--host", "0.0.0.0",
    "--attention-backend", "triton", "--moe-runner-backend", "flashinfer_cutlass",
    "--fp4-gemm-backend", "flashinfer_cudnn", "--reasoning-parser", "qwen3",
    "--tool-call-parser", "qwen3_coder", "--speculative-algorithm", "NEXTN",
    "--speculative-num-draft-tokens", "2", "--speculative-eagle-topk", "1",
    "--mamba-scheduler-strategy", "extra_buffer",
]
FIXED = HAND_TUNED[:-2] + ["--speculative-num-steps", "1", "--mamba-radix-cache-strategy", "extra_buffer"]
NO_STEPS = HAND_TUNED[:-2]
TINY_CPU = ["--model-path", TINY, "--device", "cpu", "--attention-backend", "torch_native",
            "--sampling-backend", "pytorch", "--grammar-backend", "none",
            "--max-total-tokens", "16384", "--enable-metrics"]


def _rules():
    """The rules table (roles/sglang_flags/vars/main.yml) in the host-scope form the preflight
    takes, made by the rules filter itself."""
    role = os.path.join(ROOT, "roles", "sglang_flags")
    with open(os.path.join(role, "vars", "main.yml"), encoding="utf-8") as fh:
        return rules_filter.sglang_flags_host_rules(yaml.safe_load(fh)["sglang_flags_rules"])


def preflight(argv, env=None, **request):
    """The script run as host_validate.yml runs it: the rules, the argv and the GPU count's one
    owner (plugins/module_utils/flags/parallel_layout.py) by its text; ``env``: the server's
    environment variables it runs with."""
    with open(LAYOUT, encoding="utf-8") as fh:
        req = dict(_rules(), argv=argv, layout_source=fh.read(), **request)
    t0 = time.monotonic()
    env_args = [a for k, v in (env or {}).items() for a in ("-e", f"{k}={v}")]
    proc = subprocess.run(["docker", "exec", "-i", *env_args, HOST, PYTHON, "/tmp/preflight/sglang_preflight.py"],
                          input=json.dumps(req), capture_output=True, text=True, timeout=300, check=False)
    wall = time.monotonic() - t0
    print(proc.stderr[-3000:])
    verdict = json.loads(proc.stdout)
    print(json.dumps(verdict, indent=1), f"wall {wall:.1f} s")
    return proc.returncode, verdict


def rules_of(verdict):
    return {e["rule"]: e for e in verdict["errors"]}


def test_misspelt_flag_fails_with_argparse_message():
    rc, v = preflight(TINY_CPU[:-1] + ["--enable-metrix"])
    assert rc == 1 and not v["ok"] and v["phase"] == "parse"
    assert "unrecognized arguments: --enable-metrix" in rules_of(v)["sglang-argparse"]["message"]


def test_hand_tuned_command_fails_naming_the_rename():
    rc, v = preflight(HAND_TUNED, simulate_sm="12.0")
    assert rc == 1 and v["phase"] == "parse"
    errs = rules_of(v)
    assert "unrecognized arguments: --mamba-scheduler-strategy extra_buffer" in errs["sglang-argparse"]["message"]
    rename = errs["removed-mamba-scheduler-strategy"]
    assert "--mamba-radix-cache-strategy" in rename["message"] + rename["fix"]
    assert "0.5.23" in rename["message"] and "{" not in rename["message"]


def test_draft_tokens_without_num_steps_fail_in_the_resolver():
    rc, v = preflight(NO_STEPS, simulate_sm="12.0")
    assert rc == 1 and v["phase"] == "resolve"
    msg = rules_of(v)["sglang-resolve"]["message"]
    assert "AssertionError" in msg and "speculative_hook.py" in msg and "speculative_num_draft_tokens" in msg


def test_corrected_command_passes_in_sm120_simulation():
    rc, v = preflight(FIXED, simulate_sm="12.0")
    assert rc == 0 and v["ok"] and v["phase"] == "done", v["errors"]
    r = v["resolved"]
    assert r["moe_runner_backend"] == "flashinfer_cutlass"
    assert r["fp4_gemm_runner_backend"] == "flashinfer_cudnn"
    assert r["speculative_algorithm"] == "EAGLE"  # NEXTN is an alias
    assert (r["speculative_num_steps"], r["speculative_eagle_topk"], r["speculative_num_draft_tokens"]) == (1, 1, 2)
    assert r["mamba_radix_cache_strategy"] == "extra_buffer"
    assert any("Max running requests is reset to 48" in w["message"] for w in v["warnings"])
    # a figure, not a gate: the scenario shares the 2 cores with another one (`make test`)
    print(f"preflight total {v['timings']['total']} s (import {v['timings']['import']} s)")


def test_host_rules_model_mscclpp_and_gpu_count():
    absent = "/tmp/preflight/absent"
    argv = ["--model-path", absent, "--enable-mscclpp", "--tp-size", "16"]
    rc, v = preflight(argv, gpu_count=8)
    assert rc == 1 and v["phase"] == "host"
    errs = rules_of(v)
    assert set(errs) == {"host-model-path-missing", "host-mscclpp-not-importable",
                         "host-tp-exceeds-gpu-count"}
    assert absent in errs["host-model-path-missing"]["message"]
    assert "16 GPUs" in errs["host-tp-exceeds-gpu-count"]["message"]


def test_cpu_ranks_past_the_numa_nodes_need_a_core_group_each():
    """host-cpu-ranks-exceed-numa-nodes with SGLang's own node count on the host: one rank more
    than the host has nodes is refused, then accepted with a core group per rank."""
    nodes = int(subprocess.run(["docker", "exec", HOST, "sh", "-c", "ls -d /sys/devices/system/node/node[0-9]* | wc -l"],
                               capture_output=True, text=True, timeout=60, check=True).stdout)
    ranks = nodes + 1
    rc, v = preflight(TINY_CPU + ["--dp-size", str(ranks)])
    assert rc == 1 and not v["ok"], v
    assert [e["rule"] for e in v["errors"]] == ["host-cpu-ranks-exceed-numa-nodes"], v["errors"]
    message = rules_of(v)["host-cpu-ranks-exceed-numa-nodes"]["message"]
    assert f"dp-size {ranks} x tp-size 1 x pp-size 1 = {ranks} ranks" in message and f"this host has {nodes}:" in message
    rc, v = preflight(TINY_CPU + ["--dp-size", str(ranks)], env={"SGLANG_CPU_OMP_THREADS_BIND": "|".join(["0"] * ranks)})
    assert rc == 0 and v["ok"], v["errors"]


def test_waived_host_rule_is_a_warning():
    rc, v = preflight(TINY_CPU + ["--enable-mscclpp"], waive=["host-mscclpp-not-importable"])
    assert rc == 0 and v["ok"], v["errors"]
    assert any(w["rule"] == "host-mscclpp-not-importable" for w in v["warnings"])


def test_bad_request_is_exit_2():
    proc = subprocess.run(["docker", "exec", "-i", HOST, PYTHON, "/tmp/preflight/sglang_preflight.py"],
                          input="not json", capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["errors"][0]["rule"] == "input"


# --- through Ansible: tasks/host_validate.yml on the Molecule host ---------------------------
def run_host_validate(tmp_path, argv, *extra):
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(json.dumps({
        "sglang_flags_python": PYTHON,
        "sglang_flags_candidate_argv": argv,
        "sglang_flags_simulate_sm": "12.0",
    }), encoding="utf-8")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_ROLES_PATH=os.path.join(ROOT, "roles"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"))
    t0 = time.monotonic()
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", os.environ["MOLECULE_INVENTORY_FILE"], "-l", HOST,
                           PLAYBOOK, "-e", f"@{vars_file}", *extra], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    wall = time.monotonic() - t0
    out = proc.stdout + proc.stderr
    print(out, f"\nansible-playbook wall {wall:.1f} s")
    return proc.returncode, " ".join(out.replace("''", "'").split()), wall


def test_host_validate_rejects_the_hand_tuned_command_in_check_mode_without_changes(tmp_path):
    rc, out, _ = run_host_validate(tmp_path, HAND_TUNED, "--check")
    assert rc != 0
    assert "the installed SGLang rejects the new flag set; the running server is untouched" in out
    assert "unrecognized arguments: --mamba-scheduler-strategy extra_buffer" in out
    assert "[removed-mamba-scheduler-strategy]" in out
    assert "changed=0" in out


def test_host_validate_accepts_the_corrected_command_unchanged(tmp_path):
    rc, out, wall = run_host_validate(tmp_path, FIXED)
    assert rc == 0, out
    assert "ok=" in out and "changed=0" in out and "failed=0" in out
    assert "judged the flags in" in out
    print(f"host_validate (script + tasks) wall {wall:.1f} s")  # a figure, not a gate (above)

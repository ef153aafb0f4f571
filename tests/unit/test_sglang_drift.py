"""scripts/sglang_drift.py (`make drift`) with the committed catalogs only: a copy of the inventories
whose production profile declares an older SGLang is judged against the 0.5.23 catalog as the
"newest"; the report names the removed flags with their replacement, the defaults that changed
for flags the profile leaves unset and the pins that would move, and the exit status says
whether production breaks. No network: `--newest-catalog` instead of a download."""

import os
import shutil

import pytest
import yaml
from ansible_collections.sglang.deploy.scripts import sglang_drift as S

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CATALOG_0523 = os.path.join(ROOT, "roles", "sglang_flags", "files", "catalogs", "sglang-0.5.23.json")


@pytest.fixture(name="root")
def fixture_root(tmp_path):
    shutil.copytree(os.path.join(ROOT, "inventories"), tmp_path / "inventories",
                    ignore=shutil.ignore_patterns("locks"))
    return tmp_path


def edit(root, rel, old, new):
    path = root / "inventories" / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_every_inventory_profile_is_found():
    found = dict(S.profiles(ROOT))
    assert {"production/blackwell", "local/local_cpu"} <= set(found)
    assert found["production/blackwell"]["gpu_host_expected_sm"] == "12.0"
    assert found["local/local_cpu"]["ml_env_packages_nodeps"] == ["sglang==0.5.23"]


def test_the_shipped_profiles_do_not_drift_from_0_5_23(capsys):
    assert S.main([ROOT, "--newest-catalog", CATALOG_0523]) == 0
    out = capsys.readouterr().out
    assert "== production/blackwell: declares sglang 0.5.23, newest 0.5.23\n" in out
    assert "drift: no profile of production breaks" in out


def test_an_older_production_profile_breaks_on_the_newest(root, capsys):
    edit(root, "production/group_vars/blackwell/ml_env.yml", "sglang==0.5.23", "sglang==0.5.19")
    edit(root, "production/group_vars/blackwell/ml_env.yml", "torch==2.14.1", "torch==2.13.0")
    edit(root, "production/group_vars/blackwell/sglang.yml", "  tp-size: 8\n",
         "  tp-size: 8\n  cuda-graph-max-bs: 16\n  stream-output: true\n")
    assert S.main([str(root), "--newest-catalog", CATALOG_0523]) == 1
    out = capsys.readouterr().out
    assert "== production/blackwell: declares sglang 0.5.19, newest 0.5.23 (BREAKS)" in out
    assert "--cuda-graph-max-bs [flag-removed]" in out and "use --cuda-graph-max-bs-decode instead" in out
    assert "--stream-output [flag-removed]" in out and "use --incremental-streaming-output instead" in out
    assert "default --swa-full-tokens-ratio: 0.8 -> null (not set by the profile)" in out
    assert "pin sglang: ==0.5.19 -> ==0.5.23" in out and "pin torch: ==2.13.0 -> ==2.14.1" in out
    assert "pin sglang-kernel: ==0.4.6.post1 (sglang's pin) -> ==0.4.10" in out
    assert "drift: the production profile would break on 0.5.23" in out


def test_a_local_profile_that_breaks_does_not_fail_the_run(root, capsys):
    edit(root, "local/group_vars/all/sglang.yml", "sglang_server_args:\n",
         "sglang_server_args:\n  nsa-prefill-backend: fa3\n")
    assert S.main([str(root), "--newest-catalog", CATALOG_0523]) == 0
    assert "--nsa-prefill-backend [flag-removed]" in capsys.readouterr().out


def test_defaults_of_flags_the_profile_sets_are_not_reported():
    old = S.C.sglang_flags_catalog_of("0.5.19")
    new = S.C.sglang_flags_catalog_of("0.5.23")
    changed = {o for o, _, _ in S.default_changes({}, old, new)}
    assert "--swa-full-tokens-ratio" in changed
    assert "--swa-full-tokens-ratio" not in {o for o, _, _ in S.default_changes({"swa-full-tokens-ratio": 0.5}, old, new)}
    assert not any(o.startswith("--no-") for o in changed)


def test_pins_that_follow_flashinfer_python_move_with_it():
    prof = {"ml_env_packages": ["flashinfer-python==0.7.1", "flashinfer-cubin==0.7.1", "sglang==0.5.22"]}
    moves = S.pin_moves(prof, "0.5.22", "0.5.23", {"flashinfer-python": "==0.7.1"}, {"flashinfer-python": "==0.7.2"})
    assert ("flashinfer-python", "==0.7.1", "==0.7.2") in moves
    assert ("flashinfer-cubin", "==0.7.1", "==0.7.2 (matches flashinfer-python)") in moves
    # sglang installed --no-deps: its own pins do not reach the environment
    assert S.pin_moves({"ml_env_packages_nodeps": ["sglang==0.5.23"]}, "0.5.23", "0.5.23",
                       {"torch": "==2.13.0"}, {"torch": "==2.14.1"}) == []


def test_the_makefile_target_runs_the_script():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as fh:
        text = fh.read()
    assert "\ndrift:\n\t$(BIN)/python scripts/sglang_drift.py $(DRIFT_ARGS)\n" in text
    with open(os.path.join(ROOT, "inventories", "production", "group_vars", "blackwell", "ml_env.yml"),
              encoding="utf-8") as fh:
        assert yaml.safe_load(fh)["ml_env_index_url"]  # the index the download asks


# --- retired flags the repository still names (scripts/sglang_drift_mentions.py) ---------------

from ansible_collections.sglang.deploy.scripts import sglang_drift_mentions as MENTIONS  # noqa: E402

# deprecated with a replacement in 0.5.19 and gone from 0.5.20 on: the batch SGLang PR 38375
# (merged 2026-09-07) cleared, as the committed catalogs show it
CLEARED_IN_0_5_20 = {
    "cuda-graph-bs": "--cuda-graph-bs-decode", "cuda-graph-max-bs": "--cuda-graph-max-bs-decode",
    "disable-piecewise-cuda-graph": "--cuda-graph-backend-prefill=disabled",
    "enable-breakable-cuda-graph": "--cuda-graph-backend-prefill=breakable",
    "enforce-piecewise-cuda-graph": "--cuda-graph-backend-prefill=tc_piecewise",
    "piecewise-cuda-graph-compiler": "--cuda-graph-tc-compiler",
    "piecewise-cuda-graph-max-tokens": "--cuda-graph-max-bs-prefill",
    "piecewise-cuda-graph-tokens": "--cuda-graph-bs-prefill",
    "dsa-prefill-cp-mode": "--cp-strategy", "nsa-prefill-cp-mode": "--cp-strategy", "prefill-cp-mode": "--cp-strategy",
    "enable-dsa-prefill-context-parallel": "--enable-prefill-cp",
    "enable-nsa-prefill-context-parallel": "--enable-prefill-cp",
    "enable-prefill-context-parallel": "--enable-prefill-cp",
    "enable-gdn-replayssm-spec": "--enable-linear-replayssm-spec",
    "nsa-decode-backend": "--dsa-decode-backend", "nsa-prefill-backend": "--dsa-prefill-backend",
    "mamba-scheduler-strategy": "--mamba-radix-cache-strategy",
    "speculative-dflash-draft-window-size": "--speculative-draft-window-size",
    "stream-output": "--incremental-streaming-output",
}


def test_the_catalogs_show_which_deprecated_flags_are_gone_and_which_are_next():
    flags = MENTIONS.retired_flags("0.5.23")
    gone_in_0_5_20 = {f: m["replacement"] for f, m in flags.items()
                      if m["status"] == "retired" and m["gone"] == "0.5.20" and m["replacement"].startswith("--")}
    assert gone_in_0_5_20 == CLEARED_IN_0_5_20
    # still accepted by 0.5.23 with a deprecation: the next batch
    deprecated = {f: m["replacement"] for f, m in flags.items() if m["status"] == "deprecated"}
    assert deprecated["disable-cuda-graph"] == "--cuda-graph-backend-{decode,prefill}=disabled"
    assert deprecated["enable-dp-attention"] == "--attn-dp-size <dp-size>"
    assert {"enable-flashinfer-allreduce-fusion", "grpc-mode", "disable-fast-image-processor"} <= set(deprecated)
    # a replacement the wheels do not name comes from sglang_flags_removed_flags
    removed = S._rules()[1]
    assert MENTIONS.retired_flags("0.5.23", removed)["collect-tokens-histogram"]["replacement"] == "--enable-metrics"


def test_drift_names_every_retired_flag_the_repository_mentions_with_its_replacement(root, capsys):
    (root / "docs").mkdir()
    (root / "docs" / "howto.md").write_text(
        "Lower the graphs with `--cuda-graph-max-bs 16`.\nThe cuda-graph-max-bs-decode form is fine.\n"
        "Say --disable-cuda-graph to debug.\n", encoding="utf-8")
    (root / "sweeps").mkdir()
    (root / "sweeps" / "old.yml").write_text("candidates:\n  - stream-output: true\n", encoding="utf-8")
    assert S.main([str(root), "--newest-catalog", CATALOG_0523]) == 0  # a mention does not break production
    out = capsys.readouterr().out
    assert "--cuda-graph-max-bs: gone since 0.5.20 (last in 0.5.19); use --cuda-graph-max-bs-decode. " \
           "Named in docs/howto.md:1\n" in out
    assert "--stream-output: gone since 0.5.20 (last in 0.5.19); use --incremental-streaming-output. " \
           "Named in sweeps/old.yml:2\n" in out
    assert "--disable-cuda-graph: deprecated in 0.5.23, due for removal; use " \
           "--cuda-graph-backend-{decode,prefill}=disabled. Named in docs/howto.md:3\n" in out


def test_a_bare_name_counts_only_as_a_key_and_the_tests_are_not_read(tmp_path):
    (tmp_path / "a.md").write_text("stream-output in prose\nstream-output: true\n", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text("'--stream-output'\n", encoding="utf-8")
    assert MENTIONS.mentions(str(tmp_path), ["stream-output"]) == {"stream-output": ["a.md:2"]}

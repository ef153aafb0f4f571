"""The committed flag catalogs (roles/sglang_flags/files/catalogs/, written by scripts/flag_catalog.py
from the sglang wheels of 0.5.17 to 0.5.23) and what the lint makes of a flag name with them
(flags/catalog.py): removed flags with their replacement, flags too new for the declared
version, deprecated spellings, ambiguous prefixes, three-state flags. Each case is a fact of the
version history that docs/sglang-versions.md describes."""

import json
import os
import subprocess
import sys
import zipfile

import pytest
import yaml
from packaging.version import Version

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_flags")
CATALOGS = os.path.join(ROLE, "files", "catalogs")
VERSIONS = ["0.5.17", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"]




from ansible_collections.sglang.deploy.plugins.module_utils.flags import catalog as C
from ansible_collections.sglang.deploy.plugins.module_utils.flags import inputs as I
from ansible_collections.sglang.deploy.plugins.module_utils.flags import version as V
with open(os.path.join(ROLE, "vars", "main.yml"), encoding="utf-8") as fh:
    VARS = yaml.safe_load(fh)
REMOVED = VARS["sglang_flags_removed_flags"]


def catalog(version):
    return C.sglang_flags_catalog_of(version, REMOVED)


def names(flag, version):
    """{rule: finding} of the name checks of one flag on one version."""
    return {f["rule"]: f for f in C.name_findings(flag, "x", catalog(version))}


def options(version):
    return catalog(version)["options"]


def test_one_catalog_per_version_oldest_first_with_pins():
    assert C.catalog_versions() == VERSIONS
    for v in VERSIONS:
        with open(os.path.join(CATALOGS, f"sglang-{v}.json"), encoding="utf-8") as fh:
            data = json.load(fh)
        assert data["sglang"] == v and "scripts/flag_catalog.py" in data["generated_by"]
        assert list(data["options"]) == sorted(data["options"])
        assert set(data["requires"]) >= {"torch", "flashinfer-python", "sglang-kernel"}
    assert catalog("0.5.23")["requires"]["torch"] == "==2.14.1"
    assert catalog("0.5.17")["requires"]["flashinfer-python"] == "==0.6.15.post1"


def test_versions_are_ordered_by_packaging():
    assert isinstance(V.version_key("0.5.23"), Version)
    assert V.public_version("v0.5.23+g1a2b") == "0.5.23"
    assert C.sglang_flags_catalog_of("0.5.23+g1a2b")["sglang"] == "0.5.23"


def test_0_5_20_removed_the_flags_0_5_19_had_deprecated():
    gone = sorted(set(options("0.5.19")) - set(options("0.5.20")))
    assert len(gone) == 23
    for flag in ("--cuda-graph-max-bs", "--cuda-graph-bs", "--mamba-scheduler-strategy",
                 "--piecewise-cuda-graph-max-tokens", "--piecewise-cuda-graph-tokens",
                 "--piecewise-cuda-graph-compiler", "--disable-piecewise-cuda-graph",
                 "--enforce-piecewise-cuda-graph", "--enable-breakable-cuda-graph", "--stream-output",
                 "--collect-tokens-histogram", "--enable-gdn-replayssm-spec", "--nsa-prefill-backend",
                 "--nsa-decode-backend"):
        assert flag in gone, flag
    hist = catalog("0.5.20")["history"]
    assert hist["nsa-decode-backend"]["replacement"] == "--dsa-decode-backend"
    assert hist["stream-output"]["replacement"] == "--incremental-streaming-output"
    assert hist["mamba-scheduler-strategy"] == dict(hist["mamba-scheduler-strategy"], last="0.5.19", gone="0.5.20")


def test_cuda_graph_max_bs_deprecated_alias_then_ambiguous_prefix():
    dep = names("cuda-graph-max-bs", "0.5.19")["flag-deprecated"]
    assert dep["severity"] == "warning" and dep["fix"] == "use --cuda-graph-max-bs-decode instead"
    for version in ("0.5.20", "0.5.23"):
        found = names("cuda-graph-max-bs", version)
        assert list(found) == ["flag-removed"]
        f = found["flag-removed"]
        assert f["severity"] == "error" and "gone in 0.5.20" in f["message"]
        assert "ambiguous prefix of --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill" in f["message"]
        assert f["fix"].startswith("use --cuda-graph-max-bs-decode instead")


@pytest.mark.parametrize("version", VERSIONS)
def test_pp_is_ambiguous_in_every_version(version):
    f = names("pp", version)["flag-ambiguous"]
    assert "--pp-size" in f["message"] and "--pp-max-micro-batch-size" in f["message"]


def test_0_5_22_deprecates_enable_dp_attention_and_adds_attn_dp_size():
    assert options("0.5.22")["--enable-dp-attention"]["deprecated"].startswith("--attn-dp-size")
    assert "deprecated" not in options("0.5.21")["--enable-dp-attention"]
    too_new = names("attn-dp-size", "0.5.21")["flag-too-new"]
    assert too_new["severity"] == "error" and "first appears in SGLang 0.5.22" in too_new["message"]
    assert names("attn-dp-size", "0.5.22") == {}


def test_removed_flag_without_replacement_names_the_hand_kept_note():
    f = names("cuda-graph-tc-compiler", "0.5.22")["flag-removed"]
    assert "last in 0.5.21, gone in 0.5.22" in f["message"]
    assert f["fix"].startswith("remove it: SGLang has no replacement (it configured the torch.compile")
    assert f["source"] == "docs/sglang-versions.md#removed-flags"
    skip = names("speculative-skip-dp-mlp-sync", "0.5.23")["flag-removed"]
    assert "last in 0.5.22, gone in 0.5.23" in skip["message"]


def test_a_replacement_that_is_gone_too_is_followed():
    fix = names("piecewise-cuda-graph-compiler", "0.5.23")["flag-removed"]["fix"]
    assert fix.startswith("use --cuda-graph-tc-compiler instead")
    assert "cuda-graph-tc-compiler itself is gone since 0.5.22: remove it" in fix


def test_every_hand_kept_replacement_is_a_removed_flag():
    for flag in REMOVED:
        assert catalog("0.5.23")["history"][flag]["status"] == "removed", flag


def test_0_5_23_enable_hicache_is_an_alias_and_three_state_flags_have_no_forms():
    opts = options("0.5.23")
    assert opts["--enable-hicache"]["dest"] == opts["--enable-hierarchical-cache"]["dest"]
    assert "--enable-hicache" not in options("0.5.22")
    dup = C.duplicate_findings({"enable-hicache": "enable-hicache",
                                "enable-hierarchical-cache": "enable-hierarchical-cache"}, catalog("0.5.23"))
    assert [f["rule"] for f in dup] == ["flag-duplicate"]
    new_three_state = {o for o in opts if o.startswith("--no-")} - set(options("0.5.22"))
    assert new_three_state == {"--no-enable-decoder-swa-bounded-replay", "--no-enable-fused-qk-norm-rope",
                               "--no-enable-tf32-matmul", "--no-mm-enable-dp-encoder"}
    assert opts["--no-enable-tf32-matmul"]["dest"] == "enable_tf32_matmul"
    assert names("no-enable-tf32-matmul", "0.5.23") == {}
    assert "flag-too-new" in names("no-enable-tf32-matmul", "0.5.22")


def test_admin_api_key_and_model_checksum_are_in_every_catalog():
    """The issue said 0.5.23 added them; every wheel from 0.5.17 on already has both."""
    for v in VERSIONS:
        assert {"--admin-api-key", "--model-checksum"} <= set(options(v)), v


def test_literal_defaults_are_recorded():
    assert options("0.5.23")["--fp4-gemm-backend"]["default"] == "auto"
    assert options("0.5.23")["--enable-tf32-matmul"]["default"] is None
    assert options("0.5.22")["--enable-tf32-matmul"]["default"] is False
    assert options("0.5.23")["--reasoning-parser"]["default"] is None  # _declared_default("...")


def test_refused_spelling_is_an_error_with_sglangs_message():
    f = names("enable-expert-distribution-metrics", "0.5.19")["flag-refused"]
    assert f["severity"] == "error" and "--expert-balancedness-report-mode" in f["message"]


def test_removed_flags_go_through_the_input_checks():
    findings = I.sglang_flags_inputs({"model-path": "/m", "stream-output": True}, catalog=catalog("0.5.20"),
                                     rules=VARS["sglang_flags_rules"], version="0.5.20")
    assert [(f["rule"], f["flag"]) for f in findings] == [("flag-removed", "stream-output")]
    # a flag that a rule of the table renames is that rule's
    findings = I.sglang_flags_inputs({"model-path": "/m", "mamba-scheduler-strategy": "extra_buffer"},
                                     catalog=catalog("0.5.20"), rules=VARS["sglang_flags_rules"], version="0.5.20")
    assert findings == []


@pytest.mark.parametrize("version", VERSIONS)
def test_an_unknown_name_is_an_error_on_every_cataloged_version(version):
    f = names("max-runing-requests", version)["flag-unknown"]
    assert f["severity"] == "error"
    assert "--max-running-requests" in f["message"] and "max-running-requests" in f["fix"]
    assert C.close_flags("max-runing-requests", catalog(version))[0] == "max-running-requests"
    # nothing near: the fix says where the names are
    f = names("zzzzqqqq", version)["flag-unknown"]
    assert "closest" not in f["message"] and "launch_server --help" in f["fix"]


def test_extra_known_flags_join_an_exact_catalog_only():
    extended = C.sglang_flags_catalog_extend(catalog("0.5.23"), ["site-numa-pin"])
    assert C.resolve("site-numa-pin", extended) == ("known", ["site-numa-pin"])
    assert names("site-numa-pin", "0.5.23")["flag-unknown"]  # the catalog itself is not changed
    assert C.name_findings("site-numa-pin", "x", extended) == []
    assert C.sglang_flags_catalog_extend({}, ["site-numa-pin"]) == {}
    plain = catalog("0.5.23")
    assert C.sglang_flags_catalog_extend(plain, []) is plain and C.sglang_flags_catalog_extend(plain, None) is plain


@pytest.mark.parametrize("bad", [["--site-flag"], ["Site-Flag"], ["site flag"], "site-flag", [""]])
def test_extra_known_flags_must_be_flag_names_without_dashes(bad):
    with pytest.raises(Exception, match="sglang_flags_extra_known_flags"):
        C.sglang_flags_catalog_extend(catalog("0.5.23"), bad)


FAKE_SERVER_ARGS = '''
import argparse
class ServerArgs:
    host: A[str, "h"] = "127.0.0.1"
    sampling_backend: A[Optional[str], Arg(no_cli=True)] = "flashinfer"
    tf32: A[Optional[bool], Arg(help="t", action=argparse.BooleanOptionalAction)] = None
    fast: A[bool, "Deprecated. Use --image-processor-backend=pil instead."] = False
    ratio: A[float, "r"] = -0.5
    urls: A[List[str], "u"] = msgspec.field(default_factory=list)

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--sampling", dest="sampling_backend", default=_declared_default("sampling_backend"))
        parser.add_argument("--old-max-bs", action=DeprecatedAliasStoreAction, new_flag="--max-bs-decode",
                            dest="max_bs_decode")
        parser.add_argument("--gone", action=DeprecatedAction, error_message="use --new")
        parser.add_argument("--flagless", action="store_true")
'''


def test_flag_catalog_script_reads_deprecations_three_state_flags_defaults_and_pins(tmp_path):
    wheel = tmp_path / "sglang-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("sglang-9.9.9.dist-info/METADATA",
                    "Metadata-Version: 2.1\nName: sglang\nVersion: 9.9.9\n"
                    "Requires-Dist: torch==2.99.0\nRequires-Dist: flashinfer_python[cu13]==0.9.1\n"
                    "Requires-Dist: torchvision\nRequires-Dist: sglang-kernel==1.0; extra == \"x\"\n")
        zf.writestr("sglang/srt/server_args.py", FAKE_SERVER_ARGS)
    out = tmp_path / "catalog.json"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "flag_catalog.py"), str(wheel), "-o", str(out)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["requires"] == {"flashinfer-python": "==0.9.1", "torch": "==2.99.0"}
    assert data["options"] == {
        "--fast": {"default": False, "deprecated": "--image-processor-backend=pil", "dest": "fast"},
        "--flagless": {"default": False, "dest": "flagless"},
        "--gone": {"deprecated": True, "dest": "gone", "rejected": "use --new"},
        "--host": {"default": "127.0.0.1", "dest": "host"},
        "--no-tf32": {"default": None, "dest": "tf32"},
        "--old-max-bs": {"deprecated": "--max-bs-decode", "dest": "max_bs_decode"},
        "--ratio": {"default": -0.5, "dest": "ratio"},
        "--sampling": {"default": "flashinfer", "dest": "sampling_backend"},
        "--tf32": {"default": None, "dest": "tf32"},
        "--urls": {"default": [], "dest": "urls"},
    }


def _slug(heading):
    """GitHub's anchor of a markdown heading."""
    text = heading.strip().lower()
    return "".join(c for c in text.replace(" ", "-") if c.isalnum() or c in "-_")


def test_every_docs_source_of_the_rules_has_its_section():
    with open(os.path.join(ROOT, "docs", "sglang-versions.md"), encoding="utf-8") as fh:
        anchors = {_slug(line.lstrip("#")) for line in fh if line.startswith("#")}
    sources = [r["source"] for r in VARS["sglang_flags_rules"]] + [e["source"] for e in REMOVED.values()]
    pointed = [s.split("#", 1)[1] for s in sources if s.startswith("docs/sglang-versions.md#")]
    assert len(pointed) >= 20
    assert sorted(set(pointed) - anchors) == []

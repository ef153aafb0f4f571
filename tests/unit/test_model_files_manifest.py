"""The manifest and stamp of a model directory (plugins/module_utils/model_files/manifest.py):
what counts as a model file, the digest, the stamp SGLang's --model-checksum can read, the
quick check (sizes only) and the full verify (hashes)."""

import hashlib
import json
import os

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.model_files import manifest as mf


@pytest.fixture(name="model")
def fixture_model(tmp_path):
    (tmp_path / "config.json").write_text('{"a": 1}')
    (tmp_path / "model.safetensors").write_bytes(b"\1" * 5000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tokenizer.json").write_text("{}")
    (tmp_path / ".gitattributes").write_text("*.safetensors filter=lfs\n")
    (tmp_path / ".cache" / "huggingface").mkdir(parents=True)
    (tmp_path / ".cache" / "huggingface" / "x.metadata").write_text("bookkeeping")
    (tmp_path / ".sglang-deploy-copy.tmp").write_text("bookkeeping")
    return tmp_path


def test_model_files_leave_out_the_bookkeeping_only(model):
    mf.write_stamp(str(model), {}, "org/m", "a" * 40, "path:/x")
    assert mf.list_files(str(model)) == [".gitattributes", "config.json", "model.safetensors", "sub/tokenizer.json"]


def test_manifest_hashes_and_sizes_every_file(model):
    files = mf.compute_manifest(str(model), workers=2)
    assert list(files) == sorted(files)
    assert files["model.safetensors"] == {"sha256": hashlib.sha256(b"\1" * 5000).hexdigest(), "size": 5000}
    assert files["sub/tokenizer.json"]["size"] == 2
    assert mf.compute_manifest(str(model), ["config.json", "missing.bin"]) == {"config.json": files["config.json"]}
    assert mf.total_bytes(files) == sum(f["size"] for f in files.values())


def test_digest_is_of_the_canonical_json():
    files = {"b": {"size": 1, "sha256": "00"}, "a": {"sha256": "11", "size": 2}}
    canonical = '{"a":{"sha256":"11","size":2},"b":{"sha256":"00","size":1}}'
    assert mf.manifest_digest(files) == hashlib.sha256(canonical.encode()).hexdigest()
    assert mf.manifest_digest(dict(reversed(list(files.items())))) == mf.manifest_digest(files)


def test_stamp_round_trip_and_sglang_checksum_format(model):
    files = mf.compute_manifest(str(model))
    stamp = mf.write_stamp(str(model), files, "org/m", "b" * 40, "hub:http://127.0.0.1:1", verified_at="2026-01-01T00:00:00+00:00")
    assert mf.read_stamp(str(model)) == stamp
    data = json.loads((model / mf.STAMP).read_text())
    assert {k for k in data} == {"repo", "revision", "source", "manifest_digest", "files_count", "bytes", "verified_at", "files"}
    assert data["files_count"] == 4 and data["bytes"] == mf.total_bytes(files)
    # what sglang.srt.utils.model_file_verifier's Manifest.from_dict reads: files -> {sha256, size}
    assert all(set(info) == {"sha256", "size"} for info in data["files"].values())
    assert not os.path.exists(str(model / mf.STAMP) + ".tmp")


def test_the_writer_may_add_to_the_stamp(model):
    stamp = mf.write_stamp(str(model), {}, "org/m", "e" * 40, "path:/x", allow_patterns=["*.json"])
    assert mf.read_stamp(str(model))["allow_patterns"] == stamp["allow_patterns"] == ["*.json"]


def test_a_stamp_that_does_not_match_its_manifest_is_no_stamp(model):
    assert mf.read_stamp(str(model)) is None
    mf.write_stamp(str(model), mf.compute_manifest(str(model)), "org/m", "c" * 40, "path:/x")
    data = json.loads((model / mf.STAMP).read_text())
    data["files"]["config.json"]["size"] += 1
    (model / mf.STAMP).write_text(json.dumps(data))
    assert mf.read_stamp(str(model)) is None
    (model / mf.STAMP).write_text("{not json")
    assert mf.read_stamp(str(model)) is None


def test_quick_check_sees_sizes_full_verify_sees_content(model):
    stamp = mf.write_stamp(str(model), mf.compute_manifest(str(model)), "org/m", "d" * 40, "path:/x")
    assert mf.quick_check(str(model), stamp) == [] and mf.full_verify(str(model), stamp) == []
    with open(model / "model.safetensors", "r+b") as handle:
        handle.write(b"\2")  # same size
    assert mf.quick_check(str(model), stamp) == []
    assert mf.full_verify(str(model), stamp) == ["model.safetensors"]
    (model / "sub" / "tokenizer.json").unlink()
    (model / "config.json").write_text("{}")
    assert mf.quick_check(str(model), stamp) == ["config.json", "sub/tokenizer.json"]
    assert mf.full_verify(str(model), stamp) == ["config.json", "model.safetensors", "sub/tokenizer.json"]


def test_compare_without_a_sha256_checks_sizes():
    actual = {"a": {"sha256": "11", "size": 1}, "b": {"sha256": "22", "size": 2}}
    assert mf.compare({"a": {"sha256": None, "size": 1}, "b": {"sha256": "99", "size": 2}}, actual) == ["b"]
    assert mf.compare({"c": {"sha256": None, "size": 0}}, actual) == ["c"]


@pytest.mark.parametrize("patterns, expected", [
    ([], ["config.json", "model.safetensors", "sub/tokenizer.json"]),
    (["*.json"], ["config.json", "sub/tokenizer.json"]),
    (["sub/"], ["sub/tokenizer.json"]),
    (["model.*", "config.json"], ["config.json", "model.safetensors"]),
])
def test_filter_names_as_allow_patterns(patterns, expected):
    assert mf.filter_names(["config.json", "model.safetensors", "sub/tokenizer.json"], patterns) == expected

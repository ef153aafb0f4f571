"""The project's tiny model is one stamped revision, and the local profile names that revision
(model_files' path source: inventories/local/group_vars/all/sglang.yml, docs/local-profile.md)."""

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "roles" / "model_files" / "files" / "tiny-qwen2"
SCRIPT = ROOT / "scripts" / "model-stamp.py"
from ansible_collections.sglang.deploy.plugins.module_utils.model_files import manifest as mf  # noqa: E402


def stamp_check(directory):
    return subprocess.run([sys.executable, str(SCRIPT), str(directory), "--repo", "sglang-deploy/tiny-qwen2", "--check"],
                          capture_output=True, text=True, check=False)


def test_the_committed_stamp_matches_the_files():
    stamp = mf.read_stamp(str(TINY))
    files = mf.compute_manifest(str(TINY))
    assert stamp is not None and stamp["files"] == files
    assert stamp["revision"] == mf.content_revision(files)
    assert mf.quick_check(str(TINY), stamp) == [] and mf.full_verify(str(TINY), stamp) == []
    assert stamp_check(TINY).returncode == 0


def test_the_local_profile_names_that_revision():
    local = yaml.safe_load((ROOT / "inventories/local/group_vars/all/sglang.yml").read_text(encoding="utf-8"))
    revision = mf.read_stamp(str(TINY))["revision"]
    assert local["model_files_source"] == "path"
    assert local["model_files_src_path"] == "/srv/models/tiny-qwen2"
    assert local["model_files_revision"] == revision
    assert local["sglang_server_args"]["model-path"] == f"/data/models/tiny-qwen2/{revision}"


def test_a_changed_file_fails_the_check_and_a_new_stamp_names_a_new_revision(tmp_path):
    copy = tmp_path / "tiny-qwen2"
    shutil.copytree(TINY, copy)
    with open(copy / "generation_config.json", "a", encoding="utf-8") as handle:
        handle.write("\n")
    failed = stamp_check(copy)
    assert failed.returncode == 1 and "does not match the files" in failed.stderr
    done = subprocess.run([sys.executable, str(SCRIPT), str(copy), "--repo", "sglang-deploy/tiny-qwen2"],
                          capture_output=True, text=True, check=True)
    new = mf.read_stamp(str(copy))
    assert new["revision"] != mf.read_stamp(str(TINY))["revision"] and new["revision"] in done.stdout
    assert len(new["revision"]) == 40 and stamp_check(copy).returncode == 0


def test_the_content_revision_depends_on_the_files_only():
    files = mf.compute_manifest(str(TINY))
    assert mf.content_revision(dict(reversed(list(files.items())))) == mf.content_revision(files)
    other = dict(files, **{"extra.txt": {"sha256": "0" * 64, "size": 1}})
    assert mf.content_revision(other) != mf.content_revision(files)

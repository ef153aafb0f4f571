"""roles/sglang_server/library/sglang_server_files.py: one read-only call says which planned
files a write would change (content, mode, owner, group) or remove."""

import getpass
import grp
import hashlib
import os

import sglang_server_files


def _spec(path, content, mode="0644"):
    user = getpass.getuser()
    return {"path": str(path), "sha256": hashlib.sha256(content.encode()).hexdigest(), "mode": mode,
            "owner": user, "group": grp.getgrgid(os.getgid())[0]}


def test_same_content_and_attributes_is_no_difference(tmp_path, run_module):
    (tmp_path / "unit").write_text("a\n")
    os.chmod(tmp_path / "unit", 0o644)
    out = run_module(sglang_server_files, {"files": [_spec(tmp_path / "unit", "a\n")]})
    assert out["changed"] is False and out["differ"] == []


def test_content_mode_missing_and_absent_are_told_apart(tmp_path, run_module):
    for name in ("unit", "env", "keys"):
        (tmp_path / name).write_text("a\n")
        os.chmod(tmp_path / name, 0o644)
    files = [_spec(tmp_path / "unit", "b\n"), _spec(tmp_path / "env", "a\n", mode="0600"),
             _spec(tmp_path / "gone", "a\n"), {"path": str(tmp_path / "keys"), "state": "absent"},
             {"path": str(tmp_path / "never"), "state": "absent"}]
    out = run_module(sglang_server_files, {"files": files}, check_mode=True)
    assert out["why"] == {str(tmp_path / "unit"): "content", str(tmp_path / "env"): "mode",
                          str(tmp_path / "gone"): "missing", str(tmp_path / "keys"): "present"}
    assert out["changed"] is False and (tmp_path / "keys").exists()


def test_a_present_file_without_a_digest_is_refused(tmp_path, run_module):
    out = run_module(sglang_server_files, {"files": [{"path": str(tmp_path / "x")}]})
    assert out["failed"] is True and "sha256 is required" in out["msg"]

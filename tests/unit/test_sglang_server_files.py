"""plugins/modules/sglang_server_files.py: one read-only call says which planned
files a write would change (content, mode, owner, group) or remove."""

import getpass
import grp
import hashlib
import os

from ansible_collections.sglang.deploy.plugins.modules import sglang_server_files


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


# --- whose file is it (markers): roles/sglang_server/tasks/validate.yml refuses a foreign unit ---

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _markers():
    import yaml
    with open(os.path.join(ROOT, "roles", "sglang_server", "vars", "main.yml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)["_sglang_server_unit_markers"]


SSHD = "[Unit]\nDescription=OpenBSD Secure Shell server\n[Service]\nExecStart=/usr/sbin/sshd -D\n"


def test_a_unit_the_role_did_not_write_is_foreign(tmp_path, run_module):
    (tmp_path / "sshd.service").write_text(SSHD)
    spec = dict(_spec(tmp_path / "sshd.service", "ours\n"), markers=_markers())
    out = run_module(sglang_server_files, {"files": [spec]}, check_mode=True)
    assert out["foreign"] == [str(tmp_path / "sshd.service")] and out["changed"] is False
    assert (tmp_path / "sshd.service").read_text() == SSHD


def test_the_roles_own_units_are_not_foreign_the_marker_and_the_line_from_before_it(tmp_path, run_module):
    with open(os.path.join(ROOT, "tests", "fixtures", "units", "production.service"), encoding="utf-8") as fh:
        current = fh.read()
    before = "".join(line for line in current.splitlines(keepends=True) if not line.startswith(_markers()[0]))
    assert before != current
    (tmp_path / "now.service").write_text(current)
    (tmp_path / "before.service").write_text(before)
    files = [dict(_spec(tmp_path / name, "x\n"), markers=_markers()) for name in ("now.service", "before.service")]
    files.append(dict(_spec(tmp_path / "missing.service", "x\n"), markers=_markers()))
    out = run_module(sglang_server_files, {"files": files})
    assert out["foreign"] == [] and out["why"][str(tmp_path / "missing.service")] == "missing"


def test_without_markers_nothing_is_judged(tmp_path, run_module):
    (tmp_path / "env").write_text(SSHD)
    out = run_module(sglang_server_files, {"files": [_spec(tmp_path / "env", "x\n")]})
    assert out["foreign"] == []


def test_the_unit_template_writes_the_first_marker():
    with open(os.path.join(ROOT, "templates", "sglang.service.j2"), encoding="utf-8") as fh:
        assert any(line.startswith(_markers()[0]) for line in fh)
    assert sglang_server_files.marked(b"# x\n" + _markers()[0].encode() + b": more\n", _markers())
    assert not sglang_server_files.marked(b"  " + _markers()[0].encode(), _markers())

"""plugins/module_utils/watchdog/install.py: which of the watchdog's files differ from what this version
installs, judged on ansible.builtin.find's real output (run here on a temporary tree)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.sglang.deploy.plugins.module_utils.watchdog.install import sglang_watchdog_stale

ME = os.getuid()


def _find(paths, patterns):
    """ansible.builtin.find's own module, run as Ansible runs it (arguments on stdin)."""
    args = {"ANSIBLE_MODULE_ARGS": {"paths": [str(p) for p in paths], "patterns": patterns,
                                    "file_type": "any", "get_checksum": True}}
    out = subprocess.run([sys.executable, "-m", "ansible.modules.find"], input=json.dumps(args),
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["files"]


def _owner():
    import grp
    import pwd
    return pwd.getpwuid(ME).pw_name, grp.getgrgid(os.getgid()).gr_name


def _tree(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir(mode=0o755)
    os.chmod(lib, 0o755)
    (lib / "a.py").write_text("print('a')\n")
    os.chmod(lib / "a.py", 0o644)
    (lib / "run").write_text("#!/bin/sh\n")
    os.chmod(lib / "run", 0o755)
    expected = [{"path": str(lib), "mode": "0755"},
                {"path": str(lib / "a.py"), "mode": "0644", "content": "print('a')\n"},
                {"path": str(lib / "run"), "mode": "0755", "content": "#!/bin/sh\n"}]
    return lib, expected


def _stale(tmp_path, expected):
    owner, group = _owner()
    found = _find([tmp_path, tmp_path / "lib"] if (tmp_path / "lib").is_dir() else [tmp_path],
                  ["lib", "a.py", "run"])
    return sglang_watchdog_stale(found, expected, owner=owner, group=group)


def test_an_installed_tree_that_matches_is_not_stale(tmp_path):
    _, expected = _tree(tmp_path)
    assert _stale(tmp_path, expected) == []


def test_a_changed_content_mode_or_missing_file_is_named(tmp_path):
    lib, expected = _tree(tmp_path)
    (lib / "a.py").write_text("print('b')\n")
    os.chmod(lib / "run", 0o644)
    assert _stale(tmp_path, expected) == [str(lib / "a.py"), str(lib / "run")]
    (lib / "a.py").unlink()
    assert _stale(tmp_path, expected) == [str(lib / "a.py"), str(lib / "run")]


def test_a_missing_library_makes_everything_stale(tmp_path):
    _, expected = _tree(tmp_path)
    for entry in reversed(expected):
        p = Path(entry["path"])
        p.rmdir() if p.is_dir() else p.unlink()
    assert _stale(tmp_path, expected) == [e["path"] for e in expected]


def test_a_link_or_a_directory_in_a_file_s_place_is_stale(tmp_path):
    lib, expected = _tree(tmp_path)
    (lib / "run").unlink()
    (lib / "run").symlink_to(lib / "a.py")
    (lib / "a.py").unlink()
    (lib / "a.py").mkdir()
    assert _stale(tmp_path, expected) == [str(lib / "a.py"), str(lib / "run")]


def test_another_owner_is_stale():
    found = [{"path": "/x", "isdir": False, "isreg": True, "islnk": False, "mode": "0644",
              "pw_name": "nobody", "gr_name": "root",
              "checksum": hashlib.sha1(b"x", usedforsecurity=False).hexdigest()}]
    assert sglang_watchdog_stale(found, [{"path": "/x", "mode": "0644", "content": "x"}]) == ["/x"]
    found[0]["pw_name"] = "root"
    assert sglang_watchdog_stale(found, [{"path": "/x", "mode": "0644", "content": "x"}]) == []


def test_bad_arguments_are_refused():
    with pytest.raises(AnsibleFilterError, match="path and mode"):
        sglang_watchdog_stale([], [{"path": "/x"}])
    with pytest.raises(AnsibleFilterError, match="find's files"):
        sglang_watchdog_stale({}, [])

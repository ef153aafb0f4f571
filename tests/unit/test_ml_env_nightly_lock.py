"""ml_env's nightly track (plugins/modules/ml_env_nightly_lock.py): the controller resolves
the newest versions the indexes allow into a lock once; later runs keep that lock until a refresh
moves it. Resolved for real with the controller's pip: offline from a find-links directory of
tiny wheels this test writes, and against PyPI with `six` in a version range (skipped when PyPI
cannot be reached)."""

import json
import os
import socket
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ansible_collections.sglang.deploy.plugins.modules import ml_env_nightly_lock as m  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.sglang.deploy.plugins.module_utils.ml_env.lock import ml_env_lock_requirements  # noqa: E402


def params(tmp_path, **kw):
    p = {"requirements": [], "requirements_nodeps": [], "index_url": "https://pypi.org/simple",
         "extra_index_urls": [], "find_links": [], "pre": False, "lock_dir": str(tmp_path / "locks"),
         "refresh": False, "python": sys.executable, "python_version": "", "platforms": [], "timeout": 300}
    p.update(kw)
    return p


def toy_wheel(directory, version, name="sgdtoy"):
    """A minimal pure-Python wheel: what pip needs to resolve it (metadata, tags)."""
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(directory / f"{name}-{version}-py3-none-any.whl", "w") as zf:
        zf.writestr(f"{name}/__init__.py", "")
        zf.writestr(f"{name}-{version}.dist-info/METADATA",
                    f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        zf.writestr(f"{name}-{version}.dist-info/WHEEL",
                    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{name}-{version}.dist-info/RECORD", "")


def offline(tmp_path, **kw):
    """A spec that pip resolves from tmp_path/links only (the index is an empty directory)."""
    (tmp_path / "empty-index").mkdir(exist_ok=True)
    return params(tmp_path, index_url=(tmp_path / "empty-index").as_uri(),
                  find_links=[str(tmp_path / "links")], requirements=["sgdtoy"], **kw)


def test_first_run_resolves_and_writes_a_hash_pinned_lock(tmp_path):
    toy_wheel(tmp_path / "links", "1.0")
    result = m.ensure(offline(tmp_path))
    assert result["resolved"] and result["changed"]
    assert result["versions"] == {"sgdtoy": "1.0"} and result["moved"] == {"sgdtoy": [None, "1.0"]}
    lock = result["lock_dir"]
    assert lock.startswith(str(tmp_path / "locks" / "nightly")) and os.path.isfile(os.path.join(lock, "lock.json"))
    with open(os.path.join(lock, "pip-report.json"), encoding="utf-8") as fh:
        lines = ml_env_lock_requirements(json.load(fh))
    assert len(lines) == 1 and lines[0].startswith("sgdtoy==1.0 --hash=sha256:")
    assert not [n for n in os.listdir(os.path.dirname(lock)) if n.startswith(".resolving-")]


def test_a_run_without_refresh_keeps_the_lock_and_a_refresh_moves_it(tmp_path):
    toy_wheel(tmp_path / "links", "1.0")
    first = m.ensure(offline(tmp_path))
    toy_wheel(tmp_path / "links", "1.1")  # the index moved on
    kept = m.ensure(offline(tmp_path))
    assert not kept["resolved"] and not kept["changed"]
    assert kept["versions"] == {"sgdtoy": "1.0"} and kept["lock_dir"] == first["lock_dir"]
    refreshed = m.ensure(offline(tmp_path, refresh=True))
    assert refreshed["resolved"] and refreshed["changed"]
    assert refreshed["versions"] == {"sgdtoy": "1.1"} and refreshed["moved"] == {"sgdtoy": ["1.0", "1.1"]}
    assert m.ensure(offline(tmp_path))["versions"] == {"sgdtoy": "1.1"}


def test_a_refresh_that_finds_nothing_new_changes_nothing(tmp_path):
    toy_wheel(tmp_path / "links", "1.0")
    m.ensure(offline(tmp_path))
    again = m.ensure(offline(tmp_path, refresh=True))
    assert again["resolved"] and not again["changed"] and again["moved"] == {}


def test_a_failed_resolution_keeps_the_old_lock(tmp_path):
    toy_wheel(tmp_path / "links", "1.0")
    m.ensure(offline(tmp_path))
    p = offline(tmp_path, refresh=True)
    failing = lambda cmd, **kw: type("P", (), {"returncode": 1, "stderr": "no network", "stdout": ""})()  # noqa: E731
    with pytest.raises(RuntimeError, match="no network"):
        m.ensure(p, run=failing)
    assert m.versions_of(m.lock_path(p)) == {"sgdtoy": "1.0"}


def test_each_spec_has_its_own_lock(tmp_path):
    a = m.lock_path(params(tmp_path, requirements=["six>=1.15,<1.17"]))
    b = m.lock_path(params(tmp_path, requirements=["six>=1.15,<1.17"], pre=True))
    c = m.lock_path(params(tmp_path, requirements=["six>=1.15,<1.17"], platforms=["manylinux_2_34_x86_64"]))
    assert len({a, b, c}) == 3


def test_pip_command_resolves_for_the_hosts_platform(tmp_path):
    p = params(tmp_path, requirements=["torch"], pre=True, python_version="3.11",
               platforms=["manylinux_2_34_x86_64"], extra_index_urls=["https://flashinfer.ai/whl"])
    cmd = m.pip_command(p, ["torch"], "/r.json", "/t", nodeps=True)
    assert cmd[:4] == [sys.executable, "-m", "pip", "install"]
    for part in (["--dry-run"], ["--ignore-installed"], ["--report", "/r.json"], ["--pre"], ["--no-deps"],
                 ["--only-binary=:all:"], ["--target", "/t"], ["--python-version", "3.11"],
                 ["--platform", "manylinux_2_34_x86_64"], ["--extra-index-url", "https://flashinfer.ai/whl"]):
        assert any(cmd[i:i + len(part)] == part for i in range(len(cmd))), part
    assert cmd[-1] == "torch"


def _pypi_reachable():
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _pypi_reachable(), reason="pypi.org is not reachable from here")
def test_against_pypi_the_lock_holds_until_refreshed(tmp_path):
    p = params(tmp_path, requirements=["six>=1.15,<1.17"])
    lock = m.lock_path(p)
    # an older nightly of the same spec locked six 1.15.0
    os.makedirs(lock)
    with open(os.path.join(lock, "pip-report.json"), "w", encoding="utf-8") as fh:
        json.dump({"install": [{"metadata": {"name": "six", "version": "1.15.0"},
                                "download_info": {"url": "https://example.invalid/six-1.15.0.whl",
                                                  "archive_info": {"hashes": {"sha256": "00"}}}}]}, fh)
    assert m.ensure(p)["versions"] == {"six": "1.15.0"}
    refreshed = m.ensure(dict(p, refresh=True))
    assert refreshed["versions"] == {"six": "1.16.0"} and refreshed["moved"] == {"six": ["1.15.0", "1.16.0"]}
    with open(os.path.join(lock, "pip-report.json"), encoding="utf-8") as fh:
        line = ml_env_lock_requirements(json.load(fh))[0]
    assert line.startswith("six==1.16.0 --hash=sha256:") and len(line.split(":")[-1]) == 64
    assert m.ensure(p)["versions"] == {"six": "1.16.0"}

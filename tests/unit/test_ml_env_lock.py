"""ml_env's lock filter: pip install reports -> hash-pinned requirement lines."""


import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.sglang.deploy.plugins.module_utils.ml_env.lock import ml_env_lock_requirements  # noqa: E402


def entry(name, version, sha=None, url=None, hash_field=None):
    archive = {}
    if sha:
        archive["hashes"] = {"sha256": sha}
    if hash_field:
        archive["hash"] = hash_field
    return {
        "metadata": {"name": name, "version": version},
        "download_info": {"url": url or f"file:///srv/wheelhouse/{name}-{version}.whl", "archive_info": archive},
    }


def test_pins_every_install_with_its_hash_sorted():
    report = {"install": [entry("Torch", "2.14.1", "aa"), entry("numpy", "2.3.5", "bb")]}
    assert ml_env_lock_requirements(report) == [
        "numpy==2.3.5 --hash=sha256:bb",
        "Torch==2.14.1 --hash=sha256:aa",
    ]


def test_merges_reports_and_later_wins():
    deps = {"install": [entry("tqdm", "4.70.1", "11"), entry("sglang", "0.5.22", "22")]}
    nodeps = {"install": [entry("sglang", "0.5.23", "33")]}
    assert ml_env_lock_requirements([deps, nodeps]) == [
        "sglang==0.5.23 --hash=sha256:33",
        "tqdm==4.70.1 --hash=sha256:11",
    ]


def test_accepts_legacy_hash_field():
    report = {"install": [entry("six", "1.17.0", hash_field="sha256=cc")]}
    assert ml_env_lock_requirements(report) == ["six==1.17.0 --hash=sha256:cc"]


def test_refuses_entries_without_hash_naming_the_package():
    report = {"install": [entry("sglang", "0.5.24.dev0", url="git+https://example.invalid/sglang")]}
    with pytest.raises(AnsibleFilterError, match=r"sglang==0\.5\.24\.dev0 has no sha256"):
        ml_env_lock_requirements(report)


def test_refuses_what_is_not_a_report():
    with pytest.raises(AnsibleFilterError, match="not a pip install report"):
        ml_env_lock_requirements([{"packages": []}])
    with pytest.raises(AnsibleFilterError, match="expected a pip install report"):
        ml_env_lock_requirements([])

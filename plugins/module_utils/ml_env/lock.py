"""Turn pip install reports (a generation's lock) into hash-pinned requirement lines; compare the
CUDA runtime a spec's wheels need with the driver's (plugins/module_utils/ml_env/cuda.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.sglang.deploy.plugins.module_utils.ml_env.cuda import canonical as _canonical
from ansible_collections.sglang.deploy.plugins.module_utils.ml_env.cuda import check as _cuda_check


def ml_env_lock_requirements(reports) -> list:
    """Requirement lines ``name==version --hash=sha256:...`` from one or more pip reports.

    ``reports`` is a pip ``--report`` document (dict) or a list of them (the with-deps and
    the --no-deps install of one generation). Every installed distribution must carry its
    version and a sha256 archive hash, otherwise the lock cannot reproduce it and this fails
    naming the package. Later reports win for a name installed twice.
    """
    if isinstance(reports, dict):
        reports = [reports]
    if not isinstance(reports, list) or not reports:
        raise AnsibleFilterError("ml_env_lock_from: expected a pip install report (JSON object) or a list of them")
    pinned: dict = {}
    for report in reports:
        if not isinstance(report, dict) or "install" not in report:
            raise AnsibleFilterError(
                "ml_env_lock_from: not a pip install report (no 'install' key); "
                "use the pip-report*.json files that ml_env fetched into ml_env_lock_dir"
            )
        for item in report["install"]:
            meta = item.get("metadata") or {}
            name, version = meta.get("name"), meta.get("version")
            if not name or not version:
                raise AnsibleFilterError(f"ml_env_lock_from: an entry has no name/version: {item.get('download_info')}")
            info = item.get("download_info") or {}
            archive = info.get("archive_info") or {}
            hashes = archive.get("hashes") or {}
            digest = hashes.get("sha256") or (archive.get("hash", "").split("=", 1)[1]
                                              if archive.get("hash", "").startswith("sha256=") else "")
            if not digest:
                raise AnsibleFilterError(
                    f"ml_env_lock_from: {name}=={version} has no sha256 in the report "
                    f"({info.get('url', 'no url')}); a VCS or directory install cannot be locked by hash"
                )
            pinned[_canonical(name)] = f"{name}=={version} --hash=sha256:{digest}"
    return [pinned[k] for k in sorted(pinned)]


def ml_env_cuda_runtime_check(sources, driver_cuda_version="") -> dict:
    """The CUDA-runtime verdict of ``sources`` (requirement lines ``name==version ...`` and/or pip
    install reports) against the driver's CUDA version: {ok, judged, driver, runtime, wheels,
    newer_major, newer_minor, message} (plugins/module_utils/ml_env/cuda.py)."""
    return _cuda_check(sources, driver_cuda_version)

"""The CI helper scripts: the disk check stops with the numbers and the fix, the report names
the failed tests and the scenario times."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*argv):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, cwd=ROOT)


def test_check_disk_refuses_when_the_caches_will_not_fit():
    proc = run(ROOT / "scripts/check-disk.sh", 1_000_000)
    assert proc.returncode == 1
    assert "GiB free on the filesystem of" in proc.stderr
    assert "NEED_GIB=1000000" in proc.stderr
    assert "Fix:" in proc.stderr and "No space left on device" in proc.stderr


def test_check_disk_passes_when_they_fit():
    proc = run(ROOT / "scripts/check-disk.sh", 0)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("check-disk: ")


def test_check_disk_needs_its_argument():
    proc = run(ROOT / "scripts/check-disk.sh")
    assert proc.returncode != 0
    assert "usage: check-disk.sh NEED_GIB" in proc.stderr


def test_ci_report_shows_scenario_times_and_failed_tests(tmp_path):
    log = tmp_path / "ci.log"
    log.write_text(
        "=== molecule test -s default\n"
        "FAILED - RETRYING: [localhost]: Wait for instance(s) creation to complete (300 retries left).\n"
        "=== molecule default took 281 s\n"
        "=== molecule test -s ml_env\n"
        "tests/test_ml_env.py::test_1_first_generation_serves PASSED [ 16%]\n"
        "tests/test_ml_env.py::test_2_second_generation_installs_while_the_first_serves FAILED [ 33%]\n"
        "make: *** [Makefile:57: molecule] Terminated\n"
    )
    out = run(ROOT / "scripts/ci-report.sh", log).stdout
    assert "=== molecule default took 281 s" in out
    assert "last started: molecule test -s ml_env" in out
    assert "test_2_second_generation_installs_while_the_first_serves FAILED" in out
    assert "make: *** [Makefile:57: molecule] Terminated" in out
    assert "RETRYING" not in out and "PASSED" not in out
    assert "--- disk" in out and "--- memory" in out

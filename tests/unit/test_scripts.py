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


def test_ci_report_shows_how_busy_the_cores_were_per_5_minutes(tmp_path):
    # /proc/stat's cpu line after the sample's time: user nice system idle iowait irq softirq steal
    (tmp_path / "cpu.log").write_text(
        "1000 cpu 100 0 0 100 0 0 0 0 0 0\n"
        "1030 cpu 150 0 10 120 0 0 0 0 0 0\n"   # 60 busy of 80: first 5 minutes
        "1330 cpu 160 0 10 210 0 0 0 0 0 0\n"   # 10 busy of 100: the next 5 minutes
    )
    log = tmp_path / "ci.log"
    log.write_text("=== molecule default took 1 s\n")
    out = run(ROOT / "scripts/ci-report.sh", log).stdout
    assert "--- cores busy" in out
    assert out.split("--- cores busy", 1)[1].splitlines()[1].split() == ["75", "10"]


PHASES_FAKES = {
    # each fake appends when it starts and ends to calls.log, then fails where told
    "scripts/molecule-run.sh": 'echo "start molecule-run $*" >> calls.log; sleep "${SLEEP_S:-0.2}"\n'
                               'echo "end molecule-run $*" >> calls.log\n'
                               'case " $* " in *" ${FAIL_SCENARIO:-none} "*) exit 1;; esac\n',
    ".venv/bin/molecule": 'echo "molecule $*" >> calls.log\n',
    "bin/make": 'echo "start make $*" >> calls.log; sleep 0.2; echo "end make $*" >> calls.log\n'
                '[ "${FAIL_TARGET:-}" != "${*: -1}" ]\n',
}


def phases(tmp_path, **env):
    """scripts/test-phases.sh run on fakes of molecule-run.sh, molecule and make (a copy of the
    script in tmp_path: it runs whatever sits beside it); (process, the calls in order)."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts/test-phases.sh").write_text((ROOT / "scripts/test-phases.sh").read_text())
    for rel, body in PHASES_FAKES.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/usr/bin/env bash\n" + body)
    for path in [tmp_path / "scripts/test-phases.sh", *(tmp_path / rel for rel in PHASES_FAKES)]:
        path.chmod(0o755)
    proc = subprocess.run(
        [str(tmp_path / "scripts/test-phases.sh"), "cuda_toolkit gpu_host", "default", "rollout", "ci-demo"],
        capture_output=True, text=True, cwd=tmp_path,
        env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", **env}, timeout=60)
    return proc, (tmp_path / "calls.log").read_text().splitlines()


def test_the_second_scenario_starts_once_the_first_converged_and_the_demo_follows_the_first(tmp_path):
    proc, calls = phases(tmp_path, SLEEP_S="1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rollout = calls.index("start molecule-run rollout")
    assert calls.index("end molecule-run --until converge default") < rollout
    assert calls.index("end molecule-run cuda_toolkit gpu_host") < rollout
    # make check and the first scenario start at once, and the check does not hold the second back
    assert calls.index("start make --no-print-directory check") < calls.index("end molecule-run cuda_toolkit gpu_host")
    assert calls.index("end molecule-run --from verify default") < calls.index("start make --no-print-directory ci-demo")
    assert "=== make check (rc=0), its log:" in proc.stdout


def test_a_red_check_fails_the_run_once_every_part_has_ended(tmp_path):
    proc, calls = phases(tmp_path, FAIL_TARGET="check")
    assert proc.returncode == 1
    assert "end molecule-run rollout" in calls and "end make --no-print-directory ci-demo" in calls
    assert "=== make check (rc=1), its log:" in proc.stdout


def test_a_first_scenario_that_does_not_converge_skips_its_verifier_not_the_rest(tmp_path):
    proc, calls = phases(tmp_path, FAIL_SCENARIO="default")
    assert proc.returncode == 1
    assert "start molecule-run --from verify default" not in calls
    assert "start make --no-print-directory ci-demo" in calls and "end molecule-run rollout" in calls
    assert "default converged (rc=1)" in proc.stdout

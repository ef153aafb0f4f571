"""The batched-decode fault of the tests (tests/faults/batched_decode/sitecustomize.py): which
decode batches it makes wrong, from its band (SGLANG_TEST_FAULT_BATCH) and its on-file
(SGLANG_TEST_FAULT_FILE), as the Molecule tests switch it on and off at run time."""

import importlib
import sys

import pytest


@pytest.fixture(name="fault")
def fixture_fault():
    """The module imported by name; the import hook it installs taken out again."""
    before = list(sys.meta_path)
    module = importlib.import_module("ansible_collections.sglang.deploy.tests.faults.batched_decode.sitecustomize")
    yield module
    sys.meta_path[:] = before


def test_every_shared_decode_batch_without_a_band_and_only_the_band_with_one(fault):
    assert fault.active(2, {}) and fault.active(64, {}) and not fault.active(1, {})
    env = {"SGLANG_TEST_FAULT_BATCH": "3-5"}
    assert [n for n in range(1, 10) if fault.active(n, env)] == [3, 4, 5]
    assert [n for n in range(1, 10) if fault.active(n, {"SGLANG_TEST_FAULT_BATCH": "7"})] == [7]
    assert fault.band("garbage") == (2, 1 << 30) and fault.band("1-4") == (2, 4)


def test_the_file_switches_it_on_at_run_time_and_its_band_wins(fault, tmp_path):
    flag = tmp_path / "fault"
    env = {"SGLANG_TEST_FAULT_FILE": str(flag), "SGLANG_TEST_FAULT_BATCH": "2-3"}
    assert not fault.active(2, env)  # no file: off
    flag.write_text("")
    assert fault.active(2, env) and not fault.active(4, env)  # an empty file: the environment's band
    flag.write_text("4-8\n")
    assert fault.active(8, env) and not fault.active(2, env)
    flag.unlink()
    assert not fault.active(8, env)


def test_either_of_two_files_switches_it_on_the_first_found_gives_the_band(fault, tmp_path):
    """The sentinel test's two switches: one a restart clears (PrivateTmp=), one it does not."""
    cleared, survives = tmp_path / "tmp-fault", tmp_path / "on"
    env = {"SGLANG_TEST_FAULT_FILE": f"{cleared}:{survives}"}
    assert not fault.active(4, env)
    survives.write_text("3-5\n")
    assert fault.active(4, env) == (3, 5) and not fault.active(6, env)
    cleared.write_text("6-8\n")
    assert fault.active(6, env) == (6, 8) and not fault.active(4, env)
    cleared.unlink()
    survives.unlink()
    assert not fault.active(4, env)

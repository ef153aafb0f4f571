"""molecule/shared/cost.py: the per-test CPU line the CI report ranks (scripts/ci-report.sh)."""

from __future__ import annotations

import subprocess

from ansible_collections.sglang.deploy.molecule.shared import cost

INVENTORY = """\
all:
  hosts:
    molecule-gateway-1: {}
  children:
    sglang_hosts:
      hosts:
        molecule-rollout-1: {}
        molecule-rollout-2: {}
      children:
        local_cpu:
          hosts:
            molecule-rollout-1: {}
ungrouped: {}
"""


def test_every_host_of_the_inventory_once(tmp_path):
    path = tmp_path / "inventory.yml"
    path.write_text(INVENTORY)
    assert cost.inventory_hosts(str(path)) == ["molecule-gateway-1", "molecule-rollout-1", "molecule-rollout-2"]


def test_container_cpu_from_cgroup_v1_else_v2(tmp_path, monkeypatch):
    monkeypatch.setattr(cost, "CGROUP_USAGE", (str(tmp_path / "{id}" / "cpuacct.usage"), str(tmp_path / "{id}.stat")))
    assert cost.container_cpu_s("abc") is None
    (tmp_path / "abc.stat").write_text("usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n")
    assert cost.container_cpu_s("abc") == 2.5
    (tmp_path / "abc").mkdir()
    (tmp_path / "abc" / "cpuacct.usage").write_text("3000000000\n")
    assert cost.container_cpu_s("abc") == 3.0


def test_the_line_is_what_the_ci_report_sums_and_ranks(tmp_path):
    """The fields scripts/ci-report.sh reads: $6 the controller's, $9 the containers', $12 both."""
    text = cost.line("rollout", "tests/test_x.py::test_y", (0.0, 10.0, 100.0), (61.2, 30.4, 180.6))
    assert text == ("rollout wall 61 s, controller 20 cpu-s, containers 81 cpu-s, cpu 101 s: "
                    "tests/test_x.py::test_y")
    fields = text.split()
    assert (fields[0], fields[5], fields[8], fields[11]) == ("rollout", "20", "81", "101")
    (tmp_path / "test-cost.log").write_text(
        cost.line("default", "t::cheap", (0, 0, 0), (1, 1, 1)) + "\n" + text + "\n"
        + cost.line("rollout", "t::other", (0, 0, 0), (5, 2, 3)) + "\n")
    (tmp_path / "ci.log").write_text("")
    report = subprocess.run(["bash", cost.ROOT + "/scripts/ci-report.sh", str(tmp_path / "ci.log")],
                            capture_output=True, text=True, check=False).stdout
    section = report.split("--- what the Molecule tests cost")[1].split("\n---")[0].splitlines()[1:]
    assert section[:2] == ["default: 1 tests, controller 1 cpu-s, containers 1 cpu-s",
                           "rollout: 2 tests, controller 22 cpu-s, containers 84 cpu-s"]
    assert section[2].endswith("tests/test_x.py::test_y") and section[4].endswith("t::cheap"), section

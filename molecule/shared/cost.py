"""What each Molecule test costs, where CI's minutes go (a pytest plugin: the verifier's `p`
option in .config/molecule/config.yml).

CI runs the scenarios side by side on 2 cores that are busy nearly all the time, so a test's wall
seconds say more about what ran beside it than about the test. Its CPU seconds do not: the
controller's (this pytest and every child it waited for: ansible-playbook, docker exec, curl)
and those of the scenario's containers (their cgroup's CPU counter: the servers, the gates'
benchmarks, the watchdogs, including each host's idle load while the test ran). One line per
test (setup, call and teardown together) in reports/test-cost.log; scripts/ci-report.sh ranks
them and sums each scenario, so the next cut goes where the CPU goes.
"""

from __future__ import annotations

import os
import resource
import subprocess
import time

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LOG = os.path.join(ROOT, "reports", "test-cost.log")
# cgroup v1 (this machine's Docker) and v2 (a systemd host's Docker), in that order
CGROUP_USAGE = ("/sys/fs/cgroup/cpuacct/docker/{id}/cpuacct.usage",
                "/sys/fs/cgroup/system.slice/docker-{id}.scope/cpu.stat")


def inventory_hosts(path):
    """Every host name of a Molecule inventory file (YAML, hosts under groups and children)."""
    names = set()

    def walk(group):
        if not isinstance(group, dict):
            return
        names.update((group.get("hosts") or {}).keys())
        for child in (group.get("children") or {}).values():
            walk(child)

    with open(path, encoding="utf-8") as src:
        for group in (yaml.safe_load(src) or {}).values():
            walk(group)
    return sorted(names)


def container_cpu_s(container_id):
    """CPU seconds a container has used so far, or None where its cgroup is not readable."""
    for pattern in CGROUP_USAGE:
        try:
            with open(pattern.format(id=container_id), encoding="ascii") as src:
                text = src.read()
        except OSError:
            continue
        if pattern.endswith("cpuacct.usage"):
            return int(text) / 1e9
        usage = dict(line.split() for line in text.splitlines() if line.strip())
        return int(usage["usage_usec"]) / 1e6
    return None


def controller_cpu_s():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Cost:
    """The scenario's containers (their Docker ids) and the three counters of a sample."""

    def __init__(self, ids):
        self.ids = ids

    def containers_cpu_s(self):
        return sum(v for v in (container_cpu_s(i) for i in self.ids.values()) if v is not None)

    def sample(self):
        return time.monotonic(), controller_cpu_s(), self.containers_cpu_s()


def docker_ids(hosts):
    ids = {}
    for host in hosts:
        done = subprocess.run(["docker", "inspect", "-f", "{{.Id}}", host], capture_output=True, text=True, check=False)
        if done.returncode == 0:
            ids[host] = done.stdout.strip()
    return ids


def line(scenario, nodeid, before, after):
    wall, controller, containers = (b - a for a, b in zip(before, after))
    return (f"{scenario} wall {wall:.0f} s, controller {controller:.0f} cpu-s, containers {containers:.0f} cpu-s, "
            f"cpu {controller + containers:.0f} s: {nodeid}")


COST_KEY = pytest.StashKey[Cost]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # noqa: ARG001  # pytest's hook signature
    cost = item.config.stash.get(COST_KEY, None)
    if cost is None:
        yield
        return
    before = cost.sample()
    yield
    after = cost.sample()
    os.makedirs(os.path.dirname(LOG), exist_ok=True)
    with open(LOG, "a", encoding="utf-8") as out:
        out.write(line(os.environ.get("MOLECULE_SCENARIO_NAME", "?"), item.nodeid, before, after) + "\n")


def pytest_configure(config):
    inventory = os.environ.get("MOLECULE_INVENTORY_FILE")
    if not inventory or not os.path.exists(inventory):
        return  # not a Molecule verifier (a unit test importing this module)
    hosts = inventory_hosts(inventory)
    config.stash[COST_KEY] = Cost(docker_ids(hosts))

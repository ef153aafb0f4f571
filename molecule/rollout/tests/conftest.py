"""Fixtures of the rollout scenario's verifier: each test asks for the state it needs (the fleet
at its baseline, or serving any configuration deployed on purpose; a Hub endpoint with a new
model revision) instead of inheriting the previous test's result, so that any test runs alone
(`-k`) or in any order (molecule/shared/baseline.py)."""

from __future__ import annotations

import shutil
import time

import pytest

from ansible_collections.sglang.deploy.molecule.shared.baseline import Fleet
from ansible_collections.sglang.deploy.molecule.shared.fleet import ROOT, controller_address

HOSTS = ["molecule-rollout-1", "molecule-rollout-2", "molecule-rollout-3"]


@pytest.fixture(name="fleet", scope="session")
def fixture_fleet():
    """The three hosts and the states the fixtures reached; reports what reaching them cost."""
    fleet = Fleet(HOSTS)
    yield fleet
    fleet.report()


@pytest.fixture(name="baseline")
def fixture_baseline(fleet):
    """Every host on the inventory's configuration, serving (a few seconds when already so)."""
    fleet.ensure_baseline()
    return fleet


@pytest.fixture(name="known_good")
def fixture_known_good(fleet):
    """Every host serving a configuration deployed on purpose (the baseline, or what a passing
    test left): for the tests that assert against the units they find."""
    fleet.ensure_known_good()
    return fleet


class Hub:
    """tests/hub/hub_endpoint.py on the controller: a local endpoint in the Hub's HTTP layout,
    so the real huggingface_hub client runs offline; it only serves files. Each new_revision()
    is a revision of the tiny model no host has yet (a NOTES.md of its own)."""

    def __init__(self, tmp_path_factory):
        from ansible_collections.sglang.deploy.tests.hub import hub_layout
        from ansible_collections.sglang.deploy.tests.hub.hub_endpoint import HubEndpoint

        self.layout, self.tmp = hub_layout, tmp_path_factory
        self.endpoint = HubEndpoint(str(tmp_path_factory.mktemp("hub")), host="0.0.0.0").start()
        self.url = f"http://{controller_address(HOSTS[0])}:{self.endpoint.server.server_address[1]}"

    def new_revision(self, tag):
        src = self.tmp.mktemp(f"revision-{tag}") / "tiny-qwen2"
        shutil.copytree(self.layout.TINY_QWEN2, src)
        (src / "NOTES.md").write_text(f"a revision of the tiny model for {tag} at {time.time_ns()}\n", encoding="utf-8")
        sha = self.layout.lay_out(str(src), self.endpoint.root)
        return {"sha": sha, "dir": f"/data/models/tiny-qwen2/{sha}", "files": self.layout.list_files(str(src)),
                "vars": {"model_files_source": "hub", "model_files_repo_id": self.layout.TINY_QWEN2_REPO,
                         "model_files_revision": sha, "model_files_endpoint": self.url,
                         "model_files_shared_root": "/srv/fleet-store", "model_files_keep_revisions": 0}}

    def resolved(self, sha):
        """The files of revision `sha` the endpoint was asked for (GET), one entry per request."""
        return [e["path"].rsplit("/", 1)[-1] for e in self.endpoint.requests("GET") if f"/resolve/{sha}/" in e["path"]]


@pytest.fixture(name="hub", scope="session")
def fixture_hub(tmp_path_factory):
    # the fleet's shared storage (.cache/fleet-store, mounted at /srv/fleet-store) starts empty,
    # as on a fresh clone: an earlier run of this scenario in the same checkout left revisions there
    shutil.rmtree(ROOT / ".cache" / "fleet-store" / "tiny-qwen2", ignore_errors=True)
    hub = Hub(tmp_path_factory)
    yield hub
    hub.endpoint.stop()

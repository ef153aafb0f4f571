"""ml_env generations on a serving host, driven through deploy.yml and rollback.yml.

Part of the `default` scenario (its one host: a second generation installs and switches on the
host the other files test, without a scenario of its own that would create, converge and
destroy a host again). The module starts from the inventory's configuration (a deploy.yml of
it, a no-op when the other files left the host so), whatever ran before. Each test asks the
fixtures below for the generations it needs (the first active, the second installed or active)
instead of inheriting the previous test's: any test runs alone (`-k`) or in any order; in file
order the fixtures find every state already there and run nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ansible_collections.sglang.deploy.molecule.shared.fleet import Prober, ask, figure, ip_of, local_vars, playbook, scratch, sh, unit_state, unit_text  # noqa: E402

testinfra_hosts = ["molecule-sglang-1"]
HOST = "molecule-sglang-1"
SPEC = local_vars("ml_env")
LOCKS = scratch("ml-env-locks-")


@pytest.fixture(name="gen1", scope="module", autouse=True)
def fixture_gen1():
    """The first generation (the inventory spec's): active after deploy.yml as the scenario's
    converge ran it (no change when the files before this one left the host there). After the
    module: the second generation removed unless it is active; the generations live in the
    scenario's .cache/ml-envs/default (6.6 GiB each, the first one hard links shared with the
    other scenarios), and the disk needs the room."""
    playbook("deploy.yml", {})
    yield link()
    gen2 = generation_of(SPEC2)
    if gen2 and link() != gen2:
        sh(HOST, f"rm -rf {gen2}")


def spec_with(old: str, new: str) -> dict:
    """The local spec with one requirement replaced (old must be in it)."""
    assert old in SPEC["ml_env_packages"], old
    return {"ml_env_packages": [new if p == old else p for p in SPEC["ml_env_packages"]],
            "ml_env_lock_dir": str(LOCKS)}


SPEC2 = spec_with("tqdm==4.70.1", "tqdm==4.70.0")


def requirements(gen):
    """The package lines of a generation's requirements.txt (pip options left out)."""
    text = sh(HOST, f"cat /root/ml-envs/{gen}/requirements.txt 2>/dev/null || true")
    return [line for line in text.splitlines() if line and not line.startswith("-")]


def link():
    return sh(HOST, "readlink /root/ml-env")


def generation_of(spec):
    """The finished generation of `spec` on the host (its path), or None."""
    found = [g for g in sh(HOST, "ls /root/ml-envs").split()
             if g != "logs" and requirements(g) == spec["ml_env_packages"]
             and sh(HOST, f"test -f /root/ml-envs/{g}/ml-env-generation.json && echo ok || true")]
    assert len(found) <= 1, found
    return f"/root/ml-envs/{found[0]}" if found else None


def install_gen2():
    """The second generation installed (the wheelhouse gains tqdm 4.70.0), not switched to;
    (seconds, probe samples of the server meanwhile)."""
    playbook("playbooks/wheelhouse.yml", SPEC2)
    with Prober([HOST], period=1.0) as probe:
        _, _, took = playbook("deploy.yml", SPEC2, args=("--tags", "install"))
    return took, probe.samples


@pytest.fixture(name="on_gen1")
def fixture_on_gen1(gen1):
    """The first generation active, serving the inventory's flags (deploy.yml of the inventory's
    configuration only where another generation is active)."""
    if link() != gen1:
        playbook("deploy.yml", {})
    assert link() == gen1
    return gen1


@pytest.fixture(name="gen2")
def fixture_gen2(gen1):
    """The second generation's path, installed (from the wheelhouse only where it is absent)."""
    if generation_of(SPEC2) is None:
        install_gen2()
    return generation_of(SPEC2)


@pytest.fixture(name="on_gen2")
def fixture_on_gen2(gen1, gen2):
    """The second generation active, unless it is already: switched to by a rollout from the
    first (whose release is then the one before it)."""
    if link() != gen2:
        if link() != gen1:
            playbook("deploy.yml", {})
        playbook("deploy.yml", SPEC2)
    assert link() == gen2
    return gen2


def assert_env_names(gen):
    """The unit's environment file names generation `gen` (a path under /root/ml-envs)."""
    env = sh(HOST, "cat /etc/sglang/sglang.env")
    assert f'SGLANG_DEPLOY_ML_ENV="{Path(gen).name}"' in env


def test_1_first_generation_serves(on_gen1):
    assert on_gen1.startswith("/root/ml-envs/")
    assert sh(HOST, f"cat {on_gen1}/ml-env-generation.json")
    assert ask(ip_of(HOST)) == "OK"


def test_2_second_generation_installs_while_the_first_serves(on_gen1):
    absent = generation_of(SPEC2)
    if absent:  # installed by a test that ran before this one: installed again here
        sh(HOST, f"rm -rf {absent}")
    pid = unit_state(HOST)[0]
    took, samples = install_gen2()
    figure(f"second generation installed in {took:.0f} s while the server answered {len(samples)} probes")
    assert all(r[HOST] for _, r in samples), "the server stopped answering during the install"
    assert len(samples) >= 3
    assert link() == on_gen1, "installing must not switch the active generation"
    assert unit_state(HOST)[0] == pid
    gen2 = generation_of(SPEC2)
    assert gen2 and gen2 != on_gen1, sh(HOST, "ls /root/ml-envs")
    freeze = sh(HOST, f"{gen2}/bin/pip freeze")
    assert "tqdm==4.70.0" in freeze.split()


def test_3_rollout_switches_to_the_second_generation_and_locks_it(on_gen1, gen2):
    pid = unit_state(HOST)[0]
    playbook("deploy.yml", SPEC2)
    assert link() == gen2
    assert unit_state(HOST)[0] != pid
    assert ask(ip_of(HOST)) == "OK"
    assert_env_names(gen2)
    report = LOCKS / HOST / Path(gen2).name / "pip-report.json"
    installed = {i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    assert installed["tqdm"] == "4.70.0"
    assert installed["torch"] == "2.14.1"
    nodeps = json.loads((report.parent / "pip-report-nodeps.json").read_text())["install"]
    assert [(i["metadata"]["name"], i["metadata"]["version"]) for i in nodeps] == [("sglang", "0.5.23")]


def test_4_rollback_returns_to_the_first_generation_and_its_unit(gen1, on_gen2):
    pid = unit_state(HOST)[0]
    playbook("playbooks/rollback.yml", SPEC2)
    assert link() == gen1
    assert unit_state(HOST)[0] != pid
    assert_env_names(gen1)
    assert ask(ip_of(HOST)) == "OK"


def test_5_a_new_generation_that_fails_the_gate_is_undone_with_its_unit(on_gen1, gen2):
    """The rollout switches to the second generation and changes a flag; two gates cannot pass:
    a speed floor the tiny model cannot meet, and a resolved value the CPU server does not pick
    (it resolves page size 1); the failure quotes both figures and both values, and the host goes
    back to the first generation and the old unit together, and serves."""
    pid = unit_state(HOST)[0]
    old_unit = unit_text(HOST)
    args = dict(local_vars("sglang")["sglang_server_args"], **{"max-total-tokens": 12288})
    expect = dict(local_vars("verify")["sglang_verify_expect_resolved"], page_size=16)
    rc, out, _ = playbook("deploy.yml", dict(SPEC2, sglang_server_args=args, sglang_verify_min_decode_tps=1000000,
                                             sglang_verify_expect_resolved=expect), expect_rc=None)
    assert rc != 0
    assert "last-known-good" in out, out[-3000:]
    assert re.search(r"single-stream decode [0-9.]+ tok/s is under the gate of 1000000(\.0)? tok/s", out), \
        "the failure does not quote the figure under its gate"
    assert "resolved: page_size is 1 on the server, the profile expects 16" in out, out[-3000:]
    assert link() == on_gen1, "the host was left on the failed generation"
    assert_env_names(on_gen1)
    assert unit_text(HOST) == old_unit
    assert unit_state(HOST)[0] != pid, "the new generation never ran"
    assert ask(ip_of(HOST)) == "OK"


def test_6_a_package_that_does_not_exist_changes_nothing(on_gen1):
    pid = unit_state(HOST)[0]
    bad = dict(SPEC2, ml_env_packages=SPEC["ml_env_packages"] + ["no-such-package-sglang-deploy==1.0"])
    rc, out, _ = playbook("deploy.yml", bad, expect_rc=None)
    assert rc != 0
    assert "no-such-package-sglang-deploy" in out and "No matching distribution" in out, out[-3000:]
    assert "-pip.log" in out
    assert link() == on_gen1
    assert unit_state(HOST)[0] == pid
    assert ask(ip_of(HOST)) == "OK"
    leftovers = [g for g in sh(HOST, "ls /root/ml-envs").split()
                 if g != "logs" and not sh(HOST, f"test -f /root/ml-envs/{g}/ml-env-generation.json && echo ok || true")]
    assert not leftovers, f"partial generations left behind: {leftovers}"


def test_7_unchanged_spec_installs_nothing(on_gen1):
    """deploy.yml of the inventory's configuration twice: the second run changes nothing (the
    first is a no-op too when the tests before left the host there)."""
    playbook("deploy.yml", {})
    pid = unit_state(HOST)[0]
    _, out, took = playbook("deploy.yml", {})
    recap = [line for line in out.splitlines() if line.startswith(HOST)]
    assert recap and "changed=0" in recap[-1], recap
    assert unit_state(HOST)[0] == pid
    figure(f"no-op deploy (ml_env unchanged) took {took:.0f} s")


def prune_playbook() -> str:
    """A playbook that runs only ml_env's prune (no install: reuses the generations there)."""
    path = scratch("ml-env-prune-") / "prune.yml"
    path.write_text(json.dumps([{
        "name": "Prune the ml_env generations", "hosts": HOST, "gather_facts": False,
        "tasks": [{"name": "Prune", "ansible.builtin.include_role": {"name": "ml_env", "tasks_from": "prune"}}],
    }]))
    return str(path)


def finished_generations():
    return [g for g in sh(HOST, "ls /root/ml-envs").split()
            if sh(HOST, f"test -f /root/ml-envs/{g}/ml-env-generation.json && echo ok || true")]


def test_8_prune_leaves_a_directory_that_is_not_a_generation(on_gen1):
    """A directory under ml_env_root without ml-env-generation.json survives a prune, although
    it is the oldest entry and the keep count leaves room for no more than the other finished
    generations; the active generation and those of the recorded releases stay too."""
    fake = "/root/ml-envs/not-a-generation"
    sh(HOST, f"mkdir -p {fake}/models && echo data > {fake}/models/weights && touch -d 2000-01-01 {fake}")
    try:
        gens = finished_generations()
        unprotected = [g for g in gens if f"/root/ml-envs/{g}" not in (on_gen1, generation_of(SPEC2))]
        pid = unit_state(HOST)[0]
        playbook(prune_playbook(), {"ml_env_keep_generations": len(unprotected)})
        assert sh(HOST, f"cat {fake}/models/weights") == "data"
        assert finished_generations() == gens, "a generation in use or within the keep count was removed"
        assert link() == on_gen1
        assert unit_state(HOST)[0] == pid
    finally:
        sh(HOST, f"rm -rf {fake}")


def test_8b_a_pruned_generation_takes_its_compile_caches_with_it(on_gen1):
    """An old finished generation nothing records (the oldest, beyond the keep count) is removed,
    and so is its compile cache directory /var/cache/sglang/<generation>; the serving
    generation's cache directory stays."""
    old = "000000000000-pruned-test"
    serving = Path(on_gen1).name
    sh(HOST, f"mkdir -p /root/ml-envs/{old} /var/cache/sglang/{old}/triton && echo '{{}}' > /root/ml-envs/{old}/ml-env-generation.json"
             f" && echo kernel > /var/cache/sglang/{old}/triton/k && touch -d 2000-01-01 /root/ml-envs/{old}/ml-env-generation.json")
    try:
        gens = finished_generations()
        unprotected = [g for g in gens if f"/root/ml-envs/{g}" not in (on_gen1, generation_of(SPEC2)) and g != old]
        _, out, _ = playbook(prune_playbook(), {"ml_env_keep_generations": len(unprotected)})
        assert old not in finished_generations(), out[-3000:]
        assert sh(HOST, f"test -e /var/cache/sglang/{old} && echo present || echo absent") == "absent", out[-3000:]
        assert sh(HOST, f"test -d /var/cache/sglang/{serving} && echo present") == "present"
        assert sorted(finished_generations()) == sorted(g for g in gens if g != old)
    finally:
        sh(HOST, f"rm -rf /root/ml-envs/{old} /var/cache/sglang/{old}")


def test_9_a_rollback_to_a_release_whose_generation_is_gone_is_refused(on_gen1):
    """A recorded release naming a generation that is not on the host: rollback.yml refuses it,
    names the host, the release, the missing path and the fix, and changes nothing."""
    releases, fake, missing = "/var/lib/sglang-deploy/releases", "missing-generation-test", "000000000000"
    fact = sh(HOST, "cat /etc/ansible/facts.d/sglang_release.fact")
    current = json.loads(fact)["current"]
    sh(HOST, f"mkdir -p {releases}/{fake} && cp {releases}/{current}/unit {releases}/{current}/env {releases}/{fake}/"
             f" && sed -i 's/^SGLANG_DEPLOY_ML_ENV=.*/SGLANG_DEPLOY_ML_ENV=\"{missing}\"/' {releases}/{fake}/env")
    assert missing in sh(HOST, f"cat {releases}/{fake}/env")
    pid, unit, env = unit_state(HOST)[0], unit_text(HOST), sh(HOST, "cat /etc/sglang/sglang.env")
    try:
        rc, out, _ = playbook("playbooks/rollback.yml", {"rollback_target": fake}, expect_rc=None)
    finally:
        sh(HOST, f"rm -rf {releases}/{fake}")
    flat = " ".join(out.split())
    assert rc != 0
    assert f"{HOST}: release {fake} runs ml_env generation {missing}" in flat, out[-3000:]
    assert f"/root/ml-envs/{missing} is missing" in flat and "Fix:" in flat
    assert link() == on_gen1
    assert unit_state(HOST)[0] == pid, "the server was restarted"
    assert unit_text(HOST) == unit and sh(HOST, "cat /etc/sglang/sglang.env") == env
    assert sh(HOST, "cat /etc/ansible/facts.d/sglang_release.fact") == fact
    assert ask(ip_of(HOST)) == "OK"

"""ml_env's prune choice (plugins/modules/ml_env_prune_plan.py) on directory trees in
tmp_path: only finished generations are removed, never the active, previous, just-built or
release-referenced ones (compared by real path; the releases' generations come from
plugins/module_utils/release/state.py), and never anything else under ml_env_root."""

import json
import os

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.release import state as sglang_release_state


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ansible_collections.sglang.deploy.plugins.modules import ml_env_prune_plan as m  # noqa: E402  pylint: disable=wrong-import-position

RECORD = "ml-env-generation.json"


def generation(root, name, age_s=0, record=True):
    """A generation directory under root; its record is `age_s` seconds old."""
    path = root / name
    (path / "bin").mkdir(parents=True)
    if record:
        marker = path / RECORD
        marker.write_text(json.dumps({"generation": name}))
        stamp = 1_700_000_000 - age_s
        os.utime(marker, (stamp, stamp))
    return path


def activate(link, target):
    if link.is_symlink():
        link.unlink()
    link.symlink_to(target)


def names(paths):
    return sorted(os.path.basename(p) for p in paths)


def test_a_data_directory_under_the_root_survives(tmp_path):
    """ml_env_root: /data with /data/models beside the generations: models is not a generation."""
    data = tmp_path / "data"
    (data / "models" / "qwen").mkdir(parents=True)
    (data / "models" / "qwen" / "config.json").write_text("{}")
    (data / "logs").mkdir()
    for age, name in enumerate(["g4", "g3", "g2", "g1"]):
        generation(data, name, age_s=age * 100)
    link = tmp_path / "ml-env"
    activate(link, data / "g4")
    remove, kept = m.plan(str(data), str(link), keep=0)
    assert names(remove) == ["g1", "g2", "g3"]
    assert "not a finished generation" in kept[str(data / "models")]
    assert "not a finished generation" in kept[str(data / "logs")]
    assert kept[str(data / "g4")].startswith("active")


@pytest.mark.parametrize("through", ["symlink", "real path"])
def test_a_symlinked_root_keeps_its_active_generation(tmp_path, through):
    real = tmp_path / "disk" / "ml-envs"
    real.mkdir(parents=True)
    root = tmp_path / "ml-envs"
    root.symlink_to(real)
    generation(real, "aaa", age_s=300)
    generation(real, "bbb", age_s=0)
    link = tmp_path / "ml-env"
    activate(link, (root if through == "symlink" else real) / "aaa")
    remove, kept = m.plan(str(root), str(link), keep=0)
    assert names(remove) == ["bbb"]
    assert kept[str(root / "aaa")].startswith("active")


def test_the_previous_generation_is_kept_whichever_path_recorded_it(tmp_path):
    real = tmp_path / "disk"
    real.mkdir()
    root = tmp_path / "ml-envs"
    root.symlink_to(real)
    for name in ["cur", "prev", "old"]:
        generation(real, name)
    link = tmp_path / "ml-env"
    activate(link, root / "cur")
    state = tmp_path / "ml_env.fact"
    state.write_text(json.dumps({"active": "cur", "active_dir": str(root / "cur"),
                                 "previous": "prev", "previous_dir": str(real / "prev")}))
    remove, kept = m.plan(str(root), str(link), keep=0, state_fact=str(state))
    assert names(remove) == ["old"]
    assert "previous generation" in kept[str(root / "prev")]


def test_generations_of_recorded_releases_survive(tmp_path):
    """sglang_release keeps 5 ids in its history; all their generations are kept, not only
    those of current and previous."""
    root = tmp_path / "ml-envs"
    for age, name in enumerate(["g0", "g1", "g2", "g3", "g4", "g5", "g6"]):
        generation(root, name, age_s=age * 10)
    link = tmp_path / "ml-env"
    activate(link, root / "g0")
    release = tmp_path / "sglang_release.fact"
    release.write_text(json.dumps({
        "current": "r0", "current_generation": "g0", "previous": "r1", "previous_generation": "g1",
        "history": ["r0", "r1", "r2", "r3", "r4"],
        "generations": {"r0": "g0", "r1": "g1", "r2": "g2", "r3": "g4", "r4": "g5"},
    }))
    remove, kept = m.plan(str(root), str(link), keep=0, release_fact=str(release), release_dir=str(tmp_path / "none"))
    assert names(remove) == ["g3", "g6"]
    assert kept[str(root / "g4")] == "generation of the recorded release r3"
    assert kept[str(root / "g1")] == "generation of the recorded release r1"


def test_generations_of_releases_recorded_by_sglang_release_survive(tmp_path):
    """Seven releases recorded with keep=5 (release.json and environment copies in the release
    directory): the generations of the five kept ones stay, the two oldest are removed."""
    root, releases, fact = tmp_path / "ml-envs", tmp_path / "releases", tmp_path / "sglang_release.fact"
    unit, env = tmp_path / "unit", tmp_path / "env"
    for n in range(7):
        generation(root, "g%d" % n, age_s=100 - n)
        unit.write_text("[Service]\n# %d\n" % n)
        env.write_text('SGLANG_DEPLOY_ML_ENV="g%d"\n' % n)
        sglang_release_state.record(str(releases), str(fact), str(unit), str(env), "g%d" % n, {}, 5)
    shared = json.loads(fact.read_text())
    fact.write_text(json.dumps(dict(shared, generations={})))  # the copies alone protect them
    remove, kept = m.plan(str(root), str(tmp_path / "no-link"), keep=0, release_fact=str(fact),
                          release_dir=str(releases))
    assert names(remove) == ["g0", "g1"]
    assert kept[str(root / "g2")] == "generation of the recorded release %s" % shared["history"][-1]


def test_an_old_record_without_the_generations_map_still_protects_current_and_previous(tmp_path):
    root = tmp_path / "ml-envs"
    for name in ["a", "b", "c"]:
        generation(root, name)
    release = tmp_path / "sglang_release.fact"
    release.write_text(json.dumps({"current": "r1", "current_generation": "a",
                                   "previous": "r0", "previous_generation": "b", "history": ["r1", "r0"]}))
    remove, _ = m.plan(str(root), str(tmp_path / "no-link"), keep=0, release_fact=str(release),
                       release_dir=str(tmp_path / "none"))
    assert names(remove) == ["c"]


def test_the_keep_count_applies_to_unreferenced_generations_newest_first(tmp_path):
    root = tmp_path / "ml-envs"
    for age, name in [(50, "e"), (10, "a"), (40, "d"), (20, "b"), (30, "c"), (0, "active")]:
        generation(root, name, age_s=age)
    link = tmp_path / "ml-env"
    activate(link, root / "active")
    remove, kept = m.plan(str(root), str(link), keep=2)
    assert names(remove) == ["c", "d", "e"]
    assert "2 newest" in kept[str(root / "a")] and "2 newest" in kept[str(root / "b")]
    assert m.plan(str(root), str(link), keep=10)[0] == []


def test_partial_generations_symlinks_and_files_are_never_removed(tmp_path):
    root = tmp_path / "ml-envs"
    generation(root, "partial", record=False)
    fake = generation(root, "fake", record=False)
    (fake / RECORD).symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text("{}")
    outside = generation(tmp_path / "other", "outside")
    (root / "alias").symlink_to(outside)
    (root / "notes.txt").write_text("x")
    remove, kept = m.plan(str(root), str(tmp_path / "no-link"), keep=0)
    assert remove == []
    assert "not a finished generation" in kept[str(root / "partial")]
    assert "not a finished generation" in kept[str(root / "fake")]
    assert "symlink" in kept[str(root / "alias")]
    assert str(root / "notes.txt") not in kept


def test_the_generation_built_in_this_run_is_kept_by_path_or_name(tmp_path):
    root = tmp_path / "ml-envs"
    for name in ["new", "other", "third"]:
        generation(root, name)
    remove, kept = m.plan(str(root), str(tmp_path / "no-link"), keep=0, protect=[str(root / "new"), "third"])
    assert names(remove) == ["other"]
    assert kept[str(root / "new")] == "built in this run"


def test_a_missing_root_plans_nothing_and_an_unreadable_ml_env_fact_is_ignored(tmp_path):
    assert m.plan(str(tmp_path / "absent"), str(tmp_path / "link"), keep=0) == ([], {})
    root = tmp_path / "ml-envs"
    generation(root, "a")
    garbage = tmp_path / "garbage.fact"
    garbage.write_text("not json")
    remove, _ = m.plan(str(root), str(tmp_path / "link"), keep=0, state_fact=str(garbage),
                       release_fact=str(tmp_path / "no-release.fact"))
    assert names(remove) == ["a"], "a missing release index (a fresh host) protects no release"


def _bad_index(tmp_path, kind):
    """A release index that cannot be used: not JSON, not an object, a key of the wrong type, or
    unreadable (a directory where the file should be)."""
    fact = tmp_path / "sglang_release.fact"
    if kind == "unreadable":
        fact.mkdir()
    else:
        fact.write_text({"not json": "{current: g1", "a list": "[1, 2]",
                         "wrong types": json.dumps({"current": "r1", "generations": ["g1"]})}[kind])
    return fact


@pytest.mark.parametrize("kind", ["not json", "a list", "wrong types", "unreadable"])
def test_an_unreadable_or_malformed_release_index_stops_the_prune(tmp_path, run_module, kind):
    """Reading such an index as empty would protect no release's generation: the plan raises
    and the module fails naming the file and the fix, with nothing to remove."""
    root = tmp_path / "ml-envs"
    generation(root, "g1")
    fact = _bad_index(tmp_path, kind)
    with pytest.raises(sglang_release_state.ReleaseStateError) as err:
        m.plan(str(root), str(tmp_path / "link"), keep=0, release_fact=str(fact), release_dir=str(tmp_path / "r"))
    assert str(fact) in str(err.value) and "nothing was removed" in str(err.value)
    out = run_module(m, dict(root=str(root), link=str(tmp_path / "link"), keep=0, state_fact=str(tmp_path / "none"),
                             release_fact=str(fact), release_dir=str(tmp_path / "r")))
    assert out["failed"] and "remove" not in out
    assert out["msg"].startswith("ml_env_prune_plan: the release index %s " % fact)
    assert "Fix: repair the file" in out["msg"]
    assert (root / "g1").is_dir()


def test_main_reports_the_plan_and_changes_nothing(tmp_path, run_module):
    root = tmp_path / "ml-envs"
    generation(root, "old", age_s=10)
    generation(root, "cur")
    (root / "models").mkdir()
    link = tmp_path / "ml-env"
    activate(link, root / "cur")
    args = dict(root=str(root), link=str(link), keep=0, state_fact=str(tmp_path / "none"),
                release_fact=str(tmp_path / "none"), release_dir=str(tmp_path / "none"))
    out = run_module(m, args, check_mode=True)
    assert out["changed"] is False and out["remove"] == [str(root / "old")]
    assert set(out["kept"]) == {str(root / "cur"), str(root / "models")}
    assert (root / "old").is_dir(), "the module only chooses; prune.yml removes"


@pytest.mark.parametrize("root", ["/", "//", "ml-envs"])
def test_main_refuses_the_filesystem_root_and_relative_paths(tmp_path, run_module, root):
    out = run_module(m, dict(root=root, link=str(tmp_path / "ml-env"), keep=2))
    assert out["failed"] and "absolute path other than /" in out["msg"]


def test_main_refuses_a_root_that_resolves_to_the_filesystem_root(tmp_path, run_module):
    (tmp_path / "slash").symlink_to("/")
    out = run_module(m, dict(root=str(tmp_path / "slash"), link=str(tmp_path / "ml-env"), keep=2))
    assert out["failed"] and "other than /" in out["msg"]

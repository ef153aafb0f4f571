"""plugins/modules/model_files_prune_plan.py and protected_model_paths of
plugins/module_utils/release/state.py: a model revision is removed only when nothing uses it: not
the one put in place, not one the server's unit names, not the model of any recorded release,
never a partial download, and the newest unused ones are kept."""

import json
import os
import time

import pytest

from ansible_collections.sglang.deploy.plugins.modules import model_files_prune_plan as prune
from ansible_collections.sglang.deploy.plugins.module_utils.release import state
from ansible_collections.sglang.deploy.plugins.module_utils.model_files.manifest import STAMP

SHAS = ["%040x" % n for n in range(1, 6)]


def revision(model_dir, sha, age):
    path = model_dir / sha
    path.mkdir(parents=True)
    (path / STAMP).write_text(json.dumps({"revision": sha}))
    (path / "model.safetensors").write_text("w")
    old = time.time() - age
    os.utime(path / STAMP, (old, old))
    return str(path)


def test_only_unused_revisions_beyond_keep_are_removed(tmp_path):
    model_dir = tmp_path / "models" / "m"
    paths = [revision(model_dir, sha, age=1000 - 100 * n) for n, sha in enumerate(SHAS)]  # SHAS[-1] newest
    (model_dir / (".%s.partial" % SHAS[0])).mkdir()
    (model_dir / "notes").mkdir()
    unit = tmp_path / "sglang.service"
    unit.write_text("ExecStart=python -m sglang.launch_server --model-path %s --port 1\n" % paths[1])
    # a release that loads revision 0 (a rollback target)
    releases, fact = str(tmp_path / "releases"), str(tmp_path / "sglang_release.fact")
    (tmp_path / "u").write_text("[Service]\n")
    (tmp_path / "e").write_text('SGLANG_DEPLOY_ML_ENV="g1"\n')
    state.record(releases, fact, str(tmp_path / "u"), str(tmp_path / "e"), "g1", {"model-path": paths[0]}, 5)
    assert state.protected_model_paths(releases, fact) == {paths[0]: [state.read_index(fact)["current"]]}

    remove, kept = prune.plan(str(tmp_path / "models"), "m", keep=1, protect=[paths[4]], unit_path=str(unit),
                              release_fact=fact, release_dir=releases)
    assert remove == [paths[2]]
    assert "recorded release" in kept[paths[0]]
    assert "in use" in kept[paths[1]]
    assert "newest other revisions" in kept[paths[3]]
    assert kept[paths[4]] == "put in place by this run"
    assert "partial download" in kept[str(model_dir / (".%s.partial" % SHAS[0]))]
    assert "not a revision" in kept[str(model_dir / "notes")]


def test_a_revision_without_its_stamp_is_never_removed(tmp_path):
    model_dir = tmp_path / "m"
    path = revision(model_dir, SHAS[0], age=10)
    os.unlink(os.path.join(path, STAMP))
    remove, kept = prune.plan(str(tmp_path), "m", keep=0)
    assert remove == [] and "not a verified revision" in kept[path]


def test_a_unit_naming_a_longer_path_does_not_protect_its_prefix(tmp_path):
    model_dir = tmp_path / "m"
    path = revision(model_dir, SHAS[0], age=10)
    unit = tmp_path / "u.service"
    unit.write_text("--model-path %s-copy\n" % path)
    remove, _ = prune.plan(str(tmp_path), "m", keep=0, unit_path=str(unit))
    assert remove == [path]


def test_the_module_refuses_a_root_of_slash(run_module):
    out = run_module(prune, {"root": "/", "name": "m", "keep": 1})
    assert out["failed"] is True and "model_files_root" in out["msg"]


def test_on_shared_storage_a_revision_a_host_names_stays_and_the_reason_names_the_variable(tmp_path):
    """The shared storage's plan: no unit, no releases; what a host of the inventory names
    (in_use) stays, and the newest others kept are counted by model_files_shared_keep_revisions."""
    model_dir = tmp_path / "m"
    paths = [revision(model_dir, sha, age=1000 - 100 * n) for n, sha in enumerate(SHAS)]  # SHAS[-1] newest
    remove, kept = prune.plan(str(tmp_path), "m", keep=1, protect=[paths[4]], release_fact="", in_use=[paths[0]],
                              keep_variable="model_files_shared_keep_revisions")
    assert remove == [paths[2], paths[1]]
    assert kept[paths[0]] == "named by a host of the inventory (model_files_revision)"
    assert kept[paths[4]] == "put in place by this run"
    assert kept[paths[3]] == "one of the 1 newest other revisions (model_files_shared_keep_revisions)"
    remove, _ = prune.plan(str(tmp_path), "m", keep=0, protect=[paths[4]], release_fact="")
    assert remove == [paths[3], paths[2], paths[1], paths[0]]


def test_a_missing_release_index_protects_no_release(tmp_path):
    model_dir = tmp_path / "m"
    path = revision(model_dir, SHAS[0], age=10)
    remove, _ = prune.plan(str(tmp_path), "m", keep=0, release_fact=str(tmp_path / "none.fact"),
                           release_dir=str(tmp_path / "releases"))
    assert remove == [path]


@pytest.mark.parametrize("content", ["{current", "[1, 2]", json.dumps({"current_args": "--model-path x"}), None])
def test_an_unreadable_or_malformed_release_index_stops_the_prune(tmp_path, run_module, content):
    """Not JSON, not an object, a key of the wrong type, unreadable (a directory): the model of a
    recorded release would be unknown, so the module fails naming the file and the fix."""
    path = revision(tmp_path / "models" / "m", SHAS[0], age=10)
    fact = tmp_path / "sglang_release.fact"
    if content is None:
        fact.mkdir()
    else:
        fact.write_text(content)
    with pytest.raises(state.ReleaseStateError, match="nothing was removed"):
        prune.plan(str(tmp_path / "models"), "m", keep=0, release_fact=str(fact), release_dir=str(tmp_path / "r"))
    out = run_module(prune, {"root": str(tmp_path / "models"), "name": "m", "keep": 0,
                             "release_fact": str(fact), "release_dir": str(tmp_path / "r")})
    assert out["failed"] is True and "remove" not in out
    assert out["msg"].startswith("model_files_prune_plan: the release index %s " % fact)
    assert "model directories" in out["msg"] and "Fix: repair the file" in out["msg"]
    assert os.path.isdir(path)

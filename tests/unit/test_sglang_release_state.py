"""The release state of roles/sglang_release (plugins/module_utils/release/state.py) and its
module (plugins/modules/sglang_release.py), on release directories in tmp_path:
record, resolve, mark_current, the releases recorded before release.json existed, the ml_env
generations every kept release protects, no secret flag on disk, atomic writes, check mode."""

import base64
import hashlib
import json
import os
import stat

import pytest
from ansible_collections.sglang.deploy.plugins.modules import sglang_release as module# plugins/modules/sglang_release.py (tests/conftest.py)
from ansible_collections.sglang.deploy.plugins.module_utils.release import state
from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import SECRET_FLAGS

KEY = "sk-release-0123456789abcdef"


class Host:
    """A host in tmp_path: the files sglang_server renders, the release directory, the index."""

    def __init__(self, tmp_path):
        self.dir, self.fact = str(tmp_path / "releases"), str(tmp_path / "facts.d" / "sglang_release.fact")
        self.unit, self.env = tmp_path / "sglang.service", tmp_path / "sglang.env"

    def serve(self, n, generation=None, with_line=True):
        """Render release number n: its own port and generation (g<n>); returns its args."""
        generation = "g%d" % n if generation is None else generation
        self.unit.write_text("[Service]\nExecStart=/root/ml-env/bin/python -m sglang.launch_server --port %d\n"
                             % (30000 + n))
        self.env.write_text('PATH="/root/ml-env/bin:/usr/bin"\n'
                            + ('SGLANG_DEPLOY_ML_ENV="%s"\n' % generation if with_line else ""))
        return {"model-path": "/models/m", "port": 30000 + n}

    def record(self, n, keep=5, **kwargs):
        args = self.serve(n, **kwargs)
        return state.record(self.dir, self.fact, str(self.unit), str(self.env), "g%d" % n, args, keep)

    def index(self):
        with open(self.fact, encoding="utf-8") as handle:
            return json.load(handle)

    def files(self):
        """{path: bytes} of every file the state wrote."""
        found = {}
        for top in (self.dir, os.path.dirname(self.fact)):
            for where, _, names in os.walk(top):
                for name in names:
                    with open(os.path.join(where, name), "rb") as handle:
                        found[os.path.join(where, name)] = handle.read()
        return found


@pytest.fixture(name="host")
def fixture_host(tmp_path):
    return Host(tmp_path)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


# --- record ---------------------------------------------------------------------------------

def test_the_id_is_the_one_record_yml_gave_so_existing_releases_keep_their_ids(host):
    """record.yml named a release (slurp | map(attribute='content') | join('\\n') | hash('sha256'))[:12]."""
    host.serve(1)
    slurped = [base64.b64encode(p.read_bytes()).decode() for p in (host.unit, host.env)]
    expected = hashlib.sha256("\n".join(slurped).encode()).hexdigest()[:12]
    assert state.release_id(host.unit.read_bytes(), host.env.read_bytes()) == expected
    assert host.record(1) == (True, expected)


def test_a_new_release_is_kept_and_becomes_current(host):
    _, first = host.record(1)
    changed, second = host.record(2)
    assert changed and second != first
    copy = os.path.join(host.dir, second)
    assert open(os.path.join(copy, "unit")).read() == host.unit.read_text()
    assert open(os.path.join(copy, "env")).read() == host.env.read_text()
    stored = json.load(open(os.path.join(copy, "release.json")))
    assert {k: stored[k] for k in ("id", "generation", "args")} == {
        "id": second, "generation": "g2", "args": {"model-path": "/models/m", "port": 30002}}
    assert stored["recorded_at"].endswith("Z")
    assert mode(copy) == 0o700 and mode(os.path.join(copy, "env")) == 0o600 and mode(host.fact) == 0o644
    assert host.index() == {
        "current": second, "current_generation": "g2", "current_args": {"model-path": "/models/m", "port": 30002},
        "previous": first, "previous_generation": "g1", "previous_args": {"model-path": "/models/m", "port": 30001},
        "history": [second, first], "generations": {second: "g2", first: "g1"}}


def test_recording_the_same_content_again_changes_nothing(host):
    _, rid = host.record(1)
    before = {path: (data, os.stat(path).st_mtime_ns) for path, data in host.files().items()}
    assert host.record(1) == (False, rid)
    assert {path: (data, os.stat(path).st_mtime_ns) for path, data in host.files().items()} == before


def test_the_history_keeps_keep_ids_and_every_kept_release_protects_its_generation(host):
    ids = [host.record(n, keep=3)[1] for n in range(1, 7)]
    index = host.index()
    assert index["history"] == ids[::-1][:3]
    assert index["generations"] == {ids[5]: "g6", ids[4]: "g5", ids[3]: "g4"}
    protected = state.protected_generations(host.dir, host.fact)
    assert protected == {"g6": [ids[5]], "g5": [ids[4]], "g4": [ids[3]]}


def test_generations_of_all_five_kept_releases_are_protected_not_only_current_and_previous(host):
    ids = [host.record(n)[1] for n in range(1, 8)]
    assert sorted(state.protected_generations(host.dir, host.fact)) == ["g3", "g4", "g5", "g6", "g7"]
    assert host.index()["history"] == ids[::-1][:5]


def test_a_release_recorded_again_moves_to_the_front_of_the_history_once(host):
    first = host.record(1)[1]
    second = host.record(2)[1]
    assert host.record(1) == (True, first)
    index = host.index()
    assert index["history"] == [first, second]
    assert (index["current"], index["previous"], index["previous_generation"]) == (first, second, "g2")


def test_the_generation_is_read_from_the_environment_file_and_a_contradiction_is_refused(host):
    args = host.serve(1)
    _, rid = state.record(host.dir, host.fact, str(host.unit), str(host.env), "", args, 5)
    assert host.index()["current_generation"] == "g1"
    with pytest.raises(state.ReleaseStateError, match="names SGLANG_DEPLOY_ML_ENV='g1'. Fix: pass"):
        state.record(host.dir, host.fact, str(host.unit), str(host.env), "other", args, 5)
    assert host.index()["current"] == rid


def test_a_missing_unit_names_the_fix(host):
    with pytest.raises(state.ReleaseStateError, match="Fix: run sglang_server"):
        state.record(host.dir, host.fact, str(host.unit), str(host.env), "g1", {}, 5)
    assert not os.path.exists(host.fact)


def test_secret_flags_are_never_written(host):
    args = dict(host.serve(1), **{"api-key": KEY, "admin_api_key": KEY + "-admin", "--watermark-key": KEY})
    state.record(host.dir, host.fact, str(host.unit), str(host.env), "g1", args, 5)
    host.record(2)
    assert not any(KEY.encode() in data for data in host.files().values())
    assert host.index()["previous_args"] == {"model-path": "/models/m", "port": 30001}
    assert state.public_args({flag: 1 for flag in SECRET_FLAGS}) == {}


# --- writes are atomic ------------------------------------------------------------------------

def test_a_write_that_fails_leaves_the_old_index_and_no_temporary_file(host, monkeypatch):
    host.record(1)
    before = host.files()
    moves = []

    def fail(src, dst):
        moves.append((src, dst))
        raise OSError("disk full")

    monkeypatch.setattr(state.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        host.record(2)
    assert moves and all(os.path.dirname(src) == os.path.dirname(dst) for src, dst in moves)
    assert {p: d for p, d in host.files().items() if p in before} == before
    assert not [p for p in host.files() if os.path.basename(p).startswith(".")]


# --- resolve and mark_current -----------------------------------------------------------------

def test_resolve_current_previous_and_an_id(host):
    ids = [host.record(n)[1] for n in (1, 2, 3)]
    assert state.resolve(host.dir, host.fact, "current")["id"] == ids[2]
    previous = state.resolve(host.dir, host.fact, "previous")
    assert (previous["id"], previous["generation"], previous["args"]["port"]) == (ids[1], "g2", 30002)
    assert previous["unit"] == os.path.join(host.dir, ids[1], "unit")


def test_restoring_an_id_that_is_neither_current_nor_previous_gives_its_own_generation_and_args(host):
    """The bug: restore.yml wrote the previous slot's generation and flags into `current` and
    exported the previous slot's flags as sglang_release_restored_args."""
    ids = [host.record(n)[1] for n in (1, 2, 3)]
    release = state.resolve(host.dir, host.fact, ids[0])
    assert (release["generation"], release["args"]) == ("g1", {"model-path": "/models/m", "port": 30001})
    changed, index = state.mark_current(host.dir, host.fact, ids[0])
    assert changed and index == host.index()
    assert (index["current"], index["current_generation"], index["current_args"]["port"]) == (ids[0], "g1", 30001)
    assert (index["previous"], index["previous_generation"], index["previous_args"]["port"]) == (ids[2], "g3", 30003)
    assert index["history"] == [ids[0], ids[2], ids[1]]
    assert state.mark_current(host.dir, host.fact, ids[0]) == (False, index)


def test_unknown_targets_are_refused_naming_the_fix(host):
    with pytest.raises(state.ReleaseStateError, match="no 'previous' release is recorded in .*nothing to go back to"):
        state.resolve(host.dir, host.fact, "previous")
    ids = [host.record(n)[1] for n in (1, 2)]
    for target in ("000000000000", "../etc", ""):
        with pytest.raises(state.ReleaseStateError) as err:
            state.resolve(host.dir, host.fact, target or "nosuch")
        assert "has no unit and environment copy" in str(err.value)
        assert "Fix: choose a recorded release id, one of %s, %s." % (ids[1], ids[0]) in str(err.value)
    os.unlink(os.path.join(host.dir, ids[0], "env"))
    with pytest.raises(state.ReleaseStateError, match="release '%s' has no unit and environment copy" % ids[0]):
        state.mark_current(host.dir, host.fact, ids[0])


def test_releases_recorded_before_release_json_existed(host, tmp_path):
    """Copies without release.json and an index written by the Jinja of earlier record.yml."""
    for rid, generation in [("rcur", "gc"), ("rprev", "gp"), ("rold", "go")]:
        os.makedirs(os.path.join(host.dir, rid))
        (tmp_path / "releases" / rid / "unit").write_text("[Service]\n")
        (tmp_path / "releases" / rid / "env").write_text('SGLANG_DEPLOY_ML_ENV="%s"\n' % generation)
    os.makedirs(os.path.dirname(host.fact))
    with open(host.fact, "w") as handle:
        json.dump({"current": "rcur", "current_generation": "gc", "current_args": {"port": 1},
                   "previous": "rprev", "previous_generation": "gp", "previous_args": {"port": 2},
                   "history": ["rcur", "rprev", "rold"], "generations": {"rcur": "gc", "rprev": "gp"}}, handle)
    assert state.resolve(host.dir, host.fact, "current")["args"] == {"port": 1}
    assert state.resolve(host.dir, host.fact, "previous")["generation"] == "gp"
    assert state.resolve(host.dir, host.fact, "rold") == {
        "id": "rold", "generation": "go", "args": {},
        "unit": os.path.join(host.dir, "rold", "unit"), "env": os.path.join(host.dir, "rold", "env")}
    assert state.protected_generations(host.dir, host.fact) == {"gc": ["rcur"], "gp": ["rprev"], "go": ["rold"]}
    _, index = state.mark_current(host.dir, host.fact, "rprev")
    assert (index["current_args"], index["previous_args"], index["previous_generation"]) == ({"port": 2}, {"port": 1}, "gc")


def test_list_names_every_release_and_whether_its_copies_are_there(host):
    ids = [host.record(n)[1] for n in (1, 2)]
    os.unlink(os.path.join(host.dir, ids[0], "unit"))
    index, releases = state.list_releases(host.dir, host.fact)
    assert index == host.index()
    assert [(r["id"], r["generation"], r["present"]) for r in releases] == [(ids[1], "g2", True), (ids[0], "g1", False)]
    assert state.list_releases(host.dir, host.fact + ".none") == (state.read_index(host.fact + ".none"), [])


def test_an_unreadable_index_is_refused_for_writes_and_for_protection(host):
    os.makedirs(os.path.dirname(host.fact))
    with open(host.fact, "w") as handle:
        handle.write("[1, 2]")
    with pytest.raises(state.ReleaseStateError, match="is not a JSON object .* Fix: move it aside"):
        host.record(1)
    for protected in (state.protected_generations, state.protected_model_paths):
        with pytest.raises(state.ReleaseStateError, match="release index %s is not a JSON object .* nothing was "
                                                          "removed. Fix: repair the file" % host.fact):
            protected(host.dir, host.fact)


def test_a_missing_index_protects_nothing_and_a_key_of_the_wrong_type_is_malformed(host):
    assert state.protected_generations(host.dir, host.fact) == {}
    assert state.protected_model_paths(host.dir, host.fact) == {}
    os.makedirs(os.path.dirname(host.fact))
    with open(host.fact, "w") as handle:
        json.dump({"current": "r1", "history": "r1"}, handle)
    with pytest.raises(state.ReleaseStateError, match="has keys of the wrong type: history"):
        state.protected_generations(host.dir, host.fact)
    assert state.read_index(host.fact, strict=False)["current"] == ""  # the quality gate reads it as none


def test_the_module_fails_on_an_unreadable_index_when_asked_what_is_protected(host, run_module):
    os.makedirs(host.fact)  # a directory: cannot be read
    out = run_module(module, args_of(host, state="protected"))
    assert out["failed"] and "Fix: repair the file" in out["msg"] and out["fact"] == host.fact


# --- the module -------------------------------------------------------------------------------

def args_of(host, **extra):
    return dict({"release_dir": host.dir, "fact": host.fact}, **extra)


def test_module_records_resolves_and_marks_current(host, run_module):
    flags = host.serve(1)
    out = run_module(module, args_of(host, state="record", unit_path=str(host.unit), env_path=str(host.env),
                                     generation="g1", args=dict(flags, api_key=KEY)))
    assert out["changed"] and out["generation"] == "g1" and out["args"] == flags
    assert out["state"]["current"] == out["id"] and KEY not in json.dumps(out)
    first = out["id"]
    host.record(2)
    out = run_module(module, args_of(host, state="resolve", target=first))
    assert (out["changed"], out["id"], out["generation"], out["args"]) == (False, first, "g1", flags)
    out = run_module(module, args_of(host, state="mark_current", target=first))
    assert out["changed"] and out["state"]["current"] == first and out["state"]["current_args"] == flags
    out = run_module(module, args_of(host, state="protected"))
    assert set(out["protected"]) == {"g1", "g2"}
    out = run_module(module, args_of(host))
    assert [r["id"] for r in out["releases"]] == [first, host.index()["previous"]]


def test_module_check_mode_reports_changes_and_writes_nothing(host, run_module):
    flags = host.serve(1)
    record = args_of(host, state="record", unit_path=str(host.unit), env_path=str(host.env), generation="g1", args=flags)
    out = run_module(module, record, check_mode=True)
    assert out["changed"] and out["id"] and host.files() == {}
    first = run_module(module, record)["id"]
    host.record(2)
    before = host.files()
    out = run_module(module, args_of(host, state="mark_current", target=first), check_mode=True)
    assert out["changed"] and out["state"]["current"] != first and host.files() == before
    host.serve(1)  # release 1 rendered again: recording it would make it current
    out = run_module(module, record, check_mode=True)
    assert (out["changed"], out["id"], out["state"]["current"]) == (True, first, host.index()["current"])
    assert host.files() == before


def test_module_refusals(host, run_module):
    out = run_module(module, args_of(host, state="resolve", target="nosuch"))
    assert out["failed"] and "release 'nosuch' has no unit and environment copy" in out["msg"]
    out = run_module(module, args_of(host, state="record", env_path=str(host.env)))
    assert out["failed"] and "state=record needs unit_path" in out["msg"]
    out = run_module(module, args_of(host, state="list", keep=0))
    assert out["failed"] and "at least 1" in out["msg"]

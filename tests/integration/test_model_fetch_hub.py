"""plugins/modules/model_files_fetch.py with the real huggingface_hub client (the pin in
requirements.txt) against tests/hub/hub_endpoint.py, serving the project's tiny model
(roles/model_files/files/tiny-qwen2) as sglang-deploy/tiny-qwen2 from a thread. No network: every
request goes to the endpoint on 127.0.0.1, and its request log is the evidence of what the client
asked for."""

import filecmp
import json
import os
import random
import sys
import time

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ansible_collections.sglang.deploy.tests.hub import hub_layout
from ansible_collections.sglang.deploy.plugins.modules import model_files_fetch  # noqa: E402
from ansible_collections.sglang.deploy.plugins.module_utils.model_files import hub as model_files_hub  # noqa: E402
from ansible_collections.sglang.deploy.tests.hub.hub_endpoint import HubEndpoint

# imported here, so that the client's log handler writes to the session's stderr, not to a test's
# captured one (run_module captures it)
pytest.importorskip("huggingface_hub.file_download")

REPO = hub_layout.TINY_QWEN2_REPO
SRC = hub_layout.TINY_QWEN2
SRC_FILES = hub_layout.list_files(SRC)  # the model's files (the folder's own stamp is not one)
STAMP = ".sglang-deploy-model.json"
WEIGHTS = "model.safetensors"
BIG_REPO = "sglang-deploy/big-weights"
MIB = 1 << 20
BIG = 25 * MIB


@pytest.fixture(name="hub")
def fixture_hub(tmp_path, monkeypatch):
    for var in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    endpoint = HubEndpoint(str(tmp_path / "hub")).start()
    endpoint.sha = hub_layout.lay_out(SRC, endpoint.root)
    yield endpoint
    endpoint.stop()


def fetch(hub, root, **params):
    args = dict(repo_id=REPO, revision=hub.sha, root=str(root), endpoint=hub.url, require_sha=True)
    args.update(params)
    return model_files_fetch.run(args)


def gets(hub, name=None):
    """The GETs of model files (resolve URLs), of one file when named."""
    return [e for e in hub.requests("GET", name) if "/resolve/" in e["path"]]


def same_files(directory):
    names = list(SRC_FILES)
    match, mismatch, errors = filecmp.cmpfiles(SRC, directory, names, shallow=False)
    return match == names and not mismatch and not errors


def test_fresh_fetch_then_rerun_through_the_module(hub, tmp_path, run_module):
    """Fetch by sha through main(): the files equal the source, the stamp is written, the
    partial directory is gone; the rerun reads nothing and asks the endpoint nothing."""
    args = dict(repo_id=REPO, revision=hub.sha, root=str(tmp_path / "models"), endpoint=hub.url,
                require_sha=True, token="hf_test_secret")
    started = time.time()
    first = run_module(model_files_fetch, args)
    fresh_s = time.time() - started
    dest = tmp_path / "models" / "tiny-qwen2" / hub.sha
    assert first["changed"] and first["path"] == str(dest) and first["revision"] == hub.sha
    assert same_files(dest)
    assert sorted(os.listdir(dest)) == sorted(SRC_FILES + [STAMP])  # no .cache, no partial file
    assert os.listdir(dest.parent) == [hub.sha]
    stamp = json.loads((dest / STAMP).read_text())
    assert stamp["repo"] == REPO and stamp["revision"] == hub.sha and stamp["source"] == "hub:" + hub.url
    assert stamp["files_count"] == 7 and stamp["bytes"] == first["bytes"] == first["fetched_bytes"]
    assert first["preflight"]["need_bytes"] == stamp["bytes"]
    assert all(e["auth"] for e in hub.log)  # the token reached the endpoint as a header ...
    assert "hf_test_secret" not in json.dumps(first) + (dest / STAMP).read_text()  # ... and nowhere else
    requests = len(hub.log)

    started = time.time()
    again = run_module(model_files_fetch, args)
    rerun_s = time.time() - started
    print("fresh fetch %.3f s (module %.3f s), no-op rerun %.3f s (module %.3f s)"
          % (fresh_s, first["seconds"], rerun_s, again["seconds"]))
    assert not again["changed"] and again["fetched_bytes"] == 0 and again["repaired"] == []
    assert again["manifest_digest"] == first["manifest_digest"] == stamp["manifest_digest"]
    assert len(hub.log) == requests and rerun_s < 1.0


def test_branch_refused_with_require_sha_resolved_without(hub, tmp_path):
    with pytest.raises(model_files_fetch.FetchError, match=r"revision='main' is a branch or tag.*require_sha"):
        fetch(hub, tmp_path / "models", revision="main")
    assert hub.log == []  # refused before asking anything
    result = fetch(hub, tmp_path / "models", revision="main", require_sha=False)
    assert result["revision"] == hub.sha and result["path"].endswith("/" + hub.sha)
    with pytest.raises(model_files_fetch.FetchError, match="RevisionNotFoundError"):
        fetch(hub, tmp_path / "models", revision="no-such-branch", require_sha=False)


@pytest.fixture(name="big")
def fixture_big(hub, tmp_path):
    """A second repository whose weights span several of the client's 10 MiB read chunks: the
    client writes a chunk to disk only once it has it whole, so a resumed request starts at the
    last whole chunk (the tiny model's weights, 824 KB, always start again at byte 0)."""
    src = tmp_path / "big-src"
    src.mkdir()
    (src / "config.json").write_bytes(open(os.path.join(SRC, "config.json"), "rb").read())
    (src / WEIGHTS).write_bytes(random.Random(0).randbytes(BIG))
    return hub_layout.lay_out(str(src), hub.root, BIG_REPO)


def test_cut_connection_resumes_with_a_range_request(hub, big, tmp_path):
    """The connection drops after 15 MiB of the weights: in the same run the client asks for
    the rest from its last whole chunk (Range: bytes=10485760-), and the file is whole."""
    hub.add_fault(WEIGHTS, cut_after=15 * MIB)
    result = fetch(hub, tmp_path / "models", repo_id=BIG_REPO, revision=big)
    requests = gets(hub, WEIGHTS)
    print("GETs of %s: %s" % (WEIGHTS, [(e["status"], e["range"], e["sent"]) for e in requests]))
    assert [(e["status"], e["range"], e["sent"]) for e in requests] == [
        (200, None, 15 * MIB), (206, "bytes=%d-" % (10 * MIB), BIG - 10 * MIB)]
    assert result["changed"] and result["bytes"] == BIG + 778


def test_a_slow_fetch_can_be_followed_from_the_files_on_disk(hub, big, tmp_path):
    """The fetch says what it fills (progress_file) and the progress module's measure reads how far
    it got from the client's temporary files, while the real client downloads at 5 MiB/s; the
    record is gone when the run ends."""
    import threading

    from ansible_collections.sglang.deploy.plugins.module_utils.model_files import progress

    hub.rate = 5 * MIB
    record_path = str(tmp_path / "models" / ".big-weights.progress.json")
    result, seen = {}, []
    worker = threading.Thread(target=lambda: result.update(fetch(
        hub, tmp_path / "models", repo_id=BIG_REPO, revision=big, progress_file=record_path)))
    worker.start()
    while worker.is_alive():
        record = progress.read(record_path)
        if record:
            seen.append(progress.measure(record))
            line = progress.line(record, *seen[-1])
        time.sleep(0.5)
    worker.join()
    print("measured (bytes, files):", seen, "\nlast line:", line)
    assert result["changed"] and not os.path.exists(record_path)
    assert record["files"] == {"config.json": 778, WEIGHTS: BIG} and record["phase"] == "fetch"
    assert seen == sorted(seen), "the bytes done went backwards"
    assert any(0 < b < BIG for b, _ in seen), "no figure between nothing and everything"
    assert line.startswith("fetch %s@%s: " % (BIG_REPO, big[:12])) and " of 26.2 MB (" in line


def test_failed_run_leaves_finished_files_for_the_next(hub, big, tmp_path):
    """Cut, then the resumed request fails (503): the run fails and keeps the partial directory
    with the finished file; the next run fetches only the unfinished one, and from byte 0: the
    client does not carry a cut-off file over from one run to the next."""
    hub.add_fault(WEIGHTS, cut_after=15 * MIB)
    hub.add_fault(WEIGHTS, status=503)
    with pytest.raises(model_files_fetch.FetchError, match="download of .* failed"):
        fetch(hub, tmp_path / "models", repo_id=BIG_REPO, revision=big)
    partial = tmp_path / "models" / "big-weights" / (".%s.partial" % big)
    assert sorted(os.listdir(partial)) == [".cache", "config.json"]
    assert [(e["range"], e["status"]) for e in gets(hub, WEIGHTS)] == [(None, 200), ("bytes=%d-" % (10 * MIB), 503)]
    del hub.log[:]

    result = fetch(hub, tmp_path / "models", repo_id=BIG_REPO, revision=big)
    second = [(e["path"].rsplit("/", 1)[1], e["range"], e["sent"]) for e in gets(hub)]
    print("second run GETs: %s" % second)
    assert second == [(WEIGHTS, None, BIG)]
    assert result["preflight"]["need_bytes"] == BIG and not partial.exists()


def test_full_verify_repairs_only_the_corrupted_file(hub, tmp_path):
    dest = fetch(hub, tmp_path / "models")["path"]
    with open(os.path.join(dest, WEIGHTS), "r+b") as handle:  # same size: the quick check cannot see it
        handle.seek(4096)
        handle.write(b"\0" * 64)
    del hub.log[:]
    assert not fetch(hub, tmp_path / "models")["changed"] and hub.log == []
    result = fetch(hub, tmp_path / "models", verify="full")
    assert result["changed"] and result["repaired"] == [WEIGHTS] and result["fetched_bytes"] == 824248
    assert [e["path"].rsplit("/", 1)[1] for e in gets(hub)] == [WEIGHTS]
    assert same_files(dest) and not os.path.exists(os.path.join(dest, ".cache"))
    assert not fetch(hub, tmp_path / "models", verify="full")["changed"]


def test_disk_preflight_refuses_before_any_byte(hub, tmp_path):
    with pytest.raises(model_files_fetch.FetchError) as refused:
        fetch(hub, tmp_path / "models", free_bytes_override=500000)
    message = str(refused.value)
    assert "need 880660 bytes" in message and "free 500000 bytes" in message
    assert refused.value.result["preflight"] == {"need_bytes": 880660, "free_bytes": 500000}
    assert gets(hub) == [] and not (tmp_path / "models" / "tiny-qwen2").exists()
    with pytest.raises(model_files_fetch.FetchError, match="min_free_bytes 100000"):
        fetch(hub, tmp_path / "models", free_bytes_override=900000, min_free_bytes=100000)


def test_fleet_local_copy_asks_the_hub_once_per_file(hub, tmp_path, monkeypatch):
    """Host A fetches from the Hub; host B copies A's revision directory (source: path) and
    checks it against A's stamp: the endpoint served every file once in all, and host B needed
    no huggingface_hub."""
    host_a = fetch(hub, tmp_path / "a" / "models")
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import huggingface_hub fails from here on
    host_b = model_files_fetch.run(dict(source="path", src_path=host_a["path"], root=str(tmp_path / "b" / "models"),
                                        require_sha=True))
    assert host_b["changed"] and host_b["revision"] == hub.sha
    assert host_b["manifest_digest"] == host_a["manifest_digest"] and same_files(host_b["path"])
    stamp = json.loads(open(os.path.join(host_b["path"], STAMP), encoding="utf-8").read())
    assert stamp["repo"] == REPO and stamp["source"] == "path:" + host_a["path"]
    served = [e["path"].rsplit("/", 1)[1] for e in gets(hub)]
    assert sorted(served) == sorted(SRC_FILES)

    with open(os.path.join(host_b["path"], "config.json"), "a", encoding="utf-8") as handle:
        handle.write(" ")  # another size: the quick check sees it and the copy is repaired from A
    repaired = model_files_fetch.run(dict(source="path", src_path=host_a["path"], root=str(tmp_path / "b" / "models")))
    assert repaired["repaired"] == ["config.json"] and same_files(host_b["path"])
    assert len(gets(hub)) == len(served)


def test_a_damaged_source_copy_is_named_and_not_kept(hub, tmp_path):
    host_a = fetch(hub, tmp_path / "a" / "models")
    with open(os.path.join(host_a["path"], "tokenizer.json"), "r+b") as handle:
        handle.write(b"[")  # same size, another sha256 than A's stamp says
    with pytest.raises(model_files_fetch.FetchError, match="differ from the source after fetching them twice: tokenizer.json$"):
        model_files_fetch.run(dict(source="path", src_path=host_a["path"], root=str(tmp_path / "b" / "models")))
    partial = tmp_path / "b" / "models" / "tiny-qwen2" / (".%s.partial" % hub.sha)
    assert sorted(os.listdir(partial)) == sorted(set(SRC_FILES) - {"tokenizer.json"})


def test_allow_patterns_select_the_files_and_belong_to_the_revision(hub, tmp_path):
    result = fetch(hub, tmp_path / "models", allow_patterns=["*.json"])
    assert sorted(os.listdir(result["path"])) == sorted([n for n in SRC_FILES if n.endswith(".json")] + [STAMP])
    assert {e["path"].rsplit("/", 1)[1] for e in gets(hub)} == {n for n in SRC_FILES if n.endswith(".json")}
    with pytest.raises(model_files_fetch.FetchError, match=r"allow_patterns \['\*\.json'\], not \[\]"):
        fetch(hub, tmp_path / "models")
    with pytest.raises(model_files_fetch.FetchError, match="select no file"):
        fetch(hub, tmp_path / "other", allow_patterns=["*.gguf"])


def test_orphans_of_a_killed_run_are_dropped(tmp_path):
    download = tmp_path / ".cache" / "huggingface" / "download"
    download.mkdir(parents=True)
    (download / ("model.safetensors.%s.1a2b3c4d.incomplete" % ("e" * 64))).write_bytes(b"x" * 1000)
    (download / "model.safetensors.metadata").write_text("kept")
    assert model_files_hub.drop_orphans(str(tmp_path)) == 1000
    assert os.listdir(download) == ["model.safetensors.metadata"]


def test_hub_source_without_the_client_names_the_interpreter(hub, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(model_files_fetch.FetchError) as missing:
        fetch(hub, tmp_path / "models", revision="main", require_sha=False)
    assert sys.executable in str(missing.value) and "ansible_python_interpreter" in str(missing.value)


def test_documentation_lists_the_argument_spec():
    options = yaml.safe_load(model_files_fetch.DOCUMENTATION)["options"]
    spec = model_files_fetch.ARGUMENT_SPEC
    assert sorted(options) == sorted(spec)
    for name, option in options.items():
        assert {k: option.get(k) for k in ("type", "default", "choices", "required")} == \
            {k: spec[name].get(k) for k in ("type", "default", "choices", "required")}, name
    assert spec["token"]["no_log"]


def test_endpoint_credentials_stay_out_of_the_stamp_and_the_result(hub, tmp_path, run_module):
    """A mirror's URL may carry user:password@: the client gets it as given, the stamp's source
    and the module's result name the mirror without them."""
    scheme, rest = hub.url.split("://", 1)
    endpoint = f"{scheme}://mirror-user:mirror-pass-123@{rest}"
    args = dict(repo_id=REPO, revision=hub.sha, root=str(tmp_path / "models"), endpoint=endpoint, require_sha=True)
    out = run_module(model_files_fetch, args)
    dest = tmp_path / "models" / "tiny-qwen2" / hub.sha
    stamp = json.loads((dest / STAMP).read_text())
    assert stamp["source"] == "hub:" + hub.url
    # the result's invocation echoes the module's arguments: what no_log hides on the tasks of
    # roles/model_files/tasks/fetch.yml when the endpoint carries credentials
    shown = {k: v for k, v in out.items() if k != "invocation"}
    assert "mirror-pass-123" not in json.dumps(shown) and "mirror-user" not in (dest / STAMP).read_text()
    # a failure names the mirror without them too
    with pytest.raises(model_files_fetch.FetchError) as failed:
        fetch(hub, tmp_path / "other", endpoint=endpoint, repo_id="nobody/none")
    assert hub.url in str(failed.value) and "mirror-pass-123" not in str(failed.value)

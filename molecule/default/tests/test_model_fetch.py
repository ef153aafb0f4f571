"""roles/model_files puts one revision of the tiny model on the scenario's host with the real
huggingface_hub client (the host's ML environment) against tests/hub/hub_endpoint.py on the
controller: a local endpoint that serves the model in the Hugging Face Hub's HTTP layout, so the
real client runs offline. The role, its module and the client are the things under test; the
endpoint only serves files. A model root of its own (/data/models-fetched): the served model is
not touched."""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
from pathlib import Path

import pytest

from ansible_collections.sglang.deploy.tests.hub import hub_layout  # noqa: E402
from ansible_collections.sglang.deploy.molecule.shared.fleet import controller_address, figure, playbook, scratch, sh  # noqa: E402
from ansible_collections.sglang.deploy.tests.hub.hub_endpoint import HubEndpoint, refusing_port  # noqa: E402

testinfra_hosts = ["molecule-sglang-1"]
HOST = "molecule-sglang-1"
ROOT = "/data/models-fetched"
NAME = "tiny-qwen2"
WEIGHTS = "model.safetensors"


@pytest.fixture(name="hub", scope="module")
def fixture_hub(tmp_path_factory):
    endpoint = HubEndpoint(str(tmp_path_factory.mktemp("hub")), host="0.0.0.0").start()
    endpoint.sha = hub_layout.lay_out(hub_layout.TINY_QWEN2, endpoint.root)
    endpoint.host_url = f"http://{controller_address(HOST)}:{endpoint.server.server_address[1]}"
    yield endpoint
    endpoint.stop()


def fetch(hub, expect_rc=0, root=ROOT, args=(), **extra):
    variables = {"model_files_source": "hub", "model_files_src": "", "model_files_repo_id": hub_layout.TINY_QWEN2_REPO,
                 "model_files_revision": hub.sha, "model_files_endpoint": hub.host_url, "model_files_root": root,
                 "model_files_dest": f"{root}/{NAME}/{hub.sha}"}
    variables.update(extra)
    variables = {k: v for k, v in variables.items() if v is not None}  # None: from the inventory
    rc, out, took = playbook("molecule/default/model_fetch.yml", variables, expect_rc, args=args)
    recap = [line for line in out.splitlines() if line.startswith(HOST) and "changed=" in line]
    changed = int(recap[-1].split("changed=")[1].split()[0]) if recap else None
    return changed, out, took


def gets(hub, name=None):
    return [e for e in hub.requests("GET", name) if "/resolve/" in e["path"]]


def sha256_local(name):
    return hashlib.sha256((Path(hub_layout.TINY_QWEN2) / name).read_bytes()).hexdigest()


def sha256_host(path):
    return sh(HOST, f"sha256sum {path}").split()[0]


def test_a_fresh_host_fetches_by_revision_then_a_rerun_asks_nothing(hub):
    changed, out, took = fetch(hub)
    revision_dir = f"{ROOT}/{NAME}/{hub.sha}"
    assert changed == 1, out[-3000:]
    for name in ("config.json", WEIGHTS):
        assert sha256_host(f"{revision_dir}/{name}") == sha256_local(name)
    assert sh(HOST, f"test -f {revision_dir}/.sglang-deploy-model.json && echo stamped") == "stamped"
    assert sh(HOST, f"ls -a {ROOT}/{NAME}").split() == [".", "..", hub.sha], "a partial directory was left"
    assert len(gets(hub, WEIGHTS)) == 1
    asked = len(hub.log)
    changed, out, again = fetch(hub)
    assert changed == 0, out[-3000:]
    assert len(hub.log) == asked, hub.log[asked:]
    figure(f"model_files from the Hub endpoint: fresh fetch {took:.1f} s, rerun (stamp checked, nothing read "
           f"or asked) {again:.1f} s (ansible-playbook of the role alone, connection included)")


def test_b_a_corrupted_file_is_named_and_repaired_with_verify_full(hub):
    revision_dir = f"{ROOT}/{NAME}/{hub.sha}"
    sh(HOST, f"printf 'XXXX' | dd of={revision_dir}/{WEIGHTS} bs=1 seek=4096 conv=notrunc status=none")
    assert sha256_host(f"{revision_dir}/{WEIGHTS}") != sha256_local(WEIGHTS)
    before = len(gets(hub))
    changed, out, _ = fetch(hub, model_files_verify="full")
    assert changed == 1 and f"repaired {WEIGHTS}" in out, out[-3000:]
    assert sha256_host(f"{revision_dir}/{WEIGHTS}") == sha256_local(WEIGHTS)
    new = gets(hub)[before:]
    assert [e["path"].rsplit("/", 1)[-1] for e in new] == [WEIGHTS], new


def test_c_a_second_root_fills_from_the_first_without_asking_the_endpoint(hub):
    """The fleet-local pattern on one host: a revision directory on shared storage (here the first
    root) is copied and verified against its stamp; the Hub endpoint is not asked."""
    asked = len(hub.log)
    peer = "/data/models-peer"
    changed, out, _ = fetch(hub, model_files_source="path", model_files_src_path=f"{ROOT}/{NAME}/{hub.sha}",
                            root=peer)
    assert changed == 1, out[-3000:]
    assert sha256_host(f"{peer}/{NAME}/{hub.sha}/{WEIGHTS}") == sha256_local(WEIGHTS)
    assert len(hub.log) == asked, hub.log[asked:]


def test_d_refusals_name_the_figures_and_the_variable(hub):
    changed, out, _ = fetch(hub, expect_rc=2, root="/data/models-too-small", model_files_min_free_bytes=10 ** 15)
    assert "not enough space" in out and f"min_free_bytes {10 ** 15}" in out, out[-3000:]
    assert re.search(r"need \d+ bytes", out) and re.search(r"free \d+ bytes", out), out[-3000:]
    assert sh(HOST, "ls /data/models-too-small 2>/dev/null | wc -l") in ("0", "1")
    changed, out, _ = fetch(hub, expect_rc=2, model_files_revision="main",
                            model_files_dest=f"{ROOT}/{NAME}/main")
    assert "model_files_revision 'main' is not a 40-hex commit sha" in out, out[-3000:]


def test_e_an_old_revision_stays_while_in_use_and_goes_when_nothing_uses_it(hub, tmp_path):
    """A second revision fetched with model_files_keep_revisions 0: the first stays while a unit
    names it (a unit file of the test's own, model_files_server_unit), and is removed by the next
    run, when nothing names it (the scenario's real unit serves /data/models/tiny-qwen2/<sha>, no
    release records this root). Protection by recorded releases: tests/unit/test_model_files_prune_plan.py."""
    src = tmp_path / "tiny-qwen2-r2"
    shutil.copytree(hub_layout.TINY_QWEN2, src)
    (src / "NOTES.md").write_text("revision 2 of the tiny model\n")
    sha2 = hub_layout.lay_out(str(src), hub.root)
    assert sha2 != hub.sha
    first, second = f"{ROOT}/{NAME}/{hub.sha}", f"{ROOT}/{NAME}/{sha2}"
    sh(HOST, f"mkdir -p /etc/model-test && echo 'ExecStart=x --model-path {first}' > /etc/model-test/uses-first.service")
    try:
        changed, out, _ = fetch(hub, model_files_revision=sha2, model_files_dest=second, model_files_keep_revisions=0,
                                model_files_server_unit="/etc/model-test/uses-first.service")
        assert changed == 1, out[-3000:]
        assert sh(HOST, f"ls {ROOT}/{NAME}").split() == sorted([hub.sha, sha2])
        changed, out, _ = fetch(hub, model_files_revision=sha2, model_files_dest=second, model_files_keep_revisions=0)
        assert changed == 1 and "Remove the revisions nothing uses" in out, out[-3000:]
        assert sh(HOST, f"ls {ROOT}/{NAME}").split() == [sha2]
        assert sha256_host(f"{second}/{WEIGHTS}") == sha256_local(WEIGHTS)
    finally:
        sh(HOST, "rm -rf /etc/model-test")


def test_f_a_transfer_cut_mid_way_resumes_with_a_range_request(hub, tmp_path):
    """A model whose weights span several of the client's 10 MiB chunks; the endpoint cuts the
    connection after 15 MiB: the client on the host asks for the rest from its last whole chunk
    (Range: bytes=10485760-) in the same run, and the file on the host is whole. (A run killed
    outright keeps its finished files for the next; huggingface_hub 1.33 does not reuse a cut-off
    file across runs: docs/models.md.)"""
    mib, size, repo = 1 << 20, 25 << 20, "sglang-deploy/big-weights"
    src = tmp_path / "big-weights"
    src.mkdir()
    shutil.copy(Path(hub_layout.TINY_QWEN2) / "config.json", src / "config.json")
    (src / WEIGHTS).write_bytes(random.Random(0).randbytes(size))
    sha = hub_layout.lay_out(str(src), hub.root, repo)
    hub.add_fault(WEIGHTS, cut_after=15 * mib)
    before = len(gets(hub, WEIGHTS))
    try:
        changed, out, _ = fetch(hub, model_files_repo_id=repo, model_files_revision=sha,
                                model_files_dest=f"{ROOT}/big-weights/{sha}")
        assert changed == 1, out[-3000:]
        requests = [(e["status"], e["range"], e["sent"]) for e in gets(hub, WEIGHTS)[before:]]
        assert requests == [(200, None, 15 * mib), (206, "bytes=%d-" % (10 * mib), size - 10 * mib)], requests
        assert sha256_host(f"{ROOT}/big-weights/{sha}/{WEIGHTS}") == hashlib.sha256((src / WEIGHTS).read_bytes()).hexdigest()
    finally:
        sh(HOST, f"rm -rf {ROOT}/big-weights")


def test_g_the_shared_storage_keeps_what_a_host_names_and_drops_what_none_does(hub, tmp_path):
    """One download per fleet on one host (model_files_shared_root, model_files_shared_keep_revisions
    0): after a second revision the first stays on the shared storage while a host of the inventory
    names it (a host outside the play, from a second inventory file that also gives the scenario's
    host its new revision: an extra variable would name it for every host), and goes on the next
    run, when no host names it. The host's local copy of the new revision is whole."""
    shared, local = "/data/models-shared", "/data/models-local"
    src = tmp_path / "tiny-qwen2-r3"
    shutil.copytree(hub_layout.TINY_QWEN2, src)
    (src / "NOTES.md").write_text("revision 3 of the tiny model\n")
    sha3 = hub_layout.lay_out(str(src), hub.root)
    other = scratch("inventory-") / "outside-the-play.yml"
    other.write_text(json.dumps({"all": {"hosts": {
        HOST: {"model_files_revision": sha3, "model_files_dest": f"{local}/{NAME}/{sha3}"},
        "outside-the-play": {"ansible_connection": "local", "model_files_revision": hub.sha}}}}))
    common = {"root": local, "model_files_shared_root": shared, "model_files_shared_keep_revisions": 0}
    new = {"model_files_revision": sha3, "model_files_dest": f"{local}/{NAME}/{sha3}"}
    try:
        changed, out, _ = fetch(hub, **common)  # the shared copy, then the host's
        assert changed == 2, out[-3000:]
        assert sh(HOST, f"ls {shared}/{NAME}").split() == [hub.sha]
        changed, out, _ = fetch(hub, args=("-i", str(other)), model_files_revision=None, model_files_dest=None,
                                **common)
        assert changed == 2, out[-3000:]
        assert sh(HOST, f"ls {shared}/{NAME}").split() == sorted([hub.sha, sha3]), out[-3000:]
        changed, out, _ = fetch(hub, **common, **new)  # both copies in place: only the removal
        assert changed == 1 and "Remove the revisions on the shared storage that no host names" in out, out[-3000:]
        assert sh(HOST, f"ls {shared}/{NAME}").split() == [sha3]
        assert sha256_host(f"{local}/{NAME}/{sha3}/{WEIGHTS}") == sha256_local(WEIGHTS)
    finally:
        sh(HOST, f"rm -rf {shared} {local}")


def test_h_a_slow_fetch_prints_its_growing_progress_on_the_way(hub, tmp_path):
    """32 MiB of weights served at 1 MiB/s (the endpoint's rate: a slow link): the fetch runs in the
    background and the play prints, every 5 s, the bytes and files done of the total, the rate and
    the time left (roles/model_files' progress task, the sglang_progress callback), growing from
    line to line; the run ends with the revision in place."""
    size, repo = 32 << 20, "sglang-deploy/slow-weights"
    src = tmp_path / "slow-weights"
    src.mkdir()
    shutil.copy(Path(hub_layout.TINY_QWEN2) / "config.json", src / "config.json")
    (src / WEIGHTS).write_bytes(random.Random(1).randbytes(size))
    sha = hub_layout.lay_out(str(src), hub.root, repo)
    hub.rate = 1 << 20
    try:
        changed, out, took = fetch(hub, model_files_repo_id=repo, model_files_revision=sha,
                                   model_files_dest=f"{ROOT}/slow-weights/{sha}", model_files_progress_interval=5)
        assert changed == 1, out[-3000:]
        total = f"{(size + (src / 'config.json').stat().st_size) / 1e6:.1f}"
        lines = re.findall(rf"\[{HOST}\] fetch {repo}@{sha[:12]}: ([0-9.]+) MB of {total} MB \((\d+)%\), (\d) of 2 files, "
                           r"[^\n]*elapsed[^\n]*", out)
        print("\n".join(m[0] for m in re.finditer(rf"\[{HOST}\] fetch .*", out)))
        assert len(lines) >= 3, out[-3000:]
        # huggingface_hub writes the file in chunks of about 10.5 MB: at 1 MiB/s the bytes done
        # step every ~10 s (10.5, 21.0, 31.5 MB) while a line comes every 5 s; how many steps
        # the lines catch depends on the machine's load, that they grow does not
        done = [float(mb) for mb, _, _ in lines]
        assert done == sorted(done) and len(set(done)) >= 2, f"the progress did not grow: {done}"
        assert re.search(r"[0-9.]+ [kMG]?B/s, about [0-9a-z ]+ left", out), out[-3000:]  # ~1 MB/s: kB/s when just below
        assert sh(HOST, f"test -f {ROOT}/slow-weights/{sha}/.sglang-deploy-model.json && echo stamped") == "stamped"
        figure(f"model_files: {size >> 20} MiB at 1 MiB/s from the Hub endpoint in {took:.0f} s with {len(lines)} progress lines")
    finally:
        hub.rate = None
        sh(HOST, f"rm -rf {ROOT}/slow-weights")


def test_i_a_failed_fetch_at_vvv_shows_no_endpoint_credential(hub):
    """The role at -vvv on the host with an endpoint that carries credentials (user:password@
    and ?token=) and refuses the connection (a port on the controller just closed): the fetch
    runs in the background and fails, naming the endpoint without them; neither the password
    nor the token is in the output or in any file on the host (the async job's file included)."""
    port = refusing_port("0.0.0.0")
    password, token = "pw9fetch9secret", "tok9fetch9secret"
    endpoint = f"http://fetch9user:{password}@{controller_address(HOST)}:{port}/hf?token={token}"
    _, out, _ = fetch(hub, expect_rc=2, root="/data/models-credentials", model_files_endpoint=endpoint,
                      model_files_dest=f"/data/models-credentials/{NAME}/{hub.sha}", args=("-vvv",))
    assert "ESTABLISH DOCKER CONNECTION" in out, out[-3000:]  # -vvv: the connection's own lines
    # the failure names the endpoint without its user information and query
    assert f"from http://{controller_address(HOST)}:{port}/hf: ConnectError: [Errno 111] Connection refused" in out, \
        out[-3000:]
    shown = [s for s in (password, token) if s in out]
    on_host = sh(HOST, f"grep -rlF -e {password} -e {token} /root/.ansible_async /root/.ansible /tmp /etc "
                       "/data/models-credentials 2>/dev/null || true").split()
    sh(HOST, "rm -rf /data/models-credentials")
    assert shown == [] and on_host == [], (shown, on_host)

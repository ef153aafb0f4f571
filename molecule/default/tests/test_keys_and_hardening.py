"""API keys that never leak, and the hardened unit, on the default scenario's host.

The tests run in order, each on the state the one before left: deploy.yml at -vvv with both
keys from the vault-encrypted molecule/default/vars/vault-keys.yml (test password file
vault-pass.txt), the answers with and without a key, a --check --diff run, a key rotation, a
sweep at -vvv, every place a key must not show, the sandbox. The module's fixture deploys again
without keys at the end, so the tests and scenarios after this file find the host as before.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from ansible.parsing.vault import VaultLib, VaultSecret

from ansible_collections.sglang.deploy.molecule.shared.fleet import ROOT, figure, ip_of, playbook, sh, unit_state, unit_text  # noqa: E402
from ansible_collections.sglang.deploy.molecule.shared.gateway import PORT as GATEWAY_PORT, admin_key

testinfra_hosts = ["molecule-sglang-1"]
HOST = "molecule-sglang-1"
SCENARIO = Path(__file__).resolve().parents[1]
KEYS_FILE = "/etc/sglang/sglang-keys.yaml"
VAULT_VARS = SCENARIO / "vars" / "vault-keys.yml"
SWEEP_FILE = SCENARIO / "vars" / "sweep-keyed.yml"
SWEEP_RESULTS = ROOT / "reports" / "sweeps" / "molecule-keyed" / HOST
VAULT = ("-e", f"@{VAULT_VARS}", "--vault-password-file", str(SCENARIO / "vault-pass.txt"))
# the rotated keys come from the same vault file, mapped onto the role's variables
ROTATE = ("-e", json.dumps({"sglang_server_api_key": "{{ molecule_keys_rotated_api_key }}",
                            "sglang_server_admin_api_key": "{{ molecule_keys_rotated_admin_api_key }}"}))
OUT = {}  # playbook output by run


def _vaulted():
    """The plaintext of every variable of vault-keys.yml (for the assertions only)."""
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!vault", lambda loader, node: loader.construct_scalar(node))
    raw = yaml.load(VAULT_VARS.read_text(encoding="utf-8"), Loader=Loader)
    vault = VaultLib([("default", VaultSecret((SCENARIO / "vault-pass.txt").read_bytes().strip()))])
    return {name: vault.decrypt(text).decode() for name, text in raw.items()}


KEYS = _vaulted()
API, ADMIN = KEYS["sglang_server_api_key"], KEYS["sglang_server_admin_api_key"]
API2, ADMIN2 = KEYS["molecule_keys_rotated_api_key"], KEYS["molecule_keys_rotated_admin_api_key"]


@pytest.fixture(scope="module", autouse=True)
def _keys_off_at_the_end():
    """Deploy without keys once the tests are done (also after a failure). The flags and
    environment are the inventory's again, which the scenario's converge validated on the same
    generation: SGLang's verdict is read back from the host instead of being judged again."""
    yield
    _, out, _ = playbook("deploy.yml", {})
    assert re.search(r"judged the flags in [0-9.]+ s \(phase done\) in an earlier run: the same check, kept in "
                     r"/var/cache/sglang-deploy/validated/[0-9a-f]{64}\.json", " ".join(out.split())), out[-3000:]
    assert sh(HOST, f"test -e {KEYS_FILE} && echo present || echo absent") == "absent"
    assert "--config" not in unit_text(HOST)
    assert call("/v1/models")[0] == 200


def call(path, key=None, body=None, method=None, port=30000):
    """(status, body text) of one request from the controller to the host's port (the server's,
    else the gateway's)."""
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://{ip_of(HOST)}:{port}{path}", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def chat(key=None, port=30000):
    return call("/v1/chat/completions", key, {"model": "tiny-qwen2", "temperature": 0, "max_tokens": 4,
                                             "messages": [{"role": "user", "content": "Reply with OK."}]}, port=port)


def answer(key, port=30000):
    status, text = chat(key, port=port)
    assert status == 200, (status, text)
    return json.loads(text)["choices"][0]["message"]["content"].strip()


def leaks(text, keys=(API, ADMIN, API2, ADMIN2)):
    return [k[:6] + "..." for k in keys if k in (text or "")]


def test_deploy_with_vaulted_keys_restarts_once_and_passes_its_gate():
    pid = unit_state(HOST)[0]
    # -vvv: Ansible prints every module's arguments and results (invocation.module_args)
    _, OUT["deploy -vvv"], took = playbook("deploy.yml", {}, args=VAULT + ("-vvv",))
    figure(f"deploy.yml adding both API keys (vault): {took:.0f} s")
    assert unit_state(HOST)[0] != pid
    assert f"--config {KEYS_FILE}" in unit_text(HOST)
    assert sh(HOST, f"stat -c '%a %U %G' {KEYS_FILE}") == "600 root root"
    # the quick gate (probes, drift, single stream) ran with the key: every request needs it now
    assert "Gate | Quick gate" in OUT["deploy -vvv"]


def test_without_the_key_401_with_it_answered():
    assert chat()[0] == 401
    assert call("/v1/models")[0] == 401
    assert call("/v1/models", ADMIN)[0] == 401  # the admin key is not an API key
    assert answer(API) == "OK"
    status, text = call("/server_info")
    assert status == 401 and not leaks(text)
    # admin endpoints take only the admin key once one is set
    assert call("/flush_cache", API)[0] == 401
    assert call("/flush_cache", ADMIN)[0] not in (401, 403)
    # SGLang keeps these open (sglang/srt/utils/auth.py: paths starting /health, /ready, /metrics)
    for path in ("/health", "/health_generate", "/ready", "/metrics"):
        assert call(path)[0] == 200, path


def test_quality_and_gsm8k_run_against_the_keyed_server():
    """The deploy's gate compared the keyed server with the reference its release before
    recorded (a key changes no numerics: `same`). Then gsm8k with SGLang's own evaluator
    (sglang.test.run_eval from the host's ML environment, the key through its environment) on a
    small file in gsm8k's format: the tiny model cannot do arithmetic in gsm8k's prompt, so its
    real score, 0, is under the floor of 0.5 and the verification fails, naming both. The same run
    expects page size 16, which the CPU server does not resolve: that fails it too, quoting both."""
    assert re.search(r"quality +same: top-1 1\.0,", OUT["deploy -vvv"]), OUT["deploy -vvv"][-3000:]
    lines = [{"question": q, "answer": "#### %s" % a} for q, a in
             (("What is 2+2?", 4), ("What is 3+5?", 8), ("What is 2+3?", 5))]
    sh(HOST, "printf '%s\\n' " + " ".join("'%s'" % json.dumps(x) for x in lines) + " > /root/gsm8k-tiny.jsonl")
    # the quick gate (no concurrency sweep): gsm8k and the quality check are what this test is about
    extra = {"sglang_verify_quick": True, "sglang_verify_gsm8k_data": "/root/gsm8k-tiny.jsonl",
             "sglang_verify_gsm8k_shots": 1, "sglang_verify_gsm8k_max_tokens": 16, "sglang_verify_gsm8k_min_score": 0.5,
             # and a resolved value the CPU server does not pick (it resolves page size 1)
             "sglang_verify_expect_resolved": {"attention_backend": "torch_native", "page_size": 16}}
    rc, OUT["verify gsm8k"], took = playbook("playbooks/verify.yml", extra, expect_rc=None, args=VAULT)
    assert rc != 0
    assert "gsm8k accuracy 0.000 on 2 questions is under the floor 0.5" in OUT["verify gsm8k"], \
        OUT["verify gsm8k"][-3000:]
    assert "resolved: page_size is 1 on the server, the profile expects 16" in OUT["verify gsm8k"], \
        OUT["verify gsm8k"][-3000:]
    assert not leaks(OUT["verify gsm8k"])
    figure(f"verify.yml's quick gate with gsm8k (SGLang's evaluator, 2 questions, 1-shot) and the quality check: {took:.0f} s")


def test_check_diff_run_changes_nothing_and_shows_no_key():
    _, OUT["check --diff"], _ = playbook("deploy.yml", {}, args=VAULT + ("--check", "--diff"))
    plain = re.sub(r"\x1b\[[0-9;]*m", "", OUT["check --diff"])  # Molecule forces colour
    assert re.search(rf"{HOST}\s*:\s*ok=\d+\s+changed=0\s", plain), plain[-2000:]


def test_rotating_the_keys_rolls_like_any_change():
    unit, pid = unit_text(HOST), unit_state(HOST)[0]
    _, OUT["rotate --diff -v"], took = playbook("deploy.yml", {}, args=VAULT + ROTATE + ("--diff", "-v"))
    figure(f"deploy.yml rotating both API keys: {took:.0f} s")
    assert unit_text(HOST) == unit  # only the keys file changed, and that restarted the server
    assert unit_state(HOST)[0] != pid
    assert chat(API)[0] == 401
    assert answer(API2) == "OK"
    assert "Gate | Quick gate" in OUT["rotate --diff -v"]


def test_a_sweep_of_the_keyed_server_at_vvv_measures_through_the_keys_and_shows_none():
    """playbooks/sweep.yml at -vvv on the keyed server (the rotated keys): the baseline candidate,
    the running server, is probed and measured through the keys; a candidate smuggling the API
    key in a list value (and a token in its environment) is refused offline. Nothing restarted.
    Where a key must not show is test_the_keys_appear_nowhere_else's (this output, the sweep's
    records and reports, async job files)."""
    shutil.rmtree(SWEEP_RESULTS, ignore_errors=True)
    unit, pid = unit_text(HOST), unit_state(HOST)[0]
    _, OUT["sweep -vvv"], took = playbook("playbooks/sweep.yml", {}, args=VAULT + ROTATE + (
        "-e", f"@{SWEEP_FILE}", "-vvv"))
    figure(f"sweep.yml at -vvv on the keyed server (the baseline measured, one candidate refused offline): {took:.0f} s")
    records = {r["label"]: r for r in (json.loads(p.read_text()) for p in SWEEP_RESULTS.glob("candidate-*.json"))}
    assert records["baseline"]["outcome"] == "working", records["baseline"]
    assert records["baseline"]["figures"]["decode_tps"]["median"] > 0, records["baseline"]
    smuggled = records["key smuggled in a list value"]
    assert smuggled["outcome"] == "rejected" and smuggled["stage"] == "rules", smuggled
    assert (SWEEP_RESULTS / "sweep.md").is_file() and (SWEEP_RESULTS / "sweep.json").is_file()
    # the baseline is the running server (measured in place); the other candidate never started
    assert unit_text(HOST) == unit and unit_state(HOST)[0] == pid
    assert chat()[0] == 401 and answer(API2) == "OK"


def _host_files_with_keys():
    """Files under the host's /etc, /var/lib, /var/cache, /run, /tmp and Ansible's remote
    temporary directory holding a key (the keys go in on stdin: never on a command line)."""
    code = ("import json,os,sys\nkeys=[k.encode() for k in json.load(sys.stdin)]\n"
            "for top in ('/etc','/var/lib','/var/cache','/run','/tmp','/root/.ansible','/root/.ansible_async'):\n"
            " for d,_,fs in os.walk(top):\n"
            "  for f in fs:\n"
            "   p=os.path.join(d,f)\n"
            "   try:\n"
            "    if os.path.isfile(p) and not os.path.islink(p) and os.path.getsize(p)<64<<20:\n"
            "     b=open(p,'rb').read()\n"
            "     if any(k in b for k in keys): print(p)\n"
            "   except OSError: pass\n")
    proc = subprocess.run(["docker", "exec", "-i", HOST, "python3", "-c", code], check=True,
                          input=json.dumps([API, ADMIN, API2, ADMIN2]), capture_output=True, text=True)
    return sorted(proc.stdout.split())


def _controller_files_with_keys(*dirs):
    found = []
    for top in dirs:
        for path in (p for p in Path(top).rglob("*") if p.is_file()):
            try:
                text = path.read_bytes().decode(errors="replace")
            except FileNotFoundError:  # gone or replaced since the listing (an atomic write): nothing to read
                continue
            if leaks(text):
                found.append(str(path))
    return found


def test_the_keys_appear_nowhere_else():
    pid = unit_state(HOST)[0]
    seen = {name: leaks(text) for name, text in OUT.items()}
    for name, cmd in {
        "systemctl cat": "systemctl cat sglang",
        "systemctl show": "systemctl show sglang",
        "ps -ef": "ps -ef",
        "/proc/*/cmdline": "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done",
        "server environment": f"tr '\\0' '\\n' < /proc/{pid}/environ",
        "journal": "journalctl --no-pager -o cat",
        "facts.d": "cat /etc/ansible/facts.d/*.fact",
    }.items():
        seen[name] = leaks(sh(HOST, cmd))
    seen["/server_info without a key"] = leaks(call("/server_info")[1])
    seen["host files other than the keys file"] = [p for p in _host_files_with_keys() if p != KEYS_FILE]
    seen["controller: reports/, .cache/facts, ~/.ansible_async"] = _controller_files_with_keys(
        ROOT / "reports", ROOT / ".cache" / "facts", Path.home() / ".ansible_async")
    assert {k: v for k, v in seen.items() if v} == {}
    # SGLang itself logs the keys in clear at start (server_args=...): this start's line shows them redacted
    started = sh(HOST, "journalctl -u sglang --no-pager -o cat | grep server_args= | tail -1")
    assert "'api_key': '<redacted>'" in started and "'admin_api_key': '<redacted>'" in started


def test_the_unit_is_hardened_and_its_sandbox_applies():
    pid = unit_state(HOST)[0]
    mounts = sh(HOST, f"cat /proc/{pid}/mountinfo").splitlines()
    root = [m for m in mounts if m.split()[4] == "/"]
    assert root and " ro," in root[0] + ",", root
    denied = sh(HOST, f"nsenter -t {pid} -m sh -c 'touch /usr/.sglang-probe 2>&1; touch /root/.sglang-probe 2>&1' || true")
    assert denied.count("Read-only file system") == 2, denied
    assert sh(HOST, f"nsenter -t {pid} -m sh -c 'touch /var/lib/sglang/.probe && rm /var/lib/sglang/.probe && echo ok'") == "ok"
    status = dict(line.split(":", 1) for line in sh(HOST, f"cat /proc/{pid}/status").splitlines() if ":" in line)
    assert status["CapBnd"].strip() == "0000000000000000" and status["NoNewPrivs"].strip() == "1"
    gen = sh(HOST, "basename $(readlink -f /root/ml-env)")  # one cache directory per generation
    assert sh(HOST, f"stat -c %a /var/cache/sglang/{gen}") == "700"
    assert f'XDG_CACHE_HOME="/var/cache/sglang/{gen}"' in sh(HOST, "cat /etc/sglang/sglang.env")
    out = sh(HOST, "systemd-analyze security sglang --no-pager")
    score = float(re.search(r"Overall exposure level for sglang\.service: ([0-9.]+)", out).group(1))
    figure(f"systemd-analyze security sglang (live, local profile): {score}")
    assert score < 4.0, out[-3000:]


def test_behind_a_gateway_the_worker_is_registered_with_its_key_which_shows_nowhere():
    """smg (roles/sglang_gateway, molecule/default/gateway.yml) on this host, in front of its
    keyed server: the role registers the server with its (rotated) key, so a client that sends no
    key is answered through the gateway while the server itself still refuses it; the key is in
    none of smg's command line, environment, unit, journal or files, the gateway's worker listing,
    the run's -v output or any other file of the host. smg is stopped afterwards."""
    _, OUT["gateway.yml -v"], took = playbook("molecule/default/gateway.yml", {}, args=VAULT + ROTATE + ("-v",))
    try:
        assert answer(None, port=GATEWAY_PORT) == "OK"
        assert chat()[0] == 401, "the server itself answered a request without its key"
        pid = sh(HOST, "systemctl show smg -p MainPID --value")
        assert pid != "0", sh(HOST, "systemctl status smg --no-pager || true")
        listing = call("/workers", admin_key(), port=GATEWAY_PORT)
        assert listing[0] == 200 and f"http://{HOST}:30000" in listing[1], listing
        places = {
            "gateway.yml -v": OUT["gateway.yml -v"],
            "the gateway's worker listing": listing[1],
            "smg command line": sh(HOST, f"tr '\\0' ' ' < /proc/{pid}/cmdline"),
            "smg environment": sh(HOST, f"tr '\\0' '\\n' < /proc/{pid}/environ"),
            "smg unit": sh(HOST, "systemctl cat smg; systemctl show smg"),
            "smg journal": sh(HOST, "journalctl -u smg --no-pager -o cat"),
            "smg files": sh(HOST, "find /etc/smg /opt/smg -maxdepth 1 -type f -exec cat {} +"),
        }
        seen = {where: leaks(text) for where, text in places.items()}
        seen["host files other than the server's keys file"] = [p for p in _host_files_with_keys() if p != KEYS_FILE]
        assert {k: v for k, v in seen.items() if v} == {}
    finally:
        sh(HOST, "systemctl disable --now smg")
    figure(f"a keyed worker behind the gateway (smg on its host, registered with the worker's key): installed and "
           f"registered in {took:.0f} s; answered a client without a key; the key in none of {', '.join(seen)}")

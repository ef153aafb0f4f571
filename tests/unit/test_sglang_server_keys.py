"""API keys that never leak (roles/sglang_server and the modules that send or print them) and the
lint of the hardened unit's variables, offline.

* lint refuses a key written as a flag, without quoting it, and points to sglang_server_api_key;
* the hardening lists and the umask are judged like the other unit inputs;
* plugins/module_utils/sglang_secrets.py redacts every spelling SGLang and Python print a key in;
* files/sitecustomize.py redacts the keys in everything a Python process (and the workers it
  spawns) writes, as SGLang's journal gets it;
* the release record drops secret flags; the gateway is given the worker's key; the readiness
  wait sends it and redacts the journal it quotes.
"""

import io
import json
import re
import os
import subprocess
import sys
import urllib.parse

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.gateway import api as sglang_gateway_api
from ansible_collections.sglang.deploy.plugins.modules import sglang_server_wait
from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import SECRET_FLAGS
from ansible_collections.sglang.deploy.plugins.module_utils.release.state import public_args
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_secrets import redact_lines, redact_text

from ansible_collections.sglang.deploy.tests.unit import test_sglang_flags_inputs as inputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.path.join(ROOT, "roles", "sglang_server", "files")
KEY, ADMIN = "sk-unit-0123456789abcdef", "adm-unit-fedcba9876543210"


# --- lint ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,flag,variable", [
    ("api-key", "api-key", "sglang_server_api_key"),
    ("api_key", "api-key", "sglang_server_api_key"),
    ("--api-key", "api-key", "sglang_server_api_key"),
    ("admin-api-key", "admin-api-key", "sglang_server_admin_api_key"),
])
def test_a_key_written_as_a_flag_is_refused_without_quoting_it(name, flag, variable):
    args = dict(inputs.GOOD_ARGS, **{name: KEY})
    findings, report = inputs.judge(args=args)
    line = inputs.refused(report, f"--{flag}", "input-key-flag", f"remove it from sglang_server_args and set {variable}")
    assert "ps, /proc/*/cmdline" in line
    assert KEY not in json.dumps(findings) + json.dumps(report)


@pytest.mark.parametrize("unit,label,rule", [
    ({"sglang_server_read_write_paths": ["/data/x\nExecStartPre=/bin/sh"]}, "sglang_server_read_write_paths", "input-control-char"),
    ({"sglang_server_read_write_paths": ["relative/dir"]}, "sglang_server_read_write_paths", "input-path"),
    ({"sglang_server_read_write_paths": "/one/path"}, "sglang_server_read_write_paths", "input-list"),
    ({"sglang_server_device_allow": ["nvidia rw"]}, "sglang_server_device_allow", "input-device"),
    ({"sglang_server_capabilities": ["SYS_ADMIN"]}, "sglang_server_capabilities", "input-capability"),
    ({"sglang_server_umask": "77"}, "sglang_server_umask", "input-umask"),
    ({"sglang_server_hardening": "maybe"}, "sglang_server_hardening", "input-type"),
])
def test_hardening_inputs_are_judged(unit, label, rule):
    _, report = inputs.judge(unit=unit)
    head = re.compile(re.escape(f"{inputs.HOST}: {label}") + r"(\[[0-9]+\])? " + re.escape(f"[{rule}] "))
    assert [e for e in report["errors"] if head.match(e)], report["errors"]


def test_hardening_defaults_and_the_local_profile_pass():
    good = {"sglang_server_hardening": True, "sglang_server_read_write_paths": ["-/data/cache", "/srv/x"],
            "sglang_server_device_allow": ["char-nvidia-frontend rw", "/dev/nvidia0 rw", "char-nvidia-uvm rw"],
            "sglang_server_capabilities": ["CAP_IPC_LOCK"], "sglang_server_umask": "0077"}
    assert inputs.judge(unit=good)[0] == []
    assert inputs.judge(unit={"sglang_server_device_allow": [], "sglang_server_capabilities": []})[0] == []


# --- redaction by flag name -----------------------------------------------------------------------

@pytest.mark.parametrize("text,kept", [
    # SGLang 0.5.23's start line (server_args=..., a Python dict)
    (f"server_args={{'ssl_keyfile_password': None, 'api_key': '{KEY}', 'admin_api_key': '{ADMIN}', 'x': 1}}",
     ["'ssl_keyfile_password': None", "'api_key': '<redacted>'", "'admin_api_key': '<redacted>'", "'x': 1"]),
    (f'{{"api_key":"{KEY}","launch_command":"--api-key {KEY} --model-path /m"}}',
     ['"api_key":"<redacted>"', "--api-key <redacted> --model-path /m"]),
    (f"python -m sglang.launch_server --api_key={KEY} --port 1", ["--api_key=<redacted> --port 1"]),
    (f"ServerArgs(api_key='{KEY}', admin_api_key=None)", ["api_key='<redacted>'", "admin_api_key=None"]),
    (f'api-key: "{KEY}"', ['api-key: "<redacted>"']),
])
def test_redact_text_by_flag_name(text, kept):
    out = redact_text(text)
    assert KEY not in out and ADMIN not in out
    for part in kept:
        assert part in out, out
    assert redact_lines([text, "plain"])[1] == "plain"


def test_a_longer_name_ending_in_a_secret_name_is_kept():
    assert redact_text("my_api_key: 'keep'") == "my_api_key: 'keep'"


# --- the server's own output (files/sitecustomize.py) -----------------------------------------------

CHILD = """
import logging, multiprocessing, sys
KEY, ADMIN = sys.argv[1], sys.argv[2]
def child(key):
    print("child sees", key, flush=True)
if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, force=True)
    logging.getLogger("sglang").info("server_args={'api_key': %r, 'admin_api_key': %r}", KEY, ADMIN)
    print("launch_command --api-key", KEY)
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=child, args=(ADMIN,))
    p.start(); p.join()
    raise SystemExit("failed with " + KEY)
"""


def test_sitecustomize_redacts_the_keys_in_every_process_of_the_server(tmp_path):
    keys = tmp_path / "sglang-keys.yaml"
    keys.write_text(f"# Ansible managed\napi-key: {json.dumps(KEY)}\nadmin-api-key: {json.dumps(ADMIN)}\n")
    script = tmp_path / "server.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=SITE, SGLANG_DEPLOY_REDACT_FILE=str(keys))
    proc = subprocess.run([sys.executable, str(script), KEY, ADMIN], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1
    assert KEY not in out and ADMIN not in out
    for line in ("'api_key': '<redacted>'", "launch_command --api-key <redacted>", "child sees <redacted>",
                 "failed with <redacted>"):
        assert line in out, out


def test_sitecustomize_without_a_readable_file_changes_nothing(tmp_path):
    env = dict(os.environ, PYTHONPATH=SITE, SGLANG_DEPLOY_REDACT_FILE=str(tmp_path / "missing.yaml"))
    proc = subprocess.run([sys.executable, "-c", f"print({KEY!r})"], env=env, capture_output=True, text=True,
                          timeout=60, check=True)
    assert proc.stdout.strip() == KEY and proc.stderr == ""


def _site():
    from ansible_collections.sglang.deploy.roles.sglang_server.files import sitecustomize  # pylint: disable=import-outside-toplevel - installs its hooks when imported
    return sitecustomize


def _stream(tmp_path, key):
    site = _site()
    keys = tmp_path / "keys.yaml"
    keys.write_text(f"api-key: {json.dumps(key)}\n")
    out = io.StringIO()
    return site.RedactingStream(out, site.read_secrets(str(keys))), out


def test_sitecustomize_redacts_a_key_written_in_pieces(tmp_path):
    stream, out = _stream(tmp_path, KEY)
    for piece in ("api key: sk-u", "nit-0123", "456789abcdef and more s", "k-", "\n"):
        stream.write(piece)
    stream.flush()
    assert out.getvalue() == "api key: <redacted> and more sk-\n"


@pytest.mark.parametrize("shown", [json.dumps, repr, urllib.parse.quote, urllib.parse.quote_plus])
def test_sitecustomize_redacts_the_escaped_forms_of_a_key(tmp_path, shown):
    key = 'k3y"with\\quote\'s & /slash é'
    stream, out = _stream(tmp_path, key)
    stream.write(f"header {shown(key)} end\n")
    stream.flush()
    assert out.getvalue() in ("header <redacted> end\n", 'header "<redacted>" end\n', "header '<redacted>' end\n")


def test_sitecustomize_leaves_other_output_as_written(tmp_path):
    stream, out = _stream(tmp_path, KEY)
    text = "".join(f"line {i} ends with s\n" for i in range(50)) + "no newline s"
    for char in text:
        stream.write(char)
    stream.flush()
    assert out.getvalue() == text


# --- the release record, the gateway, the readiness wait --------------------------------------------

def test_the_release_record_keeps_no_secret_flag():
    """plugins/module_utils/release/state.py public_args, what roles/sglang_release records: no
    secret flag, in any spelling."""
    flags = {"model-path": "/m", "api-key": KEY, "admin_api_key": ADMIN, "port": 30000}
    assert public_args(flags) == {"model-path": "/m", "port": 30000}
    spelled = {spelling: KEY for flag in SECRET_FLAGS for spelling in (flag, flag.replace("-", "_"), "--" + flag)}
    assert public_args(dict(spelled, tp=2)) == {"tp": 2}
    assert public_args(None) == {}


def test_the_gateway_is_given_the_workers_key(monkeypatch):
    sent = []
    monkeypatch.setattr(sglang_gateway_api.Gateway, "http",
                        lambda self, method, path, body=None: sent.append((method, path, body)) or (202, "{}"))
    gateway = sglang_gateway_api.Gateway("http://gw:30080", ADMIN)
    gateway.add("http://w:30000", KEY)
    gateway.add("http://w:30000")
    assert sent == [("POST", "/workers", {"url": "http://w:30000", "api_key": KEY}),
                    ("POST", "/workers", {"url": "http://w:30000"})]
    assert gateway.headers["Authorization"] == "Bearer " + ADMIN  # the control-plane key, not the worker's


class _Journal:
    def __init__(self, text):
        self.text = text

    def run_command(self, cmd):
        return 0, self.text, ""


def test_the_wait_module_quotes_the_journal_redacted():
    text = f"a\nserver_args={{'api_key': '{KEY}'}}\nb --admin-api-key {ADMIN}\n"
    lines = sglang_server_wait.journal(_Journal(text), "sglang.service", "inv", 10)
    assert lines == ["a", "server_args={'api_key': '<redacted>'}", "b --admin-api-key <redacted>"]


def test_the_wait_module_sends_the_key(monkeypatch):
    seen = {}

    def request(url, timeout=0, headers=None):
        seen.update(url=url, headers=headers)
        return 200, ""

    monkeypatch.setattr(sglang_server_wait, "request", request)
    monkeypatch.setattr(sglang_server_wait, "unit_state",
                        lambda module, unit: {"LoadState": "loaded", "ActiveState": "active", "MainPID": "7"})
    from ansible.module_utils.testing import patch_module_args
    with patch_module_args({"unit": "sglang.service", "url": "http://127.0.0.1:30000/v1/models", "api_key": KEY}):
        with pytest.raises(SystemExit):
            sglang_server_wait.main()
    assert seen["headers"] == {"Authorization": "Bearer " + KEY}

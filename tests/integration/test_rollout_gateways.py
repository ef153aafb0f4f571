"""Which gateways a host leaves is decided once (roles/sglang_gateway, sglang_gateway_urls, from
the group that sglang_gateway_group names) and every one of them sees the drain: the real
roles run by ansible-playbook (local connection, --check: only GET /workers is sent) against two
local endpoints that answer smg 1.13.0's recorded worker listing (tests/fixtures/smg/, the
gateway's public API layout), in an inventory whose gateway group is renamed."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
KEY = "admin-key-for-the-test"
WORKER = "http://127.0.0.1:31001"  # a worker of get-workers-two-healthy.json


def _recorded(name):
    data = json.loads((ROOT / "tests" / "fixtures" / "smg" / name).read_text(encoding="utf-8"))
    return data["status"], data["body"]


def _gateway(seen):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802 - http.server's name
            seen.append((self.path, self.headers.get("Authorization")))
            ok = self.headers.get("Authorization") == "Bearer " + KEY and self.path == "/workers"
            status, body = _recorded("get-workers-two-healthy.json" if ok else "get-workers-no-key.json")
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@pytest.fixture()
def two_gateways():
    servers, seen = [], ([], [])
    for record in seen:
        srv = ThreadingHTTPServer(("127.0.0.1", 0), _gateway(record))
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
    yield [s.server_address[1] for s in servers], seen
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _run(tmp_path, ports, group_var):
    inventory = {"all": {
        "children": {
            "sglang_hosts": {"hosts": {"worker-1": {"ansible_connection": "local",
                                                    "ansible_python_interpreter": sys.executable,
                                                    "sglang_gateway_worker_url": WORKER,
                                                    # the server listens where the worker URL says
                                                    # (the gateway role's kinds hold the two together)
                                                    "sglang_server_args": {"port": 31001}}}},
            # the gateway group under another name than the role's default `gateway`
            "front_door": {"hosts": {f"gw-{i}": {"ansible_host": "127.0.0.1", "sglang_gateway_port": port}
                                     for i, port in enumerate(ports, 1)}}},
        "vars": dict({"sglang_gateway_admin_api_key": KEY}, **group_var)}}
    play = [{"name": "A rollout's drain", "hosts": "sglang_hosts", "gather_facts": False, "tasks": [
        {"name": "Normalise the flags", "ansible.builtin.include_role": {"name": "sglang_flags", "tasks_from": "model"}},
        {"name": "Leave every gateway", "ansible.builtin.include_role": {"name": "sglang_rollout", "tasks_from": "leave"}},
        {"name": "Keep the drain's result", "check_mode": False, "delegate_to": "localhost",
         "ansible.builtin.copy": {"content": "{{ sglang_gateway_drained | to_json }}",
                                  "dest": str(tmp_path / "drain.json"), "mode": "0600"}}]}]
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_LOCAL_TEMP=str(tmp_path / ".ansible-tmp"))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), "--check",
                           str(tmp_path / "play.yml")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    return json.loads((tmp_path / "drain.json").read_text(encoding="utf-8"))


def test_a_renamed_gateway_group_still_sees_every_drain(tmp_path, two_gateways):
    ports, seen = two_gateways
    drained = _run(tmp_path, ports, {"sglang_gateway_group": "front_door"})
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    assert drained["gateway_url"] == urls, drained
    assert drained["changed"] and all(f"would remove {WORKER} " in drained["msg"] and url in drained["msg"]
                                      for url in urls), drained["msg"]
    # each gateway was asked, with the control-plane key
    assert all(record == [("/workers", "Bearer " + KEY)] for record in seen), seen


def test_without_the_group_name_no_gateway_is_asked(tmp_path, two_gateways):
    """The check can fail: the role's default group name (`gateway`) finds no host here, so the
    drain is skipped and neither endpoint is asked."""
    ports, seen = two_gateways
    drained = _run(tmp_path, ports, {})
    assert drained.get("skipped") and seen == ([], []), (drained, seen)

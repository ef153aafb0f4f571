"""The collection's module_utils (plugins/module_utils/) reach the modules that import them
when Ansible runs them for real (local connection, this interpreter): the probe's drift of
roles/sglang_verify reads the flag model, through the same variables a deploy uses, and the
gateway module (plugins/modules/sglang_gateway_worker.py, run by roles/sglang_gateway) and the
readiness module of roles/sglang_server load the shared HTTP client (the gateway module the
collection's gateway module_utils too). A module_utils that Ansible cannot find fails before the module runs ("Could not find
imported module support code")."""

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


class FakeSGLang(BaseHTTPRequestHandler):
    """/v1/models and /server_info of a server launched from the unit's flags."""
    launch_command = ""

    def log_message(self, *args):
        pass

    def do_GET(self):
        answers = {"/v1/models": {"data": [{"id": "tiny"}]},
                   "/server_info": {"version": "0.0-fake", "launch_command": self.launch_command,
                                    "model_path": "/m", "internal_states": [{}]}}
        data = json.dumps(answers.get(self.path, {})).encode()
        self.send_response(200 if self.path in answers else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def fake_server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), FakeSGLang)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def ansible(tool, tmp_path, *args):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_LOCAL_TEMP=str(tmp_path / ".ansible-tmp"))
    proc = subprocess.run([str(BIN / tool), "-i", "localhost,", "-c", "local", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_drift_of_flags_written_with_underscores_passes_in_a_real_run(tmp_path, fake_server):
    """The bug: `model_path: ...` was accepted by the lint, the on-host validation and the unit,
    but drift reported it "not on its command line", the gate failed and the host was rolled
    back. Here the probe module runs as the role runs it (sglang_flags_normalized, then
    sglang_verify's measure.yml with its defaults) against a server launched with the rendered
    argv."""
    args = {"model_path": "/m", "served_model_name": "tiny", "port": fake_server, "enable_metrics": True,
            "cuda_graph_bs": [1, 2], "enable_mscclpp": False}
    argv = " ".join(["--model-path", "/m", "--served-model-name", "tiny", "--port", str(fake_server),
                     "--enable-metrics", "--cuda-graph-bs", "1", "2"])
    FakeSGLang.launch_command = "/root/ml-env/bin/python -m sglang.launch_server " + argv
    play = [{"name": "Drift", "hosts": "all", "gather_facts": False, "tasks": [
        {"name": "Normalise the flags", "ansible.builtin.include_role": {"name": "sglang_flags", "tasks_from": "model"}},
        {"name": "No measurement yet", "ansible.builtin.set_fact": {"_sglang_verify_probe": {"result": {}, "failures": []}}},
        {"name": "Measure drift", "ansible.builtin.include_role": {"name": "sglang_verify", "tasks_from": "measure"},
         "vars": {"_sglang_verify_measure_checks": ["drift"], "_sglang_verify_measure_throttle": 0}},
        {"name": "Show", "ansible.builtin.debug": {"msg": "DRIFT={{ _sglang_verify_measured.result.drift | to_json }}"
                                                          " FAILURES={{ _sglang_verify_measured.failures | to_json }}"}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "extra.json").write_text(json.dumps({"ansible_python_interpreter": sys.executable,
                                                     "sglang_server_args": args}))
    rc, out = ansible("ansible-playbook", tmp_path, str(tmp_path / "play.yml"), "-e", f"@{tmp_path / 'extra.json'}")
    assert rc == 0, out
    assert "Could not find imported module support code" not in out
    drift = json.loads(out.split("DRIFT=", 1)[1].split(" FAILURES=", 1)[0])
    assert drift["ok"] and drift["mismatches"] == [] and drift["extra"] == [], drift
    assert drift["checked"] == 5
    assert "FAILURES=[]" in out


def test_gateway_module_loads_the_shared_and_its_own_module_utils(tmp_path):
    """sglang_gateway_worker imports plugins/module_utils/ (HTTP, Prometheus, the gateway API and
    listing): run as the role runs it, against a gateway that does not answer."""
    play = [{"name": "Gateway", "hosts": "all", "gather_facts": False, "tasks": [
        {"name": "Normalise the flags", "ansible.builtin.include_role": {"name": "sglang_flags", "tasks_from": "model"}},
        {"name": "Take the worker out", "ansible.builtin.include_role": {"name": "sglang_gateway", "tasks_from": "drain"}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "extra.json").write_text(json.dumps({
        "ansible_python_interpreter": sys.executable, "sglang_gateway_urls": ["http://127.0.0.1:9"],
        "sglang_server_args": {"model_path": "/m", "port": 31000}}))
    rc, out = ansible("ansible-playbook", tmp_path, str(tmp_path / "play.yml"), "-e", f"@{tmp_path / 'extra.json'}")
    assert rc != 0 and "Could not find imported module support code" not in out, out
    assert "GET /workers -> no answer" in out, out
    assert "Remove this worker and drain it" in out


def test_readiness_module_loads_the_shared_http_client(tmp_path):
    """sglang_server_wait run ad hoc by its FQCN: no unit of that name here, so the module's own refusal
    (systemctl answers, or is missing) names the unit."""
    rc, out = ansible("ansible", tmp_path, "all", "-m", "sglang.deploy.sglang_server_wait", "-a",
                      "unit=sglang-test-no-such.service url=http://127.0.0.1:9/ timeout=1",
                      "-e", f"ansible_python_interpreter={sys.executable}")
    assert rc != 0 and "Could not find imported module support code" not in out, out
    assert "sglang-test-no-such.service" in out, out

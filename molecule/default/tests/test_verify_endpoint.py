"""playbooks/verify_endpoint.yml against a server this project did not deploy (docs/operations.md,
"Verifying an endpoint by its URL"): on the default scenario's host, the deployed unit stopped and
a real SGLang started by hand on the same port (SGLang's own `python -m sglang.launch_server` from
the host's ML environment with flags written here, no unit, no release); from the controller, the
endpoint's first run records its reference and passes with a report, the second is judged `same`
against that reference, and a URL with credentials is refused before any request. The deployed
unit serves again afterwards, also after a failure."""

from __future__ import annotations

import json
import re
import time
import urllib.request

from pathlib import Path

import pytest

from ansible_collections.sglang.deploy.molecule.shared.fleet import ROOT, TINY_MODEL, figure, ip_of, playbook, sh

testinfra_hosts = ["molecule-sglang-1"]
HOST = "molecule-sglang-1"
# flags written by hand, not the inventory's: what a team running its own server would type
BY_HAND = ["--model-path", TINY_MODEL, "--served-model-name", "tiny-qwen2", "--device", "cpu",
           "--host", "0.0.0.0", "--port", "30000", "--attention-backend", "torch_native",
           "--sampling-backend", "pytorch", "--grammar-backend", "none", "--max-total-tokens", "8192",
           "--enable-metrics"]


def generates(url):
    try:
        with urllib.request.urlopen(url + "/health_generate", timeout=30) as resp:
            return resp.status == 200
    except OSError:
        return False


def wait_until(predicate, what, limit=900):
    """Waits on the state, not on a clock: the limit only ends a start that never comes."""
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(2)


@pytest.fixture(scope="module")
def endpoint():
    """A server started by hand where the deployed one was; the deployed unit back afterwards."""
    url = f"http://{ip_of(HOST)}:30000"
    sh(HOST, "systemctl stop sglang && ! pgrep -f '[s]glang[.]launch_server'")
    argv = " ".join(["/root/ml-env/bin/python", "-m", "sglang.launch_server"] + BY_HAND)
    sh(HOST, f"cd /tmp && HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1 setsid nohup {argv} "
             ">/tmp/sglang-by-hand.log 2>&1 </dev/null &")
    try:
        t0 = time.monotonic()
        wait_until(lambda: generates(url), "the server started by hand never generated: "
                   + sh(HOST, "tail -n 30 /tmp/sglang-by-hand.log"))
        figure(f"verify_endpoint: a server started by hand generated after {time.monotonic() - t0:.0f} s")
        yield url
    finally:
        sh(HOST, "pkill -f '[s]glang[.]launch_server'; for i in $(seq 60); do pgrep -f '[s]glang[.]launch_server' || break; "
                 "sleep 1; done; pkill -9 -f '[s]glang[.]launch_server'; systemctl start sglang")
        wait_until(lambda: generates(url), "the deployed unit did not serve again")


def run(url, extra=None, expect_rc=0):
    return playbook("playbooks/verify_endpoint.yml", dict({"sglang_verify_endpoint_url": url}, **(extra or {})),
                    expect_rc=expect_rc)


def report_of(out):
    run_dir = re.search(r"report: (\S+)/\{report\.json,summary\.md\}", out).group(1)
    with open(f"{run_dir}/report.json", encoding="utf-8") as fh:
        return json.load(fh), run_dir


def test_a_server_started_by_hand_is_verified_by_its_url_and_keeps_its_own_reference(endpoint):
    name = "endpoint-%s-30000" % ip_of(HOST)
    state = ROOT / "reports" / "endpoints" / name
    (state / "quality.json").unlink(missing_ok=True)
    _, out, took = run(endpoint)
    report, run_dir = report_of(out)
    host = report["hosts"][name]
    assert host["passed"], host
    assert host["result"]["quality"]["level"] == "recorded", host["result"]["quality"]
    assert (state / "quality.json").is_file() and not (state / "candidate.json").exists()
    assert host["result"]["server"]["launch_command"].endswith("--enable-metrics")
    assert all(p["ok"] for p in host["result"]["probes"]), host["result"]["probes"]
    assert (Path(run_dir) / "summary.md").is_file(), run_dir
    recorded = (state / "quality.json").read_text(encoding="utf-8")
    _, out2, took2 = run(endpoint)
    report2, _ = report_of(out2)
    quality = report2["hosts"][name]["result"]["quality"]
    assert report2["hosts"][name]["passed"] and quality["level"] == "same", quality
    assert quality["load"]["level"] in ("same", "numerics_changed"), quality["load"]
    # kept, not re-recorded: an unchanged server keeps the reference it matched
    assert json.loads((state / "quality.json").read_text(encoding="utf-8"))["entries"] == json.loads(recorded)["entries"]
    figure(f"verify_endpoint: first run (records) {took:.0f} s, second (judged same) {took2:.0f} s")


def test_a_url_with_credentials_is_refused_before_any_request(endpoint):
    url = endpoint.replace("http://", "http://operator:hunter2@")
    _, out, _ = run(url, expect_rc=2)
    assert "carries credentials" in out and "hunter2" not in out
    assert "What it says it was launched with" not in out  # no request was sent

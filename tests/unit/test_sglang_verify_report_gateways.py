"""The verification report shows what the gateways list (plugins/modules/sglang_verify_report.py,
`gateways`: the workers of roles/sglang_gateway's combined listing, passed by playbooks/verify.yml):
one row per worker with its status in each gateway and whether every gateway routes to it;
report.json keeps them; no section without a gateway. The listing is the module's own
(sglang_gateway_listing.combine) over smg 1.13.0's recorded answers."""

import json

from ansible_collections.sglang.deploy.plugins.module_utils.gateway import listing
from ansible_collections.sglang.deploy.plugins.modules import sglang_verify_report
from sglang_gateway_worker_support import answer


def _record(run_dir, host):
    (run_dir / "hosts").mkdir(parents=True, exist_ok=True)
    (run_dir / "hosts" / f"{host}.json").write_text(json.dumps({"host": host, "passed": True, "result": {}}))


def test_each_worker_as_each_gateway_lists_it(tmp_path, run_module):
    both = listing.parse_workers(answer("get-workers-two-healthy.json")[1])
    one_down = listing.parse_workers(answer("get-workers-one-unhealthy.json")[1])
    workers = listing.combine([("http://gw-1:30080", both), ("http://gw-2:30080", one_down)])["workers"]
    _record(tmp_path / "run-1", "sglang-local-1")
    run_module(sglang_verify_report, {"run_id": "run-1", "report_dir": str(tmp_path), "gateways": workers})
    summary = (tmp_path / "run-1" / "summary.md").read_text()
    section = summary.split("## Gateways", 1)[1]
    assert "1 of 2 worker(s) healthy and ready in every gateway" in section
    assert "| worker | http://gw-1:30080 | http://gw-2:30080 | routed to |" in section
    assert "| http://127.0.0.1:31001 | ready | ready | yes |" in section
    assert "| http://127.0.0.1:31002 | ready | not_ready | **no** |" in section
    assert json.loads((tmp_path / "run-1" / "report.json").read_text())["gateways"] == json.loads(json.dumps(workers))


def test_no_gateway_no_section(tmp_path, run_module):
    _record(tmp_path / "run-2", "sglang-local-1")
    run_module(sglang_verify_report, {"run_id": "run-2", "report_dir": str(tmp_path)})
    assert "## Gateways" not in (tmp_path / "run-2" / "summary.md").read_text()

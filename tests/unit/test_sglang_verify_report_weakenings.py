"""The verification report lists the sandbox weakenings each host runs with
(plugins/modules/sglang_verify_report.py): the host records' context carries
sglang_flags_sandbox_weakenings (roles/sglang_flags/tasks/model.yml, passed by
roles/sglang_verify/tasks/verify.yml), and summary.md ends with them; no section without any."""

import json

from ansible_collections.sglang.deploy.plugins.modules import sglang_verify_report

WEAK = {"setting": "sglang_server_capabilities", "value": "CAP_SYS_PTRACE",
        "why": "the server holds this capability (as root)", "reason": "NCCL cuMem handles on these hosts"}


def _record(run_dir, host, weakenings):
    (run_dir / "hosts").mkdir(parents=True, exist_ok=True)
    (run_dir / "hosts" / f"{host}.json").write_text(json.dumps({
        "host": host, "passed": True, "result": {}, "context": {"groups": ["blackwell"],
                                                                 "sandbox_weakenings": weakenings}}))


def test_the_summary_lists_the_accepted_weakenings(tmp_path, run_module):
    _record(tmp_path / "run-1", "gpu-node-01", [WEAK])
    _record(tmp_path / "run-1", "gpu-node-02", [])
    out = run_module(sglang_verify_report, {"run_id": "run-1", "report_dir": str(tmp_path)})
    summary = (tmp_path / "run-1" / "summary.md").read_text()
    assert out["hosts"] == ["gpu-node-01", "gpu-node-02"]
    assert "## Sandbox weakenings (sglang_server_allow_weaker_sandbox)" in summary
    assert ("| gpu-node-01 | `sglang_server_capabilities` | `CAP_SYS_PTRACE` | the server holds this capability "
            "(as root) | NCCL cuMem handles on these hosts |") in summary
    assert "| gpu-node-02 |" not in summary.split("## Sandbox weakenings")[1]
    assert (tmp_path / "latest.md").read_text() == summary


def test_no_weakening_no_section(tmp_path, run_module):
    _record(tmp_path / "run-2", "gpu-node-01", [])
    run_module(sglang_verify_report, {"run_id": "run-2", "report_dir": str(tmp_path)})
    assert "Sandbox weakenings" not in (tmp_path / "run-2" / "summary.md").read_text()

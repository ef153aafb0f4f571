"""The server's start log in the verification: sglang_probe reads the newest records, the
console and summary.md show the last cold and the last warm start."""

import json

from ansible_collections.sglang.deploy.plugins.modules import sglang_probe
from ansible_collections.sglang.deploy.plugins.module_utils.verify import render

STARTS = [
    {"at": "2026-11-30T10:00:00Z", "seconds": 41.2, "cache": "cold", "generation": "aaaaaaaaaaaaXX"},
    {"at": "2026-11-30T10:05:00Z", "seconds": 30.4, "cache": "warm", "generation": "aaaaaaaaaaaaXX"},
    {"at": "2026-11-30T10:09:00Z", "seconds": 29.9, "cache": "warm", "generation": "aaaaaaaaaaaaXX"},
    {"at": "2026-11-30T10:12:00Z", "seconds": 5.0, "cache": "unknown", "generation": "aaaaaaaaaaaaXX"},
]


def test_the_probe_reads_the_newest_records_and_skips_a_torn_line(tmp_path):
    log = tmp_path / "sglang.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in STARTS) + "\n{not json\n")
    assert sglang_probe.read_starts(str(log)) == STARTS
    assert sglang_probe.read_starts(str(log), keep=2) == STARTS[-1:]
    assert sglang_probe.read_starts(str(tmp_path / "none")) == [] and sglang_probe.read_starts("") == []


def test_the_last_cold_and_warm_starts_are_shown():
    cold, warm = render.last_starts({"starts": STARTS})
    assert cold["seconds"] == 41.2 and warm["seconds"] == 29.9
    line = render.starts_line({"starts": STARTS})
    assert line == ("cold 41.2 s (aaaaaaaaaaaa, 2026-11-30T10:00:00Z) / "
                    "warm 29.9 s (aaaaaaaaaaaa, 2026-11-30T10:09:00Z)")
    console = render.console_lines("h1", {"starts": STARTS}, {"passed": True})
    assert any(row.startswith("server start (last)") and "cold 41.2 s" in row for row in console)
    assert render.starts_line({"starts": STARTS[1:]}).startswith("cold - / warm 29.9 s")


def test_summary_has_the_start_column():
    report = {"run_id": "r", "hosts": {"h1": {"passed": True, "result": {"starts": STARTS}}}}
    md = render.render_summary_md(report)
    header, _, row = md.splitlines()[2:5]
    assert header.endswith("| start s cold / warm | quality |")
    assert row.endswith("| 41.2 / 29.9 | - |")

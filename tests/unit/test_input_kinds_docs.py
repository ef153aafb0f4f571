"""docs/security.md's table of the number of options per input kind is generated
(scripts/input-kinds-table.py from every role's meta/input_kinds.yml), never hand-kept: stale, it
fails here, and an option added with a kind changes the count it shows."""

import subprocess
import sys
from pathlib import Path

import yaml

from ansible_collections.sglang.deploy.plugins.module_utils.inputs import catalogue

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "input-kinds-table.py"


def test_the_table_in_the_docs_is_the_generated_one():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--check"], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr


def test_an_option_added_with_a_kind_changes_the_count():
    files = {p.parent.parent.name: yaml.safe_load(p.read_text()) for p in (ROOT / "roles").glob("*/meta/input_kinds.yml")}
    before = catalogue.docs_table(files)
    port = next(int(line.split("|")[2]) for line in before.splitlines() if line.startswith("| `port` |"))
    files["sglang_watchdog"]["options"]["sglang_watchdog_new_port"] = "port"
    after = catalogue.docs_table(files)
    assert f"| `port` | {port + 1} |" in after
    assert (ROOT / "docs" / "security.md").read_text().count(before) == 1  # the page holds the current table

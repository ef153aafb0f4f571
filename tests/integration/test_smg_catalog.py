"""scripts/smg_catalog.py against the installed smg (.cache/smg-venv, smg==sglang_gateway_version,
built by `make tools`): the committed catalog of the pinned version is what smg's own parser says,
written again byte for byte."""

import os
import subprocess

from test_smg_launcher import smg_python

from conftest import ROOT  # pylint: disable=wrong-import-order


def test_the_committed_catalog_is_smgs_parser_read_again(tmp_path):
    proc = subprocess.run([smg_python(), os.path.join(ROOT, "scripts", "smg_catalog.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    written = list(tmp_path.iterdir())
    assert [p.name for p in written] == ["smg-1.13.0.json"]
    with open(os.path.join(ROOT, "roles", "sglang_gateway", "files", "catalogs", "smg-1.13.0.json"),
              encoding="utf-8") as fh:
        assert written[0].read_text(encoding="utf-8") == fh.read()

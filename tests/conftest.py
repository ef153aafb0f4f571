"""Shared test set-up. The project's Python is imported by name, as the collection sglang.deploy
(``ansible_collections.sglang.deploy.plugins.{modules,module_utils,filter}``): scripts/collections.sh
links the checkout into ./collections and puts that folder on the venv's path, the way Ansible
finds it through ansible.cfg collections_path."""
import importlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(name="run_module")
def fixture_run_module(capsys):
    """run_module(module, args, check_mode=False): the module's main() with these arguments, as
    Ansible would call it; returns the JSON result it printed."""
    def run(module, args, check_mode=False):
        if check_mode:
            args = dict(args, _ansible_check_mode=True)
        with patch_module_args(args):
            with pytest.raises(SystemExit):
                module.main()
        return json.loads(capsys.readouterr().out)
    return run


# a role file that runs on the gateway host as a script (tests/integration/test_smg_launcher.py
# starts it by this path, as the unit does)
SMG_LAUNCHER = os.path.join(ROOT, "roles", "sglang_gateway", "files", "smg_launcher.py")


@pytest.fixture(name="smg_launcher", scope="session")
def fixture_smg_launcher():
    """roles/sglang_gateway/files/smg_launcher.py as a module (it imports smg only in main()): a
    script on the gateway host, imported here by its name in the collection like any other file."""
    return importlib.import_module("ansible_collections.sglang.deploy.roles.sglang_gateway.files.smg_launcher")


@pytest.fixture(name="host_tmp")
def fixture_host_tmp():
    """A scratch directory for a test that runs a role on this machine as its host, outside the trees
    other users can write into (the roles' input kinds refuse /tmp, /var/tmp and the homes as places
    root writes, docs/security.md "Input kinds"): /var/lib/sglang-deploy-tests/<unique>, root's own
    (0700), removed afterwards."""
    base = Path("/var/lib/sglang-deploy-tests")
    base.mkdir(mode=0o755, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="t-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)

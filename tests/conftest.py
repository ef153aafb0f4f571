"""Shared test set-up. The project's Python is imported by name, as the collection sglang.deploy
(``ansible_collections.sglang.deploy.plugins.{modules,module_utils,filter}``): scripts/collections.sh
links the checkout into ./collections and puts that folder on the venv's path, the way Ansible
finds it through ansible.cfg collections_path."""
import json
import os

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

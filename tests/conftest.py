"""Shared test set-up, the one way tests import the project's Python:

* the repository's module_utils/ (ansible.cfg module_utils) and every role's module_utils are
  importable as ansible.module_utils.<name>, the way Ansible ships them to a module;
* filter plugins and modules (roles/*/filter_plugins, roles/*/library) are importable by their
  file name (``import sglang_flags``, ``import sglang_probe``), as Ansible loads them by path."""
import glob
import json
import os
import sys

import ansible.module_utils
import pytest
from ansible.module_utils.testing import patch_module_args

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

for _dir in [os.path.join(ROOT, "module_utils")] + sorted(glob.glob(os.path.join(ROOT, "roles", "*", "module_utils"))):
    if _dir not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_dir)

for _dir in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "filter_plugins"))
                   + glob.glob(os.path.join(ROOT, "roles", "*", "library"))):
    if _dir not in sys.path:
        sys.path.append(_dir)


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

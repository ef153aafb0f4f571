"""Shared test set-up: every role's module_utils is importable as ansible.module_utils.<name>,
the way Ansible ships it to a module, so tests import plugins exactly as the modules do."""
import glob
import os

import ansible.module_utils

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

for _dir in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "module_utils"))):
    if _dir not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_dir)

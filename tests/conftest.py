"""Shared test set-up, the one way tests import the project's Python:

* the repository's module_utils/ (ansible.cfg module_utils) and every role's module_utils are
  importable as ansible.module_utils.<name>, the way Ansible ships them to a module;
* filter plugins and modules (roles/*/filter_plugins, roles/*/library) are importable by their
  file name (``import sglang_flags``, ``import sglang_probe``), as Ansible loads them by path."""
import glob
import os
import sys

import ansible.module_utils

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

for _dir in [os.path.join(ROOT, "module_utils")] + sorted(glob.glob(os.path.join(ROOT, "roles", "*", "module_utils"))):
    if _dir not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_dir)

for _dir in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "filter_plugins"))
                   + glob.glob(os.path.join(ROOT, "roles", "*", "library"))):
    if _dir not in sys.path:
        sys.path.append(_dir)

# -*- coding: utf-8 -*-
"""The one by-path loader of the controller-side filter plugins.

Ansible loads each filter plugin file by its path, under a module name of its own and outside
any package, so a plugin cannot import the file beside it by name; and on the controller
``ansible.module_utils`` is ansible-core's installed package, not this folder (ansible.cfg
``module_utils`` only decides what is shipped to the hosts with a module). A plugin that needs
another file of the repository therefore loads it by path, through this file, which it gets
with runpy (standard library, no loader of its own needed) in one line::

    _load = runpy.run_path(os.path.join(os.path.dirname(__file__), "../../../module_utils/sglang_by_path.py"))["load"]
    MODEL = _load(__file__, "../../../module_utils/sglang_flags_model.py")
    _versions = _load(__file__, "sglang_flags_version.py")

Users: roles/sglang_flags/filter_plugins/ (sglang_flags.py, sglang_flags_catalog.py,
sglang_flags_conditions.py, sglang_flags_deploy.py, sglang_flags_inputs.py, sglang_flags_rules.py),
roles/sglang_monitoring/filter_plugins/sglang_monitoring_hosts.py and
roles/sglang_firewall/filter_plugins/sglang_firewall.py (the server's unit checks). No module imports it: nothing
here runs on the hosts. Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os


def _stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def load(anchor, relative):
    """The Python file at ``relative`` to the folder of ``anchor`` (the caller's ``__file__``),
    executed as a new module named ``_<caller>_<file>``. It is not entered in sys.modules, so
    every caller has a copy of its own, whatever else has loaded the same file."""
    path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(anchor)), relative))
    spec = importlib.util.spec_from_file_location("_%s_%s" % (_stem(anchor), _stem(path)), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

"""Every variable a unit file is made of goes through the offline input checks: the templates'
variables (parsed with Jinja2) are each a checked input (UNIT_INPUTS of
plugins/module_utils/flags/inputs.py for the server's unit and environment
file, of plugins/module_utils/firewall/sources.py for the firewall's unit and
ruleset) or derived from checked ones (UNIT_DERIVED, each saying from what); the lint passes every
checked input (tasks/evaluate.yml, roles/sglang_firewall/tasks/lint.yml); and each checked input
refuses a value with a line break. A variable added to a template fails here until it is one or
the other."""

from pathlib import Path

import jinja2
import jinja2.nodes
import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.firewall import sources as F
from ansible_collections.sglang.deploy.plugins.module_utils.flags import inputs as I
import yaml

ROOT = Path(__file__).resolve().parents[2]
SERVER = ["templates/sglang.service.j2", "templates/sglang.env.j2"]
FIREWALL = ["roles/sglang_firewall/templates/sglang-firewall.service.j2",
            "roles/sglang_firewall/templates/sglang-firewall.nft.j2"]
# a value of each kind with a line break in it
BROKEN = {"path-list": ["/x\nExecStartPre=/tmp/pwn"], "device-list": ["char-nvidia-uvm rw\nUser=root"],
          "capability-list": ["CAP_IPC_LOCK\nUser=root"], "env-map": {"A": "1\nB=2"}}


def variables(text):
    """The variables a template reads (not the ones it sets: loop targets, {% set %})."""
    tree = jinja2.Environment().parse(text)
    names = list(tree.find_all(jinja2.nodes.Name))
    return {n.name for n in names if n.ctx == "load"} - {n.name for n in names if n.ctx in ("store", "param")} - {"loop"}


def unchecked(paths, inputs, derived, extra=""):
    used = set()
    for path in paths:
        used |= variables((ROOT / path).read_text(encoding="utf-8") + extra)
    return used - set(inputs) - set(derived)


def lint_inputs(path, task_index, var):
    tasks = yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))
    return tasks[task_index]["vars"][var]


def test_every_variable_of_the_server_templates_is_checked_or_derived():
    assert unchecked(SERVER, I.UNIT_INPUTS, I.UNIT_DERIVED) == set()


def test_every_variable_of_the_firewall_templates_is_checked_or_derived():
    assert unchecked(FIREWALL, F.UNIT_INPUTS, F.UNIT_DERIVED) == set()


def test_a_new_template_variable_is_caught():
    extra = "\nNice={{ sglang_server_nice }}\n{% for x in sglang_firewall_more %}{{ x }}{% endfor %}\n"
    assert unchecked(SERVER, I.UNIT_INPUTS, I.UNIT_DERIVED, extra) == {"sglang_server_nice", "sglang_firewall_more"}


def test_every_checked_input_has_a_kind_the_lint_and_the_role_judge():
    # the lint (playbooks/lint.yml, every role) and each role's entry points judge a variable by
    # the kind its role's meta/input_kinds.yml gives it: every checked input of the templates has one
    kinds = {}
    for role in ("sglang_server", "model_files", "sglang_firewall"):
        kinds.update(yaml.safe_load((ROOT / "roles" / role / "meta" / "input_kinds.yml").read_text())["options"])
    assert set(I.UNIT_INPUTS) | set(I.MODEL_INPUTS) | set(F.UNIT_INPUTS) <= set(kinds)
    passed = lint_inputs("roles/sglang_firewall/tasks/lint.yml", 0, "_sglang_firewall_unit_inputs")
    assert set(passed) == set(F.UNIT_INPUTS)
    assert all(v == "{{ " + k + " }}" for k, v in passed.items())


@pytest.mark.parametrize("name", sorted(I.UNIT_INPUTS))
def test_each_server_input_refuses_a_line_break(name):
    kind = I.UNIT_INPUTS[name]
    value = BROKEN.get(kind, "5\nExecStartPre=/tmp/pwn" if isinstance(kind, tuple) else "x\nExecStartPre=/tmp/pwn")
    found = I.unit_input_findings(name, value)
    assert found and all(f["severity"] == "error" for f in found), (name, found)


@pytest.mark.parametrize("name", sorted(F.UNIT_INPUTS))
def test_each_firewall_input_refuses_a_line_break(name):
    found = F.sglang_firewall_findings({}, unit={name: "x\nExecStartPre=/tmp/pwn"})
    assert any("[input-control-char]" in f["msg"] for f in found), (name, found)

"""One flag model: every role reads the launch flags as the unit is rendered from them,
``sglang_flags_normalized`` (roles/sglang_flags, tasks_from: model; plugins/module_utils/flags/model.py),
not the inventory's ``sglang_server_args`` as written. A consumer of the raw mapping sees
``{"--port": 31000}`` as no port at all while the unit says ``--port 31000`` (the firewall filtered
30000, the monitoring scraped 30000). This test reads the code of every role (defaults, vars,
tasks, handlers, templates, the filters and module_utils), the playbooks and the top-level templates, and fails
when a place not listed in ALLOWED reads ``sglang_server_args``: in a Jinja expression, a
conditional, or a Python string that names the variable."""

import ast
import glob
import os
import re

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VAR = re.compile(r"(?<![\w.])sglang_server_args(?!\w)")
JINJA = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.S)
# task keys whose value is a bare Jinja expression
CONDITIONALS = {"when", "that", "failed_when", "changed_when", "until"}

# The places that read sglang_server_args itself, and why.
ALLOWED = {
    "roles/sglang_flags/tasks/model.yml":
        "the model itself: sglang_flags_normalized = sglang_server_args | sglang_normalize_args",
    "roles/sglang_flags/defaults/main.yml":
        "sglang_flags_server_args: the input checks judge the flags as written, so that a name the "
        "model refuses (or two spellings of one flag) is a finding of the lint, not a crash",
    "plugins/module_utils/flags/inputs.py":
        "names the variable in its findings on the flags as written",
    "plugins/module_utils/flags/rules.py":
        "names the variable in its findings",
    "roles/sglang_server/tasks/render.yml":
        "sglang_server's own render: asserts the mapping before rendering sglang_server_flags (default sglang_flags_normalized)",
    "plugins/module_utils/monitoring/hosts.py":
        "only other hosts' variables are at hand (playbooks/monitoring.yml): sglang_flags_normalized "
        "where the host has it, else its sglang_server_args through the model's normalize_args",
    "plugins/module_utils/inputs/cross.py":
        "the cross-checks of playbooks/lint.yml's first task run before the model normalises: the server's "
        "port from sglang_flags_normalized where the host has it, else sglang_server_args through the model's "
        "normalize_args and resolve_flag",
    "plugins/module_utils/sweep/render.py":
        "writes the key of the inventory snippet it renders for the best candidate; reads nothing",
}


def _yaml_code(node, key=None):
    """The Jinja code in a YAML document: {{ }} and {% %} of every string, and the whole value
    of a conditional key."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _yaml_code(v, k)
    elif isinstance(node, list):
        for item in node:
            yield from _yaml_code(item, key)
    elif isinstance(node, str):
        if key in CONDITIONALS:
            yield node
        for m in JINJA.finditer(node):
            yield m.group(1) or m.group(2)


def _python_names(text):
    """String constants of a Python file that are exactly the variable's name."""
    return [n.value for n in ast.walk(ast.parse(text))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and VAR.fullmatch(n.value.strip())]


def readers():
    """{relative path: number of reads} for every file that reads sglang_server_args."""
    patterns = ["roles/*/defaults/*.yml", "roles/*/vars/*.yml", "roles/*/tasks/*.yml",
                "roles/*/handlers/*.yml", "roles/*/templates/*", "plugins/filter/*.py",
                "plugins/module_utils/*.py", "plugins/module_utils/*/*.py",
                "playbooks/*.yml", "deploy.yml", "templates/*.j2"]
    found = {}
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            rel = os.path.relpath(path, ROOT)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            if path.endswith(".py"):
                reads = len(_python_names(text))
            elif path.endswith(".yml"):
                reads = sum(len(VAR.findall(code)) for doc in yaml.safe_load_all(text)
                            for code in _yaml_code(doc))
            else:  # a Jinja template: {# #} comments and plain text are not code
                reads = sum(len(VAR.findall(m.group(1) or m.group(2))) for m in JINJA.finditer(text))
            if reads:
                found[rel] = reads
    return found


def test_only_the_allowed_places_read_sglang_server_args():
    found = readers()
    extra = sorted(set(found) - set(ALLOWED))
    assert not extra, (f"{extra} read sglang_server_args: read sglang_flags_normalized (the normalised "
                       "flags the unit is rendered from) instead, or list the place in ALLOWED with "
                       "its reason")


def test_every_allowed_place_still_reads_it():
    """A place that no longer reads the variable leaves the list."""
    assert sorted(set(ALLOWED) - set(readers())) == []


def test_the_monitoring_normalises_with_the_model():
    with open(os.path.join(ROOT, "plugins/module_utils/monitoring/hosts.py"),
              encoding="utf-8") as fh:
        assert 'MODEL.normalize_args(_var(hv, "sglang_server_args"))' in fh.read()


def test_the_scan_finds_a_raw_read():
    """The scan itself: the firewall's old default and lint read the raw mapping."""
    old = "sglang_firewall_port: \"{{ (sglang_server_args | default({})).get('port', 30000) }}\"\n"
    assert sum(len(VAR.findall(c)) for c in _yaml_code(yaml.safe_load(old))) == 1
    assert _python_names('args = _var(hv, "sglang_server_args") or {}') == ["sglang_server_args"]
    assert _python_names('msg = f"sglang_server_args: {x!r} is not"') == []
    task = {"ansible.builtin.assert": {"that": ["sglang_server_args is mapping"]}}
    assert list(_yaml_code(task)) == ["sglang_server_args is mapping"]

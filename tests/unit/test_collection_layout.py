"""The contract that the repository stays one collection, sglang.deploy (docs/architecture.md,
"One collection"):

- no Python file loads Python by its path (importlib's spec_from_file_location or
  SourceFileLoader, runpy.run_path, imp's load_source, site.addsitedir, a change to sys.path or
  to a package's __path__): Python imports Python by name;
- no plugin folder beside a role or a playbook (roles/*/library, roles/*/module_utils,
  roles/*/filter_plugins, a top-level module_utils/, ...): plugins live in plugins/;
- no tracked text file points at such a folder (a path through it, "ansible.cfg module_utils")
  or imports a module_utils of plugins/module_utils as ansible.module_utils.<name>: the folders
  went, and a comment, a doc or a test that names them sends the reader nowhere;
- every task that calls a module of plugins/modules calls it as sglang.deploy.<name>, and every
  use of a filter that plugins/filter exports is spelled sglang.deploy.<name>;
- every filter plugins/filter exports is used by a YAML or Jinja file outside tests/ (the tests
  call the Python functions, they need no export);
- no ansible-lint noqa silences an fqcn rule, and .ansible-lint skips none;
- plugins/filter holds thin entries: each file only imports and maps filter names to functions
  of plugins/module_utils (class FilterModule), and nothing imports a filter file (no filter
  imports another, nor does any other Python of the collection);
- plugins/module_utils is packages named after what they hold (each with its __init__.py); a
  file at its top is one of the few shared helpers of SHARED_UTILS.

This file is left out of the Python scan: it names the loaders it looks for."""

import ast
import importlib
import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SELF = Path(__file__).resolve()
FQCN = "sglang.deploy."
# the checkout's caches and tooling (galaxy.yml build_ignore), not the repository's own files
SKIP = {".venv", ".cache", ".git", "collections", "reports", ".pytest_cache", "__pycache__", ".whl", ".gl"}
PYTHON_TOPS = ["plugins", "roles", "tests", "molecule", "scripts"]
TASK_TOPS = ["roles", "playbooks", "molecule", "tests", ".config", "deploy.yml"]
# relative path -> why that file must load Python by its path. None does: gpu_admit_measure.py,
# a script on the GPU host, finds its siblings because Python puts a script's folder on sys.path,
# and the tests import the role files they exercise by name (roles.<role>.files.<file>).
BY_PATH_ALLOWED = {}
LOADERS = {"spec_from_file_location", "SourceFileLoader", "run_path", "load_source", "addsitedir", "__path__"}
SYS_PATH_CHANGES = {"insert", "append", "extend", "__setitem__", "__iadd__"}
PLUGIN_FOLDERS = ["library", "module_utils", "filter_plugins", "callback_plugins", "lookup_plugins",
                  "test_plugins", "action_plugins"]
# a path through a plugin folder that is gone: beside a role or a scenario (roles/<role>/library,
# also without a slash after it), beside the playbooks, or at the root (library/, filter_plugins/);
# plugins/<folder> is not one of them
_FOLDERS = "|".join(PLUGIN_FOLDERS)
DEAD_PATHS = [
    ("a role's or a scenario's plugin folder",
     re.compile(r"(?<![\w./-])(?:roles|molecule)/[\w*<>.-]+/(?:%s)\b" % _FOLDERS)),
    ("a plugin folder beside the playbooks", re.compile(r"(?<![\w./-])playbooks/(?:%s)\b" % _FOLDERS)),
    ("a plugin folder at the root", re.compile(r"(?<![\w./*<>-])(?:%s)/" % _FOLDERS)),
    ("ansible.cfg's module_utils setting", re.compile(r"ansible\.cfg\W{0,3}module_utils")),
]
# the module_utils at the top of plugins/module_utils, shared by several packages; every other
# file lives in the package of its concern (flags/, verify/, quality/, sweep/, gpu/, ...)
SHARED_UTILS = {
    "local_fact.py": "a module's local fact, written in its own round trip (gpu_admit, gpu_host)",
    "sglang_files.py": "atomic file writes, the one way every module writes a file",
    "sglang_http.py": "the one HTTP client (server wait, gateway, verification, watchdog)",
    "sglang_input_guard.py": "the guards every value turned into a unit, argv, ruleset or path passes",
    "sglang_prometheus.py": "the one reader of Prometheus' text format (verification, gateway, watchdog)",
    "sglang_secrets.py": "secret flag values out of shown text (server wait, sweep record)",
    "sglang_start_log.py": "the server's start log: written by the server wait, read by the verification",
}
FILTER_PACKAGE = "ansible_collections.sglang.deploy.plugins.filter"
PLAY_TASK_LISTS = ("pre_tasks", "tasks", "post_tasks", "handlers")
BLOCK_LISTS = ("block", "rescue", "always")
# a filter applied with a pipe (`x | name`, `x|name(...)`) or handed to map (`map('name')`)
NAME = r"[A-Za-z_]\w*(?:\.\w+)*"  # a dotted name, without a full stop that ends a sentence
FILTER_USE = re.compile(r"\|[ \t]*(%s)|\bmap\(\s*['\"](%s)['\"]" % (NAME, NAME))
NOQA_FQCN = re.compile(r"#\s*noqa\b[^\n]*\bfqcn", re.IGNORECASE)


def repo_files(tops, suffixes):
    """Files under these top-level names (folders or files) whose name ends with a suffix."""
    for top in tops:
        path = ROOT / top
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        for found in candidates:
            rel = found.relative_to(ROOT)
            if found.is_file() and found.name.endswith(suffixes) and not SKIP.intersection(rel.parts):
                yield found


def rel(path):
    return str(path.relative_to(ROOT))


def module_names():
    return {p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__"}


def filter_names():
    """Every filter plugins/filter exports (FilterModule.filters()), imported by name."""
    names = set()
    for path in sorted((ROOT / "plugins" / "filter").glob("*.py")):
        module = importlib.import_module("ansible_collections.sglang.deploy.plugins.filter." + path.stem)
        if hasattr(module, "FilterModule"):
            names.update(module.FilterModule().filters())
    return names


def is_sys_path(node):
    return (isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


def by_path_loads(source):
    """(line, what) for each place this Python source loads Python by its path."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in LOADERS:
            yield node.lineno, "." + node.attr
        elif isinstance(node, ast.Attribute) and node.attr in SYS_PATH_CHANGES and is_sys_path(node.value):
            yield node.lineno, "sys.path." + node.attr
        elif isinstance(node, ast.ImportFrom):
            names = {alias.name for alias in node.names}
            if names & LOADERS or (node.module == "sys" and "path" in names):
                yield node.lineno, "from %s import %s" % (node.module, ", ".join(sorted(names)))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if is_sys_path(target) or (isinstance(target, ast.Subscript) and is_sys_path(target.value)):
                    yield node.lineno, "sys.path assigned"


class _AnyTagLoader(yaml.SafeLoader):
    """SafeLoader that reads Ansible's tags (!vault, !unsafe) as plain nodes."""


_AnyTagLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def tasks_of(doc):
    """Every task of a playbook or of a task file, the tasks of its blocks included."""
    if not isinstance(doc, list):
        return
    for item in doc:
        if not isinstance(item, dict):
            continue
        if "hosts" in item or "import_playbook" in item:
            for key in PLAY_TASK_LISTS:
                yield from tasks_of(item.get(key))
        else:
            yield item
            for key in BLOCK_LISTS:
                yield from tasks_of(item.get(key))


def called_names(task):
    """The names a task could call a module by: its keys, and the module of action/local_action."""
    yield from (key for key in task if isinstance(key, str))
    for key in ("action", "local_action"):
        value = task.get(key)
        if isinstance(value, str) and value.split():
            yield value.split()[0]
        elif isinstance(value, dict) and isinstance(value.get("module"), str):
            yield value["module"]


def module_calls():
    """(file, task name, module name as written) for every call of a module of the collection."""
    modules = module_names()
    for path in repo_files(TASK_TOPS, (".yml", ".yaml")):
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_AnyTagLoader)
        for task in tasks_of(doc):
            for name in called_names(task):
                if name.rsplit(".", 1)[-1] in modules or name.startswith(FQCN):
                    yield rel(path), task.get("name", "(unnamed)"), name


def filter_uses(filters=None):
    """(file:line, filter name as written) for every use of a filter the collection exports (or of
    these filters), or of any name in the collection's namespace, in YAML and Jinja templates."""
    filters = filter_names() if filters is None else set(filters)
    for path in repo_files(["."], (".yml", ".yaml", ".j2")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in FILTER_USE.finditer(line):
                name = match.group(1) or match.group(2)
                if name.rsplit(".", 1)[-1] in filters or name.startswith(FQCN):
                    yield "%s:%d" % (rel(path), number), name


def test_no_python_file_loads_python_by_its_path():
    found = {}
    for path in repo_files(PYTHON_TOPS, (".py",)):
        if path == SELF:
            continue
        loads = ["line %d: %s" % hit for hit in by_path_loads(path.read_text(encoding="utf-8"))]
        if loads:
            found[rel(path)] = loads
    unexplained = {path: loads for path, loads in found.items() if path not in BY_PATH_ALLOWED}
    assert not unexplained, ("Python loaded by its path; import it by name "
                             "(ansible_collections.sglang.deploy.plugins...): %s" % unexplained)
    stale = sorted(set(BY_PATH_ALLOWED) - set(found))
    assert not stale, "BY_PATH_ALLOWED names files that no longer load by path: %s" % stale


def test_no_plugin_folder_beside_a_role_or_a_playbook():
    """Tracked files only: a folder left behind by an older checkout holds nothing but
    __pycache__, which git neither tracks nor Ansible loads a plugin from."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    folders = {str(Path(path).parent) for path in tracked}
    places = ["", "playbooks/", *sorted("roles/%s/" % p.name for p in (ROOT / "roles").iterdir()),
              *sorted("molecule/%s/" % p.name for p in (ROOT / "molecule").iterdir())]
    found = sorted({folder for folder in folders for place in places for name in PLUGIN_FOLDERS
                    if folder == place + name or folder.startswith(place + name + "/")})
    assert not found, "plugins belong in plugins/ (modules, module_utils, filter, callback): %s" % found


def tracked_texts():
    """(relative path, text) of every tracked text file but this one, as in the working tree."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for path in sorted(p for p in tracked.decode().split("\0") if p):
        full = ROOT / path
        if full == SELF or not full.is_file():
            continue
        try:
            text = full.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if "\0" not in text:
            yield path, text


def dead_paths(text):
    """(line, what, the words) for each place this text points at a plugin folder that is gone,
    or imports a module_utils of the collection as ansible.module_utils.<name>."""
    utils = sorted({p.stem for p in (ROOT / "plugins" / "module_utils").glob("*.py") if p.stem != "__init__"}
                   | {p.name for p in (ROOT / "plugins" / "module_utils").iterdir() if p.is_dir() and p.name != "__pycache__"})
    old_import = re.compile(r"\bansible\.module_utils\.(?:%s)\b" % "|".join(map(re.escape, utils)))
    checks = DEAD_PATHS + [("ansible.module_utils.<name> for plugins/module_utils/<name>.py", old_import)]
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in checks:
            for match in pattern.finditer(line):
                yield number, what, match.group(0)


def test_no_text_points_at_a_plugin_folder_that_is_gone():
    found = ["%s:%d: %s (%s)" % (path, number, words, what)
             for path, text in tracked_texts() for number, what, words in dead_paths(text)]
    assert not found, ("these point at plugin folders that are gone; name the file under plugins/ "
                       "(modules, module_utils, filter, callback) or its FQCN: %s" % found)


@pytest.mark.parametrize("text, expected", [
    ("# (filter_plugins/sglang_flags_deploy.py)", ["filter_plugins/"]),
    ("one call, `library/sglang_server_files.py`", ["library/"]),
    ("-M roles/sglang_server/library", ["roles/sglang_server/library"]),
    ("(roles/sglang_sweep/library)", ["roles/sglang_sweep/library"]),
    ("deploy rules: roles/sglang_flags/filter_plugins)", ["roles/sglang_flags/filter_plugins"]),
    ("playbooks/library/x.py", ["playbooks/library"]),
    ("the repository's module_utils/ (ansible.cfg module_utils)", ["module_utils/", "ansible.cfg module_utils"]),
    ("import it (ansible.cfg `module_utils`)", ["ansible.cfg `module_utils"]),
    ("``ansible.module_utils.sglang_http``", ["ansible.module_utils.sglang_http"]),
    ("plugins/module_utils/sglang_http.py, plugins/filter/x.py, the filter_plugins setting", []),
    ("ansible_collections.sglang.deploy.plugins.module_utils.sglang_http", []),
    ("from ansible.module_utils.basic import AnsibleModule; the standard library only", []),
])
def test_the_dead_path_scan_finds_each_form(text, expected):
    assert [words for _, _, words in dead_paths(text)] == expected


def test_every_module_of_the_collection_is_called_by_its_fqcn():
    modules = module_names()
    calls = list(module_calls())
    wrong = ["%s: %r calls %s" % call for call in calls if call[2] != FQCN + call[2].rsplit(".", 1)[-1]
             or call[2].rsplit(".", 1)[-1] not in modules]
    assert not wrong, "call the collection's modules as sglang.deploy.<name> (plugins/modules): %s" % wrong
    # the walk sees the calls: every module of plugins/modules is called somewhere
    uncalled = sorted(modules - {name.rsplit(".", 1)[-1] for _, _, name in calls})
    assert not uncalled, "no task calls these modules of plugins/modules: %s" % uncalled


def test_every_filter_of_the_collection_is_used_by_its_fqcn():
    filters = filter_names()
    uses = list(filter_uses())
    wrong = ["%s: %s" % use for use in uses
             if use[1] != FQCN + use[1].rsplit(".", 1)[-1] or use[1].rsplit(".", 1)[-1] not in filters]
    assert not wrong, "use the collection's filters as sglang.deploy.<name> (plugins/filter): %s" % wrong
    assert uses, "the scan found no use of the collection's filters in YAML or templates"


def unused_filters(filters):
    """The filters no YAML or Jinja file outside tests/ uses."""
    used = {name.rsplit(".", 1)[-1] for where, name in filter_uses(filters) if not where.startswith("tests/")}
    return sorted(set(filters) - used)


def test_every_filter_of_the_collection_is_used_outside_the_tests():
    unused = unused_filters(filter_names())
    assert not unused, "plugins/filter exports filters that no playbook, role or template uses: %s" % unused


def test_an_export_only_the_tests_use_is_refused():
    """sglang_version_compare is a Python function the tests call, used by no YAML."""
    assert unused_filters(["sglang_flags_check", "sglang_version_compare"]) == ["sglang_version_compare"]
    assert "sglang_version_compare" in (ROOT / "tests" / "unit" / "test_sglang_flags_filters.py").read_text()


def test_no_noqa_silences_an_fqcn_rule():
    found = ["%s:%d" % (rel(path), number)
             for path in repo_files(["."], (".yml", ".yaml", ".j2", ".py"))
             if path != SELF
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if NOQA_FQCN.search(line)]
    assert not found, "an fqcn finding is silenced; call the module or filter by its FQCN: %s" % found
    config = yaml.safe_load((ROOT / ".ansible-lint").read_text(encoding="utf-8")) or {}
    skipped = [rule for key in ("skip_list", "warn_list") for rule in config.get(key) or []
               if str(rule).startswith("fqcn")]
    assert not skipped, ".ansible-lint skips or only warns on %s" % skipped


@pytest.mark.parametrize("source, expected", [
    ("import importlib.util\nimportlib.util.spec_from_file_location('m', '/x.py')\n",
     [(2, ".spec_from_file_location")]),
    ("import runpy\nrunpy.run_path('x.py')\n", [(2, ".run_path")]),
    ("import sys\nsys.path.insert(0, 'x')\n", [(2, "sys.path.insert")]),
    ("import sys\nsys.path += ['x']\n", [(2, "sys.path assigned")]),
    ("import ansible.module_utils\nansible.module_utils.__path__.append('x')\n", [(2, ".__path__")]),
    ("import sys\nprint(sys.path)\nimport importlib\nimportlib.import_module('a.b')\n", []),
])
def test_the_scan_finds_each_loader(source, expected):
    assert list(by_path_loads(source)) == expected


def filter_imports(source):
    """(line, module) for each import of a filter file of the collection in this Python source."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module] + ["%s.%s" % (node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            if module.startswith(FILTER_PACKAGE + "."):
                yield node.lineno, module
                break


def not_thin(source):
    """(line, what) for each top-level statement of a filter file that is neither its docstring,
    an import, nor a class FilterModule whose filters() returns a dict of names."""
    tree = ast.parse(source)
    for index, node in enumerate(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ClassDef) and node.name == "FilterModule":
            methods = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
            if (len(methods) == 1 and isinstance(methods[0], ast.FunctionDef) and methods[0].name == "filters"
                    and len(methods[0].body) == 1 and isinstance(methods[0].body[0], ast.Return)
                    and isinstance(methods[0].body[0].value, ast.Dict)):
                continue
        yield node.lineno, type(node).__name__ + (" " + node.name if hasattr(node, "name") else "")


def test_no_python_of_the_collection_imports_a_filter():
    found = ["%s:%d imports %s" % (rel(path), line, module)
             for path in repo_files(["plugins", "roles", "scripts"], (".py",))
             for line, module in filter_imports(path.read_text(encoding="utf-8"))]
    assert not found, ("a filter file is an entry for Ansible, not a library: import the function from "
                       "plugins/module_utils where it lives: %s" % found)


def test_every_filter_file_is_a_thin_entry():
    found = ["%s:%d: %s" % (rel(path), line, what)
             for path in sorted((ROOT / "plugins" / "filter").glob("*.py"))
             for line, what in not_thin(path.read_text(encoding="utf-8"))]
    assert not found, ("plugins/filter maps filter names to functions of plugins/module_utils "
                       "(class FilterModule) and holds no code of its own; move it to module_utils: %s" % found)


def test_module_utils_is_packages_by_concern():
    top = ROOT / "plugins" / "module_utils"
    loose = sorted(p.name for p in top.glob("*.py") if p.name not in SHARED_UTILS)
    assert not loose, ("put these in the package of their concern under plugins/module_utils/ "
                       "(or, for a helper several packages share, in SHARED_UTILS with its reason): %s" % loose)
    assert not sorted(set(SHARED_UTILS) - {p.name for p in top.glob("*.py")}), "SHARED_UTILS names a file that is gone"
    packages = [p for p in top.iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert packages, "plugins/module_utils holds no package"
    without = sorted(p.name for p in packages if not (p / "__init__.py").is_file())
    assert not without, "a package of plugins/module_utils without its __init__.py: %s" % without
    nested = sorted(rel(p) for package in packages for p in package.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert not nested, "one level of packages under plugins/module_utils: %s" % nested


@pytest.mark.parametrize("source, expected", [
    ("from ansible_collections.sglang.deploy.plugins.filter import filters as F\n",
     [(1, "ansible_collections.sglang.deploy.plugins.filter.filters")]),
    ("import x\nfrom ansible_collections.sglang.deploy.plugins.filter.filters import FilterModule\n",
     [(2, "ansible_collections.sglang.deploy.plugins.filter.filters")]),
    ("import ansible_collections.sglang.deploy.plugins.filter.sweep as S\n",
     [(1, "ansible_collections.sglang.deploy.plugins.filter.sweep")]),
    ("from ansible_collections.sglang.deploy.plugins.module_utils.flags import rules\n", []),
    ("from ansible.plugins.filter.core import FilterModule\n", []),
])
def test_the_filter_import_scan_finds_each_form(source, expected):
    assert list(filter_imports(source)) == expected


@pytest.mark.parametrize("source, expected", [
    ('"""Doc."""\nfrom a import b\n\n\nclass FilterModule:\n    def filters(self):\n        return {"x": b.x}\n', []),
    ('"""Doc."""\nimport re\n\n\ndef x(v):\n    return v\n\n\nclass FilterModule:\n'
     '    def filters(self):\n        return {"x": x}\n', [(5, "FunctionDef x")]),
    ('X = 1\n', [(1, "Assign")]),
    ('class FilterModule:\n    def filters(self):\n        y = 1\n        return {"x": y}\n', [(1, "ClassDef FilterModule")]),
])
def test_the_thin_filter_scan_finds_code(source, expected):
    assert list(not_thin(source)) == expected

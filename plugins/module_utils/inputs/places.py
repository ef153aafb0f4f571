"""The kinds of the catalogue that name a place on a host: a path (read), a file the role writes,
a directory it creates, a state directory, an executable root runs, a search path, a path on the
controller, a unit name, a user, a model revision, one directory name (base.py says what a kind
is). Each judges the path after normalising its spelling (``/usr//bin/``, ``/var/run``), never
by what the host has."""

from __future__ import annotations

import re

from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as _guard
from ansible_collections.sglang.deploy.plugins.module_utils.flags import owned as _owned
from ansible_collections.sglang.deploy.plugins.module_utils.inputs.base import Problem, kind, shown
from ansible_collections.sglang.deploy.plugins.module_utils.inputs.scalars import control_problems

PATH_FIX = "give an absolute path without '..', whitespace or '%'"


def syntax_problems(value, spec, relative=False):
    """A path's spelling: one string, no control character, absolute, no '..', no whitespace or
    '%' (a unit's word, a systemd specifier)."""
    if isinstance(value, (list, dict, bool, int, float)):
        return [Problem("input-type", f"is a {type(value).__name__}, not a path", PATH_FIX)]
    text = str(value)
    found = control_problems(text, spec)
    if found:
        return found
    problems = []
    if not relative and not text.startswith("/"):
        problems.append("is not an absolute path")
    if ".." in text.split("/"):
        problems.append("has a '..' component")
    if re.search(r"\s", text) or "%" in text:
        problems.append("has whitespace or '%' (a unit splits its words there; % is a systemd specifier)")
    if problems:
        return [Problem("input-path", f"{shown(value, spec)} {' and '.join(problems)}", PATH_FIX)]
    return []


def _roots_problems(value, spec, what):
    roots = spec.get("roots")
    if not roots:
        return []
    norm = _guard.normalise(value) or ""
    if any(norm.startswith(str(r).rstrip("/") + "/") for r in roots):
        return []
    return [Problem("input-path-root", f"{shown(value, spec)} is not below {', '.join(map(str, roots))}, where "
                    f"{what} belongs", f"give a path below {roots[0]}")]


def _suffix_problems(value, spec):
    suffix = spec.get("suffix")
    if suffix and not str(value).endswith(suffix):
        return [Problem("input-path", f"{shown(value, spec)} does not end in {suffix}",
                        f"give a file name ending in {suffix}")]
    return []


def _user_tree_problems(value, spec, what, ctx=None):
    tree = _guard.user_tree(value)
    if not tree or getattr(ctx, "as_user", False):  # the playbook's own user on the controller: theirs
        return []
    return [Problem("input-user-tree", f"{shown(value, spec)} lies in {tree}, which other users can write into or "
                    f"own: {what}", "give a place root alone writes, e.g. below /var/lib, /opt or /etc")]


def _system_dir_problems(value, spec):
    found = _owned.system_dir(value)
    if not found:
        return []
    return [Problem("input-system-dir", f"{shown(value, spec)} is the system directory {found}: the role creates "
                    "and chmods its directories (root, 0755: /tmp would lose its sticky bit, a home would be "
                    "root's) and writes or prunes files in them",
                    f"give a directory of the deploy's own below it, e.g. {found.rstrip('/')}/sglang")]


def _system_tree_problems(value, spec, what, root_home_ok=False):
    tree = _guard.system_tree(value)
    if (tree == "/root" and root_home_ok) or tree in _guard.USER_TREES:
        return []  # a file in root's own home touches no one else's; a user's tree is judged as theirs
    if not tree or any((_guard.normalise(value) or "").startswith(str(r).rstrip("/") + "/")
                       for r in list(spec.get("roots") or ()) + list(spec.get("within") or ())):
        return []
    return [Problem("input-system-dir", f"{shown(value, spec)} lies in the system tree {tree}: {what}",
                    "give a directory of the deploy's own, e.g. below /var/lib")]


@kind("path", "an absolute path the role reads (no '..', whitespace, '%' or control character); below "
      "`roots` where given; `prefixes`: characters a unit's setting may put before it (-/path); `root_only`: "
      "never in another user's tree (root replaces or trusts what is there)",
      ("roots", "suffix", "prefixes", "root_only"))
def _path(value, spec, ctx):
    text = str(value)
    if spec.get("prefixes") and text[:1] in spec["prefixes"]:
        value = text[1:]
    found = syntax_problems(value, spec) or _roots_problems(value, spec, "it") or _suffix_problems(value, spec)
    if not found and spec.get("root_only"):
        found = _user_tree_problems(value, spec, "root would replace or trust what another user can put there", ctx)
    return found


@kind("file", "a file the role writes as root: a path (below `roots` where given), never in another user's tree "
      "or a system tree (but below `roots` or `within`), its directory not a system directory",
      ("roots", "suffix", "within"))
def _file(value, spec, ctx):
    return (syntax_problems(value, spec) or _roots_problems(value, spec, "the file belongs")
            or _suffix_problems(value, spec)
            or _user_tree_problems(value, spec, "a symlink planted there would take root's write elsewhere", ctx)
            or _system_tree_problems(value, spec, "root would write a file the system reads", root_home_ok=True)
            or _system_dir_problems(_guard.normalise(value).rsplit("/", 1)[0] or "/", spec))


@kind("dir", "a directory the role creates, chowns and chmods: a path, never a system directory or in "
      "another user's tree", ("roots",))
def _dir(value, spec, ctx):
    return (syntax_problems(value, spec) or _roots_problems(value, spec, "the directory belongs")
            or _system_dir_problems(value, spec)
            or _user_tree_problems(value, spec, "the role would chmod or chown a directory another user owns, "
                                   "and write as root where they can plant a symlink", ctx))


@kind("state-dir", "a directory of the role's own state, written as root and trusted (scripts run from it, "
      "keys or records kept in it): a dir, and never in a system tree", ("roots",))
def _state_dir(value, spec, ctx):
    return _dir(value, spec, ctx) or _system_tree_problems(
        value, spec, "the role would chmod it and keep root's scripts, keys or records there")


@kind("controller-dir", "a directory the role creates and writes on the controller, as the playbook's user: an "
      "absolute path, never a system directory (/tmp would lose its sticky bit); the user's own trees are theirs")
def _controller_dir(value, spec, ctx):
    return syntax_problems(value, spec) or _system_dir_problems(value, spec)


@kind("executable", "a program root runs: an absolute path (a bare name looked up on PATH where `name_ok`), "
      "never in another user's tree", ("name_ok",))
def _executable(value, spec, ctx):
    text = str(value)
    if spec.get("name_ok") and "/" not in text and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", text):
        return []
    return syntax_problems(value, spec) or _user_tree_problems(
        value, spec, "root would run a program another user can replace", ctx)


@kind("search-path", "a PATH: absolute directories separated by ':', none empty or in another user's tree")
def _search_path(value, spec, ctx):
    entries = str(value).split(":")
    for entry in entries:
        if entry == "":
            return [Problem("input-path", "has an empty entry, which a shell reads as the working directory",
                            "remove the empty entry (no leading, trailing or doubled ':')")]
        found = syntax_problems(entry, spec) or _user_tree_problems(
            entry, spec, "a program found there would run as root", ctx)
        if found:
            return found
    return []


@kind("controller-path", "a path on the controller (read or written by the playbook's user): no control "
      "character; relative paths are the playbook's")
def _controller_path(value, spec, ctx):
    if isinstance(value, (list, dict, bool)):
        return [Problem("input-type", f"is a {type(value).__name__}, not a path", "give a path")]
    return control_problems(str(value), spec)


@kind("unit-name", "a systemd unit of the deploy's own: letters, digits and : _ . @ -, no '/', '..', '%' "
      "(a specifier) or control character, not a unit the system has (rescue, autovt@*, sshd ...), not another "
      "unit of the deploy", ("others", "example"))
def _unit_name(value, spec, ctx):
    if isinstance(value, (list, dict, bool)):
        return [Problem("input-type", f"is a {type(value).__name__}, not a unit name", "e.g. sglang")]
    if _guard.control_char(value):
        return control_problems(str(value), spec)
    others = [o for o in spec.get("others") or () if o]
    problem = _guard.unit_name_problem(value, _owned.RESERVED_UNITS, others)
    if not problem:
        return []
    rule = "input-unit-reserved" if "the system has" in problem else "input-unit-name"
    unit = str(value).removesuffix(".service")
    if rule == "input-unit-reserved" or "another unit" in problem:
        problem += (f": /etc/systemd/system/{unit}.service would replace it, and the deploy would start, stop "
                    "or restart it")
    else:
        problem += f": the unit would be written to /etc/systemd/system/{unit}.service"
    example = str(spec.get("example", "sglang"))
    fix = (f"give a name of the deploy's own, e.g. {example}" if rule == "input-unit-reserved" or "another unit"
           in problem else f"letters, digits and : _ . @ - only, no '/', a name of its own, e.g. {example}")
    return [Problem(rule, f"{shown(value, spec)} {problem}", fix)]


@kind("user", "a user name or numeric uid (root only where `allow_root`)", ("allow_root",))
def _user(value, spec, ctx):
    if _guard.control_char(value):
        return control_problems(str(value), spec)
    problem = _guard.user_problem(value, allow_root=spec.get("allow_root", True))
    if problem:
        return [Problem("input-user", f"{shown(value, spec)} {problem}", "give an existing user name, e.g. "
                        + ("root" if spec.get("allow_root", True) else "smg"))]
    return []


@kind("revision", "a model revision: a 40-hex commit sha, or a branch or tag name that names one directory")
def _revision(value, spec, ctx):
    if _guard.control_char(value):
        return control_problems(str(value), spec)
    problem = _owned.revision_problem(value)
    return [Problem("input-revision", f"{shown(value, spec)} {problem}",
                    "give the commit sha (40 hex digits)")] if problem else []


@kind("repo-id", "a Hub repo id as huggingface_hub's validate_repo_id reads it (namespace/name)")
def _repo_id(value, spec, ctx):
    problem = _guard.repo_id_problem(value)
    return [Problem("input-repo-id", f"{shown(value, spec)} {problem}", "e.g. Qwen/Qwen3-0.6B")] if problem else []


@kind("dir-name", "one directory name (a path component): no '/', not '.' or '..', no control character")
def _dir_name(value, spec, ctx):
    problem = _guard.dir_name_problem(value)
    return [Problem("input-dir-name", f"{shown(value, spec)} {problem}", "e.g. qwen3-0.6b")] if problem else []

"""The environment kind of the catalogue: NAME -> value maps given to a process (base.py says what a
kind is). A name is one environment variable name (``X;touch F;Y`` would be a command where the
environment is a command line); a value is one line; a credential (``HF_TOKEN``, ``DB_PASS``:
``is_secret_env`` of plugins/module_utils/sglang_secrets.py) only where the environment lands in a
root-only file (``credentials: allow``); a loader variable never injects code (``LD_PRELOAD``)
and never points into another user's tree (``PYTHONPATH=/home/u/lib``), and none at all where
``loaders: refuse`` (a measurement root runs)."""

from __future__ import annotations

import re

from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as _guard
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_secrets as _secrets
from ansible_collections.sglang.deploy.plugins.module_utils.inputs.base import Problem, kind
from ansible_collections.sglang.deploy.plugins.module_utils.inputs.scalars import control_problems

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# variables whose value is code or a library every process of the environment loads
INJECTING = ("LD_PRELOAD", "LD_AUDIT", "LD_DEBUG_OUTPUT", "PYTHONSTARTUP", "PYTHONINSPECT", "BASH_ENV", "ENV",
             "NODE_OPTIONS", "PERL5OPT", "PYTHONWARNINGS", "GCONV_PATH", "MALLOC_TRACE")
# variables that are search paths of code: each entry must be a place root alone writes
SEARCH_PATHS = ("LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX",
                "PERL5LIB", "RUBYLIB", "NODE_PATH", "PATH", "TRITON_HOME", "TORCH_EXTENSIONS_DIR",
                "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE", "HF_HOME",
                "XDG_CACHE_HOME", "CUDA_CACHE_PATH", "TVM_FFI_CACHE_DIR")


def _value_problems(name, value, spec):
    if isinstance(value, (list, dict)):
        return [Problem("input-env-value", f"is a {type(value).__name__}, not one value",
                        "give a string or a number", f"[{name!r}]")]
    found = control_problems(str(value), dict(spec, secret=True))  # a value may be a credential: never quoted
    return [p._replace(where=f"[{name!r}]") for p in found]


def _loader_problems(name, value, spec):
    upper = name.upper()
    if upper in INJECTING or (spec.get("loaders") == "refuse" and upper in SEARCH_PATHS and upper != "PATH"):
        why = ("loads code into every process of this environment" if upper in INJECTING
               else "decides which code the process loads")
        return [Problem("input-env-loader", f"{name} {why}, and this environment runs as root",
                        f"remove {name}; install what it would load into the environment itself", f"[{name!r}]")]
    if upper in SEARCH_PATHS and value not in (None, ""):
        for entry in str(value).split(":"):
            tree = _guard.user_tree(entry) if entry.startswith("/") else ""
            if entry and not entry.startswith("/"):
                return [Problem("input-env-loader", f"{name} has the relative entry {entry!r}: code would be "
                                "loaded from wherever the process happens to run", "give absolute directories",
                                f"[{name!r}]")]
            if tree:
                return [Problem("input-env-loader", f"{name} points into {tree} ({entry}), which other users can "
                                "write: root would load the code they put there",
                                "point it at a directory root alone writes (below /opt, /usr/local or the ML "
                                "environment)", f"[{name!r}]")]
    return []


@kind("env", "an environment: NAME ([A-Za-z_][A-Za-z0-9_]*) -> one value; credentials only where "
      "`credentials: allow`; no code-injecting loader variable, search paths only into root's places "
      "(none at all where `loaders: refuse`)", ("credentials", "loaders"))
def _env(value, spec, ctx):
    if not isinstance(value, dict):
        return [Problem("input-type", f"is a {type(value).__name__}, not a mapping NAME -> value",
                        "write it as {NAME: value}")]
    found = []
    for name, item in value.items():
        if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
            found.append(Problem("input-env-name", "is not an environment variable name: a shell, a unit or an "
                                 "environment file would read it as something else",
                                 "letters, digits and '_', not starting with a digit ([A-Za-z_][A-Za-z0-9_]*)",
                                 f"[{str(name)!r}]"))
            continue
        if item is None:
            continue
        bad = _value_problems(name, item, spec) or _loader_problems(name, item, spec)
        if not bad and spec.get("credentials", "refuse") != "allow" and _secrets.is_secret_env(name) \
                and item not in ("", None):
            bad = [Problem("input-env-credential", f"{name} holds a credential, and this environment is shown "
                           "(a task's environment is on the command line -vvv prints) or written readable",
                           "leave the credential out of this environment (the server's own environment file, "
                           "root-only, is the place for HF_TOKEN)", f"[{name!r}]")]
        found += bad
    return found

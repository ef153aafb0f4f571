# -*- coding: utf-8 -*-
"""SGLang's launch flags as the inventory writes them, in one place.

The inventory variable ``sglang_server_args`` is a mapping of flag name to value:

* the name is the long option without its leading dashes (``model-path``); underscores are
  accepted and folded to dashes, so ``model_path`` and ``model-path`` are the same flag and
  giving both is an error. Names are not lower-cased: SGLang's argparse options are
  case-sensitive (and all lower-case, roles/sglang_flags/files/catalogs/);
* a name is read as SGLang's argparse reads it (``resolve_flag``: Python's argparse with
  allow_abbrev, case-sensitive): the option itself, or the one option it is a prefix of
  (``hos`` is ``--host``), ambiguous, or unknown (``API-KEY`` is no option). Where the unit is
  rendered (``argv``) a name must be the option itself: an abbreviation would set an option the
  checks read under its full name (``--hos 0.0.0.0`` after ``--host 127.0.0.1``);
* ``true`` renders a bare flag (``--trust-remote-code``);
* ``false`` or ``null`` omits the flag;
* a list renders the flag once followed by every item (argparse ``nargs``);
* a mapping renders as one JSON argument (``--json-model-override-args '{"a": 1}'``);
* anything else is rendered with ``str()``.

Used on both sides: the collection's filter plugins import it on the controller (the unit's
ExecStart, the flag rules), and Ansible ships it with the modules that import it, e.g. the probe
(plugins/modules/sglang_probe.py), which compares the running server's
``launch_command`` with the same flags. Standard library only.
"""

import hashlib
import json
import re

# the guards every value of the command line passes (shared with the lint)
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as GUARD

# Flags whose value is a secret: never shown, never part of the flag hash.
SECRET_FLAGS = ("api-key", "admin-api-key", "ssl-keyfile-password", "watermark-config", "watermark-key")

# Flag name -> /server_info field, where the field is not simply the flag with dashes turned
# into underscores (sglang 0.5.23).
FLAG_FIELD_ALIASES = {
    "tp": "tp_size",
    "tensor-parallel-size": "tp_size",
    "dp": "dp_size",
    "data-parallel-size": "dp_size",
    "pp": "pp_size",
    "pipeline-parallel-size": "pp_size",
    "ep": "ep_size",
    "expert-parallel-size": "ep_size",
    "fp4-gemm-backend": "fp4_gemm_runner_backend",
    "fp8-gemm-backend": "fp8_gemm_runner_backend",
}

# Values SGLang rewrites on purpose at resolution: (field, asked) -> resolved.
RESOLVED_ALIASES = {
    ("speculative_algorithm", "NEXTN"): "EAGLE",
}

_FLAG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
# The options the deploy reads or refuses by name (the bind, the port the firewall filters, the
# keys, --config): without the host's catalog a name that is a prefix of one of them is read as
# that option, as argparse would (every other name is taken as written; the host's own argparse
# judges it there).
SENSITIVE_OPTIONS = ("host", "port", "api-key", "admin-api-key", "config") + tuple(GUARD.UNSAFE_FLAGS)
# characters that never need quoting in a systemd command line
_SYSTEMD_SAFE = re.compile(r"^[A-Za-z0-9_@+=:,./-]+$")


class FlagModelError(ValueError):
    """A flag set the model refuses; the message names the variable and the fix."""


# --------------------------------------------------------------------------------------------
# names and the flag set
# --------------------------------------------------------------------------------------------
def normalize_flag(name):
    """``--model_path`` / ``model-path`` -> ``model-path``; rejects what argparse never accepts."""
    if not isinstance(name, str):
        raise FlagModelError(
            "sglang_server_args: flag name %r is not a string; "
            "write the long option without dashes, e.g. 'model-path'" % (name,))
    flag = name.strip().lstrip("-").replace("_", "-")
    if not _FLAG_RE.match(flag):
        raise FlagModelError(
            "sglang_server_args: %r is not a valid flag name; use the long option "
            "without leading dashes, letters, digits and '-' only (e.g. 'model-path')" % (name,))
    return flag


def resolve_flag(flag, options=None):
    """How SGLang's argparse reads ``--flag`` (a folded name without dashes), as Python's argparse
    does with allow_abbrev (``_parse_optional``: the option itself, else every option the name is
    a prefix of; case-sensitive): ``("known", [flag])``, ``("abbreviation", [full])``,
    ``("ambiguous", [names])`` or ``("unknown", [])``. ``options``: the names of the host's SGLang
    (no dashes); without them only SENSITIVE_OPTIONS are known to be prefixed, and a name with an
    upper-case letter is unknown (SGLang's options are all lower case)."""
    flag = str(flag)
    if options:
        names = set(str(o).lstrip("-") for o in options)
        if flag in names:
            return "known", [flag]
        matches = sorted(n for n in names if n.startswith(flag))
        if len(matches) == 1:
            return "abbreviation", matches
        return ("ambiguous", matches) if matches else ("unknown", [])
    if flag != flag.lower():
        return "unknown", []
    matches = [o for o in SENSITIVE_OPTIONS if o != flag and o.startswith(flag)]
    if flag in SENSITIVE_OPTIONS or not matches:
        return "known", [flag]
    return ("abbreviation", matches) if len(matches) == 1 else ("ambiguous", matches)


def resolution_problems(args, options=None):
    """``[(flag, rule, message, fix)]`` (the message not naming the variable): every name of ``args``
    (folded) that argparse does not
    read as exactly itself (an abbreviation, an ambiguous prefix, a name of the wrong case), and
    every two names it reads as the same option (``host`` and ``hos``)."""
    problems, seen = [], {}
    for flag in fold_args(args):
        kind, names = resolve_flag(flag, options)
        if kind == "abbreviation":
            problems.append((flag, "flag-abbreviation", "is read by SGLang's argparse as --%s (an abbreviation), "
                             "which the deploy's checks would not see" % names[0],
                             "write it in full: %s" % names[0]))
        elif kind == "ambiguous":
            problems.append((flag, "flag-ambiguous", "is a prefix of %s: argparse refuses it as ambiguous"
                             % ", ".join("--" + n for n in names), "write the flag you mean in full"))
        elif kind == "unknown" and flag != flag.lower():
            problems.append((flag, "flag-case", "is no option of SGLang: its argparse is case-sensitive and "
                             "its options are lower case", "write it in lower case: %s" % flag.lower()))
        full = names[0] if kind in ("known", "abbreviation") else flag
        if full in seen:
            problems.append((flag, "flag-duplicate", "sglang_server_args sets --%s and --%s, which argparse reads as "
                             "the same option --%s: the last one wins silently" % (seen[full], flag, full),
                             "keep one of them, written in full"))
        seen.setdefault(full, flag)
    return problems


def fold_args(args):
    """Flag names folded (``model_path`` -> ``model-path``), values as given (``false`` and
    ``null`` kept: to drift they mean "not on the command line"); keeps the inventory's order."""
    if args is None:
        return {}
    if not isinstance(args, dict):
        raise FlagModelError(
            "sglang_server_args must be a mapping of flag -> value, got %s" % type(args).__name__)
    out, seen = {}, {}
    for name, value in args.items():
        flag = normalize_flag(name)
        if flag in seen:
            raise FlagModelError("sglang_server_args: %r and %r are the same flag --%s; keep one"
                                 % (name, seen[flag], flag))
        seen[flag] = name
        out[flag] = value
    return out


def normalize_args(args):
    """The flag set as it is launched: names folded, omitted flags (``false``/``null``) dropped;
    keeps the inventory's order."""
    return dict((flag, value) for flag, value in fold_args(args).items()
                if value is not None and value is not False)


# --------------------------------------------------------------------------------------------
# rendering: argv and the systemd command line
# --------------------------------------------------------------------------------------------
def _scalar(flag, value):
    if isinstance(value, bool):  # only reachable inside lists
        return "true" if value else "false"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    if isinstance(value, (list, tuple)):
        raise FlagModelError(
            "sglang_server_args['%s']: nested lists are not supported; give a flat list" % flag)
    return str(value)


def _refuse_tokens(flag, values):
    """Raise for a flag or values that SGLang would read otherwise than the inventory says: a
    key or --config by any prefix (argparse abbreviations), a control character or line
    separator, a value that argparse reads as an option."""
    refused = GUARD.refused_option(flag)
    if refused:
        raise FlagModelError(
            "sglang_server_args['%s'] is read by SGLang as --%s, which the deploy never takes from the "
            "flags: the keys go into sglang_server_api_key / sglang_server_admin_api_key (a root-only "
            "file given with --config); write the flags of a config file into sglang_server_args" % (flag, refused))
    unsafe = GUARD.refused_option(flag, tuple(GUARD.UNSAFE_FLAGS))
    if unsafe:
        raise FlagModelError("sglang_server_args['%s'] is read by SGLang as --%s, which %s; %s"
                             % (flag, unsafe, GUARD.UNSAFE_FLAGS[unsafe][0], GUARD.UNSAFE_FLAGS[unsafe][1]))
    for value in values:
        if GUARD.control_char(value):
            raise FlagModelError(
                "sglang_server_args['%s'] contains the control character %s: it would end the unit's "
                "line there; remove it" % (flag, GUARD.control_char(value)))
    dashed = GUARD.dash_value(values)
    if dashed:
        raise FlagModelError(
            "sglang_server_args['%s']: the value %r starts with '-', and SGLang's argparse reads it as "
            "an option, not as a value; a value may start with '-' only as a number (-1)" % (flag, dashed))


def argv(args, options=None):
    """The argv tokens after ``-m sglang.launch_server``; raises FlagModelError for what
    _refuse_tokens refuses and for a name argparse would not read as exactly itself
    (resolution_problems; ``options``: the host's SGLang's option names, when known)."""
    for flag, _rule, message, fix in resolution_problems(args, options):
        refused = GUARD.refused_option(flag)
        if refused:  # a key by any spelling: _refuse_tokens says so
            _refuse_tokens(flag, [])
        raise FlagModelError("sglang_server_args['%s'] %s; %s" % (flag, message, fix))
    out = []
    for flag, value in normalize_args(args).items():
        out.append("--" + flag)
        if value is True:
            _refuse_tokens(flag, [])
            continue
        if isinstance(value, (list, tuple)):
            if not value:
                raise FlagModelError(
                    "sglang_server_args['%s'] is an empty list; use null to omit the flag" % flag)
            values = [_scalar(flag, v) for v in value]
        else:
            values = [_scalar(flag, value)]
        _refuse_tokens(flag, values)
        out.extend(values)
    return out


def systemd_quote(token):
    """Quote one word for a systemd ExecStart= line (``%`` and ``$`` escaped)."""
    token = str(token)
    escaped = token.replace("%", "%%").replace("$", "$$")
    if token and _SYSTEMD_SAFE.match(token):
        return escaped
    escaped = escaped.replace("\\", "\\\\").replace('"', '\\"')
    return '"%s"' % escaped


def exec_lines(tokens):
    """Group argv into one line per flag (flag + its values), systemd-quoted."""
    lines = []
    for token in tokens:
        quoted = systemd_quote(token)
        if str(token).startswith("--") or not lines:
            lines.append(quoted)
        else:
            lines[-1] += " " + quoted
    return lines


# --------------------------------------------------------------------------------------------
# reading back: SGLang's launch_command
# --------------------------------------------------------------------------------------------
def _launch_name(token):
    """The folded flag name of a ``--flag`` / ``--flag=value`` token, or None."""
    if not token.startswith("--") or len(token) <= 2:
        return None
    return token[2:].split("=", 1)[0].replace("_", "-")


def parse_launch_command(cmd):
    """``launch_command`` (/server_info) is the server's argv joined by spaces (no quoting).
    Returns {folded flag name: value}; a bare flag maps to True; a value with spaces (JSON) is
    re-joined. The program part before the first --flag is dropped."""
    if not cmd:
        return {}
    flags = {}
    current = None
    for tok in cmd.split():
        name = _launch_name(tok)
        if name is not None:
            if "=" in tok:
                flags[name] = tok.split("=", 1)[1]
                current = None
                continue
            flags[name] = True
            current = name
        elif current is not None:
            prev = flags[current]
            flags[current] = tok if prev is True else "%s %s" % (prev, tok)
    return flags


def redact_launch_command(cmd):
    """The launch command with the value of every secret flag replaced by ``<redacted>``."""
    if not cmd:
        return cmd
    out = []
    redact = False
    for tok in cmd.split():
        if redact:
            out.append("<redacted>")
            redact = False
            continue
        name = _launch_name(tok)
        if name in SECRET_FLAGS:
            if "=" in tok:
                out.append("%s=<redacted>" % tok.split("=", 1)[0])
            else:
                out.append(tok)
                redact = True
            continue
        out.append(tok)
    return " ".join(out)


# --------------------------------------------------------------------------------------------
# comparing
# --------------------------------------------------------------------------------------------
def norm_value(v):
    """A flag value in the form compared with what the server shows: True = bare flag; lists
    joined by spaces, their items as argv renders them; mappings and JSON text as canonical
    JSON; numbers compared numerically."""
    if v is True:
        return True
    if isinstance(v, (list, tuple)):
        return " ".join(str(norm_value(_scalar("", x) if isinstance(x, bool) else x)) for x in v)
    if isinstance(v, dict):
        return json.dumps(v, sort_keys=True, separators=(",", ":"))
    s = str(v).strip()
    if s[:1] in ("{", "["):
        try:
            return json.dumps(json.loads(s), sort_keys=True, separators=(",", ":"))
        except ValueError:
            pass
    try:
        f = float(s)
        if f == int(f) and "e" not in s.lower():
            return str(int(f))
        return repr(f)
    except (ValueError, OverflowError):
        return s


def field_for_flag(flag):
    """The /server_info field that shows a flag's resolved value."""
    return FLAG_FIELD_ALIASES.get(flag, flag.replace("-", "_"))


def redact_flags(flags):
    """The flag set with every secret value replaced by ``<redacted>`` (for reports)."""
    return dict((k, "<redacted>" if k in SECRET_FLAGS else v) for k, v in (flags or {}).items())


def flag_hash(flags):
    """Short, stable hash of a flag set, secrets left out: a speed baseline is only comparable
    with the same flags. It hashes the mapping as given (see normalize_args)."""
    canon = json.dumps({k: v for k, v in sorted((flags or {}).items()) if k not in SECRET_FLAGS},
                       sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:12]

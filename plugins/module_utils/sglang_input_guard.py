# -*- coding: utf-8 -*-
"""The guards that every value turned into a unit, an argv, a ruleset or a path passes, in one
place (docs/security.md, "Who refuses what").

Each function returns why a value is refused ("" when it is not), never raises and never quotes
a secret. The code that renders uses them (the flag model's argv, the environment file, the
server's render guard, the firewall, the gateway launcher, model_files), and the lint reports
the same answers as findings (plugins/module_utils/flags/inputs.py and its siblings), so a check
that protects a host runs whatever tags or plays ran. Standard library only: modules import it.
"""

import fnmatch
import ipaddress
import posixpath
import re
import unicodedata

# Unicode line and paragraph separators (Zl, Zp) and every control character (Cc: \n, \r, \t,
# \x00, U+0085 NEL): a line break ends a unit's directive or an environment file's line there.
CONTROL_CATEGORIES = ("Cc", "Zl", "Zp")
# SGLang options never taken from the inventory's flags (the keys travel in a root-only file
# given with --config; a --config of the inventory's own sets flags nothing here reads)
REFUSED_OPTIONS = ("api-key", "admin-api-key", "config")
# SGLang options the deploy never renders, by any prefix: option -> (what it does, the fix)
UNSAFE_FLAGS = {
    "enable-custom-logit-processor": (
        "lets every client send a custom logit processor, serialized Python code the server loads and runs",
        "remove it; a site that needs a processor builds it into its SGLang"),
}
# smg 1.13's options that carry or grant a credential (smg/router_args.py): never from
# sglang_gateway_extra_args (roles/sglang_gateway/files/smg_launcher.py keeps the same list)
SMG_KEY_OPTIONS = ("--api-key", "--control-plane-api-keys", "--tenant-api-key", "--jwt-issuer", "--jwt-audience",
                   "--jwt-jwks-uri", "--jwt-role-mapping", "--oracle-password")
# a value may start with '-' only as a number (-1): argparse reads any other as an option
_NUMBER_RE = re.compile(r"-(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_UNIT_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9:_.@-]*")
# systemd's valid_user_group_name(), or a numeric uid
_USER_RE = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_-]{0,30}|[0-9]+)")
# Trees whose files decide what the host runs or who logs in (units, timers, cron, sudoers,
# binaries, the boot loader, the kernel's interfaces): the deploy never writes there, and never
# lets a service write there (ReadWritePaths=, WorkingDirectory=).
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
                "/root", "/sbin", "/sys", "/usr", "/var/spool", "/var/lib/systemd", "/run/systemd",
                "/var/lib/dpkg", "/var/lib/apt", "/var/log/journal",
                # the users' homes (their .ssh, their shell's start files), udev's rules, the container
                # engines' state (a container's root file system), D-Bus and the login manager
                "/home", "/run/udev", "/var/lib/docker", "/var/lib/containerd", "/run/docker", "/run/containerd",
                "/var/lib/kubelet", "/run/dbus", "/run/user")
# Trees another user can write into or owns (world-writable with the sticky bit, the homes): a
# file root writes or runs from there can be a symlink or a program that user planted, and a
# directory the deploy chmods or chowns there is that user's (/tmp loses its sticky bit).
USER_TREES = ("/tmp", "/var/tmp", "/dev/shm", "/run/shm", "/run/lock", "/var/crash", "/run/user", "/home",
              "/var/mail", "/var/spool/mail")
# /var/run and /var/lock are links to /run and /run/lock on Debian: judged as what they name
_ALIASES = (("/var/run", "/run"), ("/var/lock", "/run/lock"))
# The deploy's units by default (roles/sglang_server, roles/sglang_firewall, roles/sglang_gateway):
# the variable naming one unit -> the other units' default names, which it must not take (the
# firewall's unit written over the server's, or the reverse)
OTHER_UNITS = {
    "sglang_server_service_name": ("sglang-firewall", "smg", "sglang-watchdog", "sglang-firewall-watch"),
    "sglang_firewall_service_name": ("sglang", "smg", "sglang-watchdog"),
    "sglang_gateway_service": ("sglang", "sglang-firewall", "sglang-watchdog", "sglang-firewall-watch"),
}
# huggingface_hub's validate_repo_id (utils/_validators.py): REPO_ID_REGEX and its other rules
_REPO_ID_RE = re.compile(r"(\b[\w\-.]+\b/)?\b[\w\-.]{1,96}\b")


def control_char(text) -> str:
    """The first control character or line separator of ``text`` as an escape (``\\n``,
    ``\\u2028``), or ""."""
    for char in str(text):
        if unicodedata.category(char) in CONTROL_CATEGORIES:
            return "\\u%04x" % ord(char) if ord(char) > 0xFF else repr(char)[1:-1]
    return ""


def refused_option(flag, refused=REFUSED_OPTIONS) -> str:
    """The refused option (REFUSED_OPTIONS, or ``refused``: names without dashes) that ``--flag``
    reads as: the option itself or any prefix of it (argparse takes an unambiguous prefix for the
    option; an ambiguous one is refused too), in any case (``--API-KEY`` is no option of SGLang's,
    but the key it carries would be written into the unit), or ""."""
    name = str(flag).strip().lstrip("-").replace("_", "-").split("=", 1)[0].lower()  # --API-KEY: a key
    return next((o for o in refused if name and o.startswith(name)), "")


def dash_value(values) -> str:
    """The first of ``values`` (argv items) that argparse would read as an option, or ""."""
    return next((str(v) for v in values if str(v).startswith("-") and not _NUMBER_RE.fullmatch(str(v))), "")


def scalar_problem(value) -> str:
    """Why ``value`` cannot be one word of a unit or an address (a list or a mapping), or ""."""
    if isinstance(value, (list, tuple, dict, set)):
        return f"is a {type(value).__name__}, not a single value"
    return ""


def key_problem(value) -> str:
    """Why ``value`` cannot be an API key ("" for a good one and for none: None or "")."""
    if value is None or value == "":
        return ""
    if isinstance(value, (list, tuple, dict, set, int, float, bool)):
        return f"is a {type(value).__name__}, not a string"
    value = str(value)  # a vault-encrypted string reads as its text
    if not value.strip():
        return "is only whitespace"
    if re.search(r"\s", value) or control_char(value):
        return "contains whitespace or a control character"
    return ""


def normalise(path):
    """An absolute path as the file system resolves its spelling, or None (relative)."""
    text = str(path)
    if not text.startswith("/"):
        return None
    norm = "/" + posixpath.normpath(text).lstrip("/")
    for alias, target in _ALIASES:
        if norm == alias or norm.startswith(alias + "/"):
            norm = target + norm[len(alias):]
    return norm


def user_tree(path) -> str:
    """The tree of USER_TREES ``path`` is or lies under (normalised), or ""."""
    norm = normalise(path)
    if norm is None:
        return ""
    return next((t for t in USER_TREES if norm == t or norm.startswith(t + "/")), "")


def path_problem(path) -> str:
    """Why ``path`` cannot be a path the deploy writes or runs from (relative, '..', a control
    character), or ""."""
    text = str(path)
    if control_char(text):
        return f"contains the control character {control_char(text)}"
    if not text.startswith("/"):
        return "is not an absolute path"
    if ".." in text.split("/"):
        return "has a '..' component"
    return ""


def system_tree(path) -> str:
    """The system tree (SYSTEM_TREES, or '/') ``path`` is or lies under, or ""."""
    norm = normalise(path)
    if norm is None:
        return ""
    if norm == "/":
        return "/"
    return next((t for t in SYSTEM_TREES if norm == t or norm.startswith(t + "/")), "")


def user_problem(user, allow_root=True) -> str:
    """Why ``user`` cannot be a unit's User=, or ""."""
    text = str(user)
    if control_char(text) or not _USER_RE.fullmatch(text):
        return "is not a user name ([A-Za-z_][A-Za-z0-9_-]*, at most 31 characters) or a numeric uid"
    if not allow_root and text in ("root", "0"):
        return "is root: this service runs as a user of its own"
    return ""


def unit_name_problem(name, reserved=(), foreign=()) -> str:
    """Why ``name`` cannot be the name of a unit the deploy writes to
    /etc/systemd/system/<name>.service: not a unit name (leading '-' or '.', '/', '..', a control
    character), a unit the system has (``reserved``: fnmatch patterns), or another unit of the
    deploy's own (``foreign``: its names, e.g. the firewall's unit); "" when it can."""
    text = str(name)
    if text.endswith(".service"):
        text = text[:-len(".service")]
    if not _UNIT_NAME_RE.fullmatch(text) or ".." in text:
        return ("is not a unit name of its own: letters, digits and : _ . @ -, starting with a "
                "letter or digit, no '/', '..' or '%'")
    hit = next((p for p in reserved if fnmatch.fnmatchcase(text, p)), "")
    if hit:
        return f"is the name of a unit the system has (it matches {hit!r})"
    if text in {str(f) for f in foreign if f}:
        return "is the name of another unit of this deploy"
    return ""


def dir_name_problem(name) -> str:
    """Why ``name`` cannot be one directory name (a path component), or ""."""
    text = str(name)
    if control_char(text) or not text or "/" in text or text in (".", "..") or text.startswith("-"):
        return "is not one directory name (no '/', not '.' or '..', no control character)"
    return ""


def repo_id_problem(repo_id) -> str:
    """Why ``repo_id`` is not a Hub repo id as huggingface_hub's validate_repo_id reads it
    ("namespace/name" or "name" of letters, digits, '-', '_', '.'; no '--' or '..'; not ending
    in '.git'), or ""."""
    text = repo_id if isinstance(repo_id, str) else ""
    if not text or control_char(text) or not _REPO_ID_RE.fullmatch(text) or text.count("/") > 1:
        return "is not a Hub repo id: 'namespace/name' of letters, digits, '-', '_' and '.'"
    if "--" in text or ".." in text:
        return "has '--' or '..', which the Hub refuses in a repo id"
    if text.endswith(".git"):
        return "ends in '.git'"
    return ""


def admits_every_address(networks) -> str:
    """The address family whose every address the union of ``networks`` (ip_network objects or
    their text) admits, whatever its spelling (0.0.0.0/0; 0.0.0.0/1 and 128.0.0.0/1; ::/0;
    ::ffff:0:0/96 for IPv4), as "IPv4 (0.0.0.0/0)"; "" when none does."""
    nets = []
    for net in networks or []:
        try:
            nets.append(ipaddress.ip_network(str(net), strict=False))
        except ValueError:
            continue
    mapped = [ipaddress.ip_network(f"{n.network_address.ipv4_mapped}/{n.prefixlen - 96}")
              for n in nets if n.version == 6 and n.prefixlen >= 96
              and n.network_address.ipv4_mapped is not None and n.subnet_of(ipaddress.ip_network("::ffff:0:0/96"))]
    for version, every in ((4, "0.0.0.0/0"), (6, "::/0")):
        union = ipaddress.collapse_addresses([n for n in nets + mapped if n.version == version])
        if any(str(n) == every for n in union):
            return f"IPv{version} ({every})"
    return ""

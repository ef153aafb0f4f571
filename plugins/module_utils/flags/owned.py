"""What the deploy writes must be its own: the unit's name, the directories it creates, and the
model revision it names as a directory (docs/security.md, "What the deploy owns").

roles/sglang_server writes ``/etc/systemd/system/<sglang_server_service_name>.service`` and
enables it, creates ``sglang_server_config_dir`` and ``sglang_server_workdir`` as root with mode
0755 (tasks/configure.yml), and roles/model_files puts a revision in
``<model_files_root>/<name>/<model_files_revision>`` and removes the revisions nothing uses
there. A name or a path that is the system's would replace an sshd or docker unit, chmod /tmp
(its sticky bit gone) or prune under /usr. These checks refuse such values offline; the
findings are made in plugins/module_utils/flags/inputs.py
(unit_input_findings), each naming the variable and the fix. Standard library only.
"""

from __future__ import annotations

import fnmatch
import re

from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as _guard

# Units a host already has, whose name the server's unit must not take (fnmatch patterns): the
# remote shell, the system's own daemons, the container engines, the login prompts, the NVIDIA
# daemons and what roles/sglang_monitoring installs. Short on purpose; the host-side check
# (plugins/modules/sglang_server_files.py) refuses any unit file the role did
# not write.
RESERVED_UNITS = (
    "ssh", "sshd", "systemd-*", "dbus", "dbus-*", "cron", "crond", "anacron", "atd",
    "networking", "network", "NetworkManager*", "docker", "containerd", "getty*", "serial-getty*",
    "console-getty", "polkit", "rsyslog", "syslog", "udev", "auditd", "apparmor", "chrony*", "ntp*",
    "nftables", "iptables", "firewalld", "ufw", "unattended-upgrades", "user@*", "user-runtime-dir@*",
    "nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm", "dcgm*", "prometheus*",
    # systemd's own services of the boot and the consoles (rescue.service runs a root shell on the
    # console; autovt@ and container-getty@ are the login prompts) and the tools a host logs in with
    "rescue", "emergency", "debug-shell", "autovt@*", "container-getty@*", "sulogin*", "initrd*",
    "kmod*", "modprobe@*", "plymouth*", "quotaon", "ldconfig", "sudo", "login", "logind", "sshd@*",
    "ssh@*", "sshd-keygen*", "cloud-init*", "cloud-config", "cloud-final", "snapd*", "multipathd", "lvm2*",
    "mdmonitor*", "smartd", "sysstat", "fstrim", "e2scrub*", "man-db", "apt-daily*", "dpkg-db-backup",
    "logrotate", "exim4", "postfix*", "nginx", "apache2", "haproxy", "kubelet", "node-exporter",
    "prometheus-node-exporter*",
)

# Directories of the system itself: never a working, configuration, cache or model directory
# (the role chowns and chmods what it creates: /tmp would lose its sticky bit), never a
# ReadWritePaths= of the sandbox. Compared after normalising (posixpath.normpath).
SYSTEM_DIRS = frozenset((
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media",
    "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp",
    "/usr", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32",
    "/usr/libexec", "/usr/local", "/usr/local/bin", "/usr/local/sbin", "/usr/local/lib", "/usr/share",
    "/var", "/var/lib", "/var/cache", "/var/log", "/var/tmp", "/var/run", "/var/spool", "/var/mail",
    "/var/opt", "/var/backups", "/var/local",
    "/etc/systemd", "/etc/systemd/system", "/lib/systemd", "/usr/lib/systemd",
))
# Trees the server must never write: a ReadWritePaths= anywhere below them undoes
# ProtectSystem=strict where it matters (units, timers, cron, sudoers, binaries, the kernel's
# interfaces). One list, the guards' (plugins/module_utils/sglang_input_guard.py).
PROTECTED_TREES = _guard.SYSTEM_TREES

# A revision names a directory (<root>/<name>/<revision>): a 40-hex commit sha, or a branch or
# tag name of letters, digits, '.', '_' and '-' that starts with a letter or digit. No '/' (the
# Hub allows branch names such as refs/pr/1: pin those by their sha), no '..'.
_REVISION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


# An absolute path as the file system resolves its spelling ('/usr//bin/' and '/usr/./x/..' ->
# '/usr/bin', '/usr'; /var/run -> /run), or None for a relative one: the guards' own.
normalise = _guard.normalise


def system_dir(path) -> str:
    """The system directory ``path`` is (normalised), or ""."""
    norm = normalise(path)
    return norm if norm in SYSTEM_DIRS else ""


def protected(path) -> str:
    """The system directory or protected tree ``path`` is or lies under, or ""."""
    norm = normalise(path)
    if norm is None:
        return ""
    if norm in SYSTEM_DIRS:
        return norm
    return _guard.system_tree(norm)


def reserved_unit(name) -> str:
    """The pattern of RESERVED_UNITS that ``name`` (without .service) matches, or ""."""
    text = str(name)
    if text.endswith(".service"):
        text = text[:-len(".service")]
    return next((p for p in RESERVED_UNITS if fnmatch.fnmatchcase(text, p)), "")


def revision_problem(value) -> str:
    """Why ``value`` cannot be a model revision, or ""."""
    text = str(value)
    if _REVISION_RE.match(text) and ".." not in text:
        return ""
    return ("is neither a 40-hex commit sha nor a branch or tag name of letters, digits, '.', '_' "
            "and '-' (no '/', no '..'): the revision names the model's directory, "
            "<model_files_root>/<name>/<revision>")

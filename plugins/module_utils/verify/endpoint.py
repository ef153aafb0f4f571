# -*- coding: utf-8 -*-
"""An SGLang endpoint this project did not deploy, verified by its URL (playbooks/verify_endpoint.yml,
docs/operations.md "Verifying an endpoint by its URL"): the name its reports, baselines and quality
reference are kept under, and the flags it was launched with, which key its speed baseline the
way a deployed host's inventory flags do. Standard library and the flag model only, but for the
three filters of the playbook at the end (the controller's; plugins/filter/filters.py publishes them)."""

import re
import urllib.parse

from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import SECRET_FLAGS, parse_launch_command

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class EndpointError(ValueError):
    """A URL the endpoint verification cannot use; the message names the rule and the fix."""


def parse_url(url):
    """(scheme, host, port) of an endpoint URL: http or https, a host, no credentials, no query,
    no fragment, no path beyond '/'. The key goes in sglang_verify_api_key (sent as a bearer
    token), never in the URL, where every report and log line would carry it."""
    if not isinstance(url, str) or not url.strip():
        raise EndpointError("sglang_verify_endpoint_url is empty. Fix: -e sglang_verify_endpoint_url=http://HOST:PORT")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise EndpointError("sglang_verify_endpoint_url holds whitespace or a control character. "
                            "Fix: the bare base URL, http://HOST:PORT")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise EndpointError("sglang_verify_endpoint_url %r: the scheme must be http or https, not %r. "
                            "Fix: http://HOST:PORT" % (_shown(parts), parts.scheme))
    if parts.username is not None or parts.password is not None:
        raise EndpointError("sglang_verify_endpoint_url carries credentials (user:password@): they would be "
                            "printed in every report. Fix: the URL without them, the key in sglang_verify_endpoint_api_key")
    if parts.query or parts.fragment or parts.path not in ("", "/"):
        raise EndpointError("sglang_verify_endpoint_url %r: only the server's base URL, without a path, query or "
                            "fragment. Fix: %s://%s" % (_shown(parts), parts.scheme, parts.netloc))
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise EndpointError("sglang_verify_endpoint_url %r: the port is not a number from 1 to 65535" % _shown(parts))
    if not parts.hostname:
        raise EndpointError("sglang_verify_endpoint_url %r names no host. Fix: http://HOST:PORT" % _shown(parts))
    return parts.scheme, parts.hostname, port


def _shown(parts):
    return urllib.parse.urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", ""))


def endpoint_id(url):
    """The endpoint's name in reports and baselines: 'endpoint-<host>-<port>' (an https endpoint
    'endpoint-https-<host>-<port>'), an IPv6 address's colons as '_', any other character outside
    [A-Za-z0-9._-] folded to '-'."""
    scheme, host, port = parse_url(url)
    host = host.replace(":", "_")
    name = "%s-%s" % (host, port) if scheme == "http" else "https-%s-%s" % (host, port)
    return "endpoint-" + _UNSAFE.sub("-", name).strip("-")


def base_url(url):
    """The URL the probes use: scheme://host:port, no trailing slash."""
    scheme, host, port = parse_url(url)
    return "%s://%s:%d" % (scheme, "[%s]" % host if ":" in host else host, port)


def launch_flags(launch_command, ignore=("host", "port")):
    """The flags the endpoint was launched with (its /server_info launch_command), folded as the
    flag model folds them, without the address flags (the same server behind another address
    keeps its baseline) and without the secret flags (never a figure's key, never sent back).
    They key its speed baseline and are what drift compares the running server with."""
    flags = parse_launch_command(launch_command or "")
    drop = set(ignore) | set(SECRET_FLAGS)
    return dict((k, v) for k, v in flags.items() if k not in drop)


def _wrap(fn):
    from ansible.errors import AnsibleFilterError  # noqa: PLC0415 - the filters only, on the controller

    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except EndpointError as exc:
            raise AnsibleFilterError(str(exc))
    call.__doc__ = fn.__doc__
    return call


sglang_endpoint_id = _wrap(endpoint_id)
sglang_endpoint_base_url = _wrap(base_url)
sglang_endpoint_launch_flags = _wrap(launch_flags)

# -*- coding: utf-8 -*-
"""The one HTTP client of the project's modules (standard library urllib): the probe of
roles/sglang_verify (through plugins/module_utils/verify/client.py), the readiness wait of
roles/sglang_server, the gateway calls of roles/sglang_gateway (plugins/modules/sglang_gateway_worker.py)
and the liveness watchdog. Shipped with each module as
``ansible_collections.sglang.deploy.plugins.module_utils.sglang_http``.

A redirect to another origin (scheme, host or port) is followed without the request's credentials
(``Authorization``, ``Proxy-Authorization``, ``Cookie``): urllib copies every header of the request
onto the redirected one, which would hand a server's or a gateway's admin key to whatever the
redirect names. ``public_url`` is a URL as messages and logs may show it: without user information,
query or fragment (a token may ride in any of them)."""

import json
import urllib.error
import urllib.parse
import urllib.request

JSON_HEADERS = {"Content-Type": "application/json"}
# headers that carry a credential: never sent to an origin the request did not name
CREDENTIAL_HEADERS = ("authorization", "proxy-authorization", "cookie")


def origin(url):
    """(scheme, host, port) of ``url``, the port defaulted by the scheme; None when it has none."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
        return parts.scheme, (parts.hostname or "").lower(), port
    except ValueError:
        return None


class _SameOriginCredentials(urllib.request.HTTPRedirectHandler):
    """urllib's redirect handling, less the credentials on a redirect that leaves the origin."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and origin(newurl) != origin(req.full_url):
            for name in list(new.headers):
                if name.lower() in CREDENTIAL_HEADERS:
                    del new.headers[name]
            for name in list(new.unredirected_hdrs):
                if name.lower() in CREDENTIAL_HEADERS:
                    del new.unredirected_hdrs[name]
        return new


_OPENER = urllib.request.build_opener(_SameOriginCredentials())


def public_url(url):
    """``url`` without its user information, query and fragment (``http://u:p@gw:8080/x?token=t`` ->
    ``http://gw:8080/x``): what a message, a log line or a record shows. Text that is not a URL is
    shown as ``<url>``."""
    if not url:
        return url
    try:
        parts = urllib.parse.urlsplit(str(url))
    except ValueError:
        return "<url>"
    if "@" not in parts.netloc and not parts.query and not parts.fragment:
        return str(url)
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1], query="", fragment=""))


def open_url(url, body=None, method=None, headers=None, timeout=10.0):
    """The response of one request, for reading it as it arrives (a stream). ``body`` is sent
    as JSON. Raises urllib's errors (HTTPError for an answer that is not 2xx)."""
    data = json.dumps(body).encode("utf-8") if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    return _OPENER.open(req, timeout=timeout)


def request(url, body=None, method=None, headers=None, timeout=10.0):
    """(status, body text) of one request; status 0 with the reason when no HTTP answer came
    (refused, timed out, not a URL)."""
    try:
        with open_url(url, body, method, headers, timeout) as resp:
            return resp.status, resp.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return 0, str(getattr(exc, "reason", exc))

# -*- coding: utf-8 -*-
"""The one HTTP client of the project's modules (standard library urllib): the probe of
roles/sglang_verify (through plugins/module_utils/verify/client.py), the readiness wait of
roles/sglang_server and the gateway calls of roles/sglang_gateway (plugins/modules/sglang_gateway_worker.py). Shipped with each module as
``ansible_collections.sglang.deploy.plugins.module_utils.sglang_http``."""

import json
import urllib.error
import urllib.request

JSON_HEADERS = {"Content-Type": "application/json"}


def open_url(url, body=None, method=None, headers=None, timeout=10.0):
    """The response of one request, for reading it as it arrives (a stream). ``body`` is sent
    as JSON. Raises urllib's errors (HTTPError for an answer that is not 2xx)."""
    data = json.dumps(body).encode("utf-8") if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    return urllib.request.urlopen(req, timeout=timeout)


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

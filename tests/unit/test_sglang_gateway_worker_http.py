"""The HTTP side of plugins/module_utils/gateway/api.py against a stand-in on a local
socket that replays smg 1.13.0's recorded answers (tests/fixtures/smg/): the admin key sent as a
bearer token, 401 without it, 409 for a URL already registered, 404 of a DELETE, no answer."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.gateway import api
from ansible_collections.sglang.deploy.plugins.modules import sglang_gateway_worker as m
from sglang_gateway_worker_support import answer, sglang_metrics

KEY = "admin-key-for-tests"


class Recorded(BaseHTTPRequestHandler):
    seen = []

    def log_message(self, *a):
        pass

    def _reply(self, name_or_status, body=None, ctype="application/json"):
        status, text = answer(name_or_status) if body is None else (name_or_status, body)
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.seen.append((self.command, self.path, self.headers.get("Authorization"), body))
        if self.path == "/w/metrics":
            return self._reply(200, sglang_metrics(), "text/plain")
        if self.headers.get("Authorization") != "Bearer " + KEY:
            return self._reply("get-workers-no-key.json")
        if self.command == "GET" and self.path == "/workers":
            return self._reply("get-workers-two-healthy.json")
        if self.command == "POST":
            return self._reply("post-workers-exists.json")
        if self.command == "DELETE":
            return self._reply("delete-worker-unknown.json")
        return self._reply(404, "{}")

    do_GET = do_POST = do_DELETE = _handle


@pytest.fixture
def gateway_url():
    Recorded.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorded)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_the_admin_key_goes_as_a_bearer_token(gateway_url):
    workers = api.Gateway(gateway_url, KEY).workers()
    assert len(workers) == 2 and Recorded.seen[0][2] == "Bearer " + KEY


def test_without_the_key_the_error_says_which_variable(gateway_url):
    with pytest.raises(api.GatewayError, match="HTTP 401.*sglang_gateway_admin_api_key"):
        api.Gateway(gateway_url, None).workers()


def test_a_url_already_registered_is_not_an_error(gateway_url):
    assert api.Gateway(gateway_url, KEY).add("http://127.0.0.1:31001", "worker-key") is None
    method, path, auth, body = Recorded.seen[-1]
    assert (method, path, body) == ("POST", "/workers", {"url": "http://127.0.0.1:31001", "api_key": "worker-key"})


def test_delete_of_an_unknown_worker_is_left_to_the_listing(gateway_url):
    api.Gateway(gateway_url, KEY).remove("01a23418-7122-76dd-b2b5-a7e61ac75153")
    assert Recorded.seen[-1][:2] == ("DELETE", "/workers/01a23418-7122-76dd-b2b5-a7e61ac75153")


def test_the_worker_metrics_are_read_without_a_key(gateway_url):
    count, why = api.read_in_flight(gateway_url + "/w")
    assert count is not None and why == "" and Recorded.seen[-1][2] is None


def test_no_answer_names_the_gateway():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(api.GatewayError, match="no answer"):
        api.Gateway("http://127.0.0.1:%d" % port, KEY, timeout=2).workers()


def test_listed_through_the_module(gateway_url):
    res = m.run([(gateway_url, api.Gateway(gateway_url, KEY))], dict(gateway_url=[gateway_url], state="listed", worker_url=None), False)
    assert res["healthy"] == 2 and not res["changed"]

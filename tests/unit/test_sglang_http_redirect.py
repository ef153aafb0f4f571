"""The project's one HTTP client (plugins/module_utils/sglang_http.py) follows a redirect within the
origin with the request's credentials and a redirect to another origin (another port, host or
scheme) without them: two real HTTP servers on this machine, the first redirecting to the second.
And a URL is printed without its user information, query and fragment (public_url)."""

import http.server
import threading

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils import sglang_http as H

KEY = "Bearer admin-" + "k" * 24


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802  http.server's name
        self.server.seen.append((self.path, self.headers.get("Authorization"), self.headers.get("Cookie")))
        if self.path.startswith("/to/"):
            self.send_response(302)
            self.send_header("Location", self.path[len("/to/"):].replace("PORT", str(self.server.other)))
            self.end_headers()
            return
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture
def servers():
    pair = [http.server.HTTPServer(("127.0.0.1", 0), _Handler) for _ in range(2)]
    for server, other in zip(pair, reversed(pair)):
        server.seen, server.other = [], other.server_port
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield pair
    for server in pair:
        server.shutdown()
        server.server_close()


def test_a_redirect_to_another_port_drops_the_credentials(servers):
    first, second = servers
    status, body = H.request(f"http://127.0.0.1:{first.server_port}/to/http://127.0.0.1:PORT/x",
                             headers={"Authorization": KEY, "Cookie": "session=abc"})
    assert (status, body) == (200, "ok")
    assert first.seen == [(f"/to/http://127.0.0.1:PORT/x", KEY, "session=abc")]
    assert second.seen == [("/x", None, None)]


def test_a_redirect_to_another_host_name_drops_them_too(servers):
    first, second = servers
    H.request(f"http://127.0.0.1:{first.server_port}/to/http://localhost:{second.server_port}/y",
              headers={"Authorization": KEY})
    assert second.seen == [("/y", None, None)]


def test_a_redirect_within_the_origin_keeps_them(servers):
    first, _ = servers
    H.request(f"http://127.0.0.1:{first.server_port}/to//z", headers={"Authorization": KEY})
    assert first.seen[-1] == ("/z", KEY, None)


@pytest.mark.parametrize("url,shown", [
    ("http://admin:pw@gw.example:30080/workers", "http://gw.example:30080/workers"),
    ("https://mirror.example/hf?token=abc#x", "https://mirror.example/hf"),
    ("http://user@10.0.0.1:30000", "http://10.0.0.1:30000"),
    ("http://10.0.0.1:30000", "http://10.0.0.1:30000"),
    ("http://u:p@[::1/", "<url>"),
])
def test_a_url_is_shown_without_its_credentials(url, shown):
    assert H.public_url(url) == shown

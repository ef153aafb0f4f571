"""The rollout scenario's gateways as their clients see them: smg, installed by roles/sglang_gateway
on each of the scenario's two gateway hosts, in front of the SGLang hosts (registered by name on
the scenario's Docker network), as two gateways behind DNS or a load balancer would be. While a
`with GatewayTraffic(...)` block runs, clients send requests through both in turn (short
questions with a known answer, and long generations that are in flight whenever a host is
drained) and a sampler records the workers each lists and their health. Nothing here stands in
for a gateway: every request goes through a real one."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from ansible_collections.sglang.deploy.molecule.shared.fleet import ask, every, ip_of

GATEWAYS = ["molecule-gateway-1", "molecule-gateway-2"]
GATEWAY = GATEWAYS[0]
PORT = 30080
# the local profile's control-plane key (inventories/local/group_vars/all/gateway.yml): made by
# Ansible's password lookup on the controller on first use, read here to list the workers
ADMIN_KEY_FILE = Path.home() / ".config" / "sglang-deploy" / "local-gateway-admin-key"
# a long generation (up to this many tokens, ignore_eos asked for: about a second on the tiny
# model) every LONG_PERIOD seconds, so that one is often in flight when a host is drained and a
# restart that cut one would show up as a failed request (the local profile's gateway does not
# retry); not back to back: the servers share 2 cores with the rollout they are measured under
LONG_TOKENS = 256
LONG_PERIOD = 3.0


def worker_url(host):
    """A host's server as the gateway knows it (roles/sglang_gateway: the inventory name)."""
    return f"http://{host}:30000"


def admin_key():
    return ADMIN_KEY_FILE.read_text(encoding="utf-8").split()[0]


def _call(url, body=None, key=None, timeout=10):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.load(resp)


class GatewayTraffic:
    """Clients and a listing sampler on the deployed gateways for the duration of a `with` block."""

    def __init__(self, hosts, period=0.5, gateways=tuple(GATEWAYS)):
        self.urls = [f"http://{ip_of(g)}:{PORT}" for g in gateways]
        self.url = self.urls[0]
        self._turn = 0
        self.workers = {h: worker_url(h) for h in hosts}
        self.requests = []  # (monotonic time, answered "OK", error text)
        self.long = []  # (start, end, completion tokens, error text)
        self.listings = []  # (monotonic time, {worker url: healthy in every gateway})
        self.per_gateway = []  # (monotonic time, {gateway url: {worker url: healthy}})
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=every, args=(period, self._stop, self._ask), daemon=True),
                         threading.Thread(target=every, args=(LONG_PERIOD, self._stop, self._generate), daemon=True),
                         threading.Thread(target=every, args=(0.5, self._stop, self._list), daemon=True)]

    def listings_now(self):
        """{gateway url: {worker url: healthy}} as each gateway lists its workers now."""
        out = {}
        for url in self.urls:
            answer = _call(f"{url}/workers", key=admin_key())
            out[url] = {w["url"]: bool(w.get("is_healthy")) for w in answer["workers"]}
        return out

    def listed_nowhere(self, host):
        """Whether no gateway lists `host`'s worker now (healthy or not)."""
        return all(worker_url(host) not in listed for listed in self.listings_now().values())

    def listing(self):
        """{worker url: healthy in every gateway} now (a worker one gateway does not list is not)."""
        return self._combined(self.listings_now())

    @staticmethod
    def _combined(each):
        urls = {u for listed in each.values() for u in listed}
        return {u: all(listed.get(u, False) for listed in each.values()) for u in sorted(urls)}

    def _next(self):
        """The gateways in turn: each request goes through the next one."""
        self._turn += 1
        return self.urls[self._turn % len(self.urls)]

    def _ask(self, t):
        try:
            ok, err = ask(None, timeout=30, base=self._next()) == "OK", ""
        except Exception as exc:  # noqa: BLE001 - every failure is recorded and asserted on
            ok, err = False, repr(exc)[:200]
        self.requests.append((t, ok, err))

    def _generate(self, t):
        body = {"model": "tiny-qwen2", "temperature": 0, "max_tokens": LONG_TOKENS, "ignore_eos": True,
                "messages": [{"role": "user", "content": "Count slowly."}]}
        try:
            answer = _call(f"{self._next()}/v1/chat/completions", body, timeout=120)
            tokens, err = answer["usage"]["completion_tokens"], ""
            if answer["choices"][0].get("finish_reason") not in ("stop", "length"):
                err = f"finish_reason {answer['choices'][0].get('finish_reason')!r}"
        except Exception as exc:  # noqa: BLE001 - recorded and asserted on
            tokens, err = 0, repr(exc)[:200]
        self.long.append((t, time.monotonic(), tokens, err))

    def _list(self, t):
        try:
            each = self.listings_now()
        except (OSError, urllib.error.URLError, ValueError):
            return  # a gap in the record of listings only
        self.per_gateway.append((t, each))
        self.listings.append((t, self._combined(each)))

    def failed(self):
        """Requests through the gateway that failed or were cut: [(time, error)]."""
        short = [(round(t, 1), err) for t, ok, err in self.requests if not ok]
        cut = [(round(s, 1), err) for s, _, _, err in self.long if err]
        return short + cut

    def fewest_healthy(self):
        """The fewest workers the gateway listed healthy at once while the block ran."""
        return min(sum(listed.values()) for _, listed in self.listings)

    def __enter__(self):
        for th in self._threads:
            th.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for th in self._threads:
            th.join()


def wait_for_listing(traffic, what, check, timeout=90):
    """Poll the gateway's listing until check(listing) holds; returns the listing."""
    deadline, seen = time.monotonic() + timeout, None
    while True:
        try:
            seen = traffic.listing()
        except (OSError, urllib.error.URLError, ValueError):
            seen = None
        if seen is not None and check(seen):
            return seen
        assert time.monotonic() < deadline, f"the gateway never listed {what} in {timeout} s; last listing: {seen}"
        time.sleep(0.5)

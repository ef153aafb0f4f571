"""A local HTTP endpoint in the Hugging Face Hub's layout, so that the real huggingface_hub client
can be exercised offline: a local endpoint in a public protocol's layout, not a mock of the thing
under test (plugins/modules/model_files_fetch.py talks to it through the unmodified
client, as it talks to huggingface.co).

Serves the revisions laid out by tests/hub/hub_layout.py (``<root>/<org>/<name>/<sha>/...``):

* ``GET /api/models/<repo>[/revision/<rev>]``: model info (``id``, ``sha``, ``siblings``
  [{``rfilename``}, with ``size``, ``blobId`` and ``lfs`` {``sha256``, ``size``, ``pointerSize``}
  when ``?blobs=true``], ``lastModified``, ``private``, ``gated``, ``disabled``, ``tags``).
* ``GET /api/models/<repo>/tree/<rev>[/<path>][?recursive=true]``: the tree listing
  (``type``, ``path``, ``size``, ``oid``, ``lfs`` {``oid``, ``size``, ``pointerSize``}), one page.
* ``HEAD``/``GET /<repo>/resolve/<rev>/<path>``: the file, with ``X-Repo-Commit``, ``ETag`` (git
  blob id; sha256 for an LFS file, also as ``X-Linked-Etag`` with ``X-Linked-Size``),
  ``Content-Length``, ``Accept-Ranges``; ``Range: bytes=a-[b]`` gives 206 with ``Content-Range``.
* A branch (refs.json, or ``main`` = the newest revision) resolves to its sha. Unknown repo,
  revision or file: 404 with the Hub's ``X-Error-Code`` (RepoNotFound, RevisionNotFound,
  EntryNotFound), which the client turns into its own exceptions.
* Request log (``log``; JSON lines in ``--log FILE``): method, path, query, range, status, bytes
  sent, whether an Authorization header came (never its value).
* Faults (``add_fault``), each used once, in order, by the GETs of one file:
  ``cut_after=N`` sends N bytes of the body and closes the connection; ``status=S`` answers S.
* ``rate`` (bytes per second, ``--rate``): file bodies are sent at that pace, as over a slow link,
  so that a transfer lasts long enough to be watched.

Importable (``HubEndpoint(root).start()`` serves in a thread) or run:
``python tests/hub/hub_endpoint.py --root DIR --port P [--log FILE] [--add-tiny-qwen2]``.
"""

import argparse
import datetime
import json
import os
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from ansible_collections.sglang.deploy.tests.hub import hub_layout

RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hub-endpoint"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.route(head=True)

    def do_GET(self):
        self.route(head=False)

    def route(self, head):
        hub, url = self.server.hub, urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/")[1:]]
        self.entry = {"method": self.command, "path": unquote(url.path), "query": url.query,
                      "range": self.headers.get("Range"), "auth": "authorization" in self.headers, "sent": 0}
        try:
            if parts[:2] == ["api", "models"] and len(parts) >= 4:
                repo, rest = "/".join(parts[2:4]), parts[4:]
                if not rest or rest[0] == "revision" and len(rest) == 2:
                    self.model_info(hub, repo, rest[1] if rest else "main", parse_qs(url.query))
                elif rest[0] == "tree" and len(rest) >= 2:
                    self.tree(hub, repo, rest[1], "/".join(rest[2:]), parse_qs(url.query))
                else:
                    self.error(404, "RepoNotFound", "no such API path")
            elif len(parts) >= 5 and parts[2] == "resolve":
                self.resolve(hub, "/".join(parts[:2]), parts[3], "/".join(parts[4:]), head)
            else:
                self.error(404, "RepoNotFound", "not a Hub path")
        finally:
            hub.record(self.entry)

    def revision(self, hub, repo, revision):
        """(sha, revision directory), or None after answering 404."""
        if not os.path.isdir(os.path.join(hub.root, *repo.split("/"))):
            self.error(404, "RepoNotFound", "Repository not found")
            return None
        sha = hub_layout.resolve(hub.root, repo, revision)
        if sha is None:
            self.error(404, "RevisionNotFound", "Invalid rev id: %s" % revision)
            return None
        return sha, os.path.join(hub.root, *repo.split("/"), sha)

    def model_info(self, hub, repo, revision, query):
        found = self.revision(hub, repo, revision)
        if found:
            sha, directory = found
            siblings = []
            for entry in hub.entries(directory):
                sibling = {"rfilename": entry["path"]}
                if query.get("blobs", [""])[0].lower() == "true":
                    sibling.update(size=entry["size"], blobId=entry["oid"])
                    if "lfs" in entry:
                        lfs = entry["lfs"]
                        sibling["lfs"] = {"sha256": lfs["oid"], "size": lfs["size"], "pointerSize": lfs["pointerSize"]}
                siblings.append(sibling)
            modified = datetime.datetime.fromtimestamp(os.path.getmtime(directory), datetime.timezone.utc)
            self.json({"_id": sha[:24], "id": repo, "modelId": repo, "sha": sha, "private": False, "gated": False,
                       "disabled": False, "tags": [], "siblings": siblings,
                       "lastModified": modified.strftime("%Y-%m-%dT%H:%M:%S.000Z")})

    def tree(self, hub, repo, revision, path, query):
        found = self.revision(hub, repo, revision)
        if not found:
            return
        recursive = query.get("recursive", [""])[0].lower() == "true"
        prefix = path.rstrip("/") + "/" if path else ""
        out, folders = [], set()
        for entry in hub.entries(found[1]):
            if not entry["path"].startswith(prefix):
                continue
            rest = entry["path"][len(prefix):].split("/")
            for depth in range(1, len(rest) if recursive else min(len(rest), 2)):
                folders.add(prefix + "/".join(rest[:depth]))
            if recursive or len(rest) == 1:
                out.append(entry)
        if path and not out and not folders:
            self.error(404, "EntryNotFound", "%s does not exist at %s" % (path, revision), found[0])
            return
        out += [{"type": "directory", "path": f, "oid": "0" * 40, "size": 0} for f in sorted(folders)]
        self.json(sorted(out, key=lambda e: e["path"]))

    def resolve(self, hub, repo, revision, path, head):
        found = self.revision(hub, repo, revision)
        if not found:
            return
        sha, directory = found
        entry = {e["path"]: e for e in hub.entries(directory)}.get(path)
        if entry is None:
            self.error(404, "EntryNotFound", "%s does not exist at %s" % (path, revision), sha)
            return
        fault = None if head else hub.take_fault(path)
        if fault and fault.get("status"):
            self.error(fault["status"], None, "fault switch: status %d" % fault["status"], sha)
            return
        size, start, end, status = entry["size"], 0, entry["size"] - 1, 200
        match = RANGE.match(self.headers.get("Range") or "")
        if match:
            start, end = int(match.group(1)), min(int(match.group(2) or size - 1), size - 1)
            if start >= size:
                self.error(416, None, "range not satisfiable", sha)
                return
            status = 206
        etag = entry["lfs"]["oid"] if "lfs" in entry else entry["oid"]
        headers = {"X-Repo-Commit": sha, "ETag": '"%s"' % etag, "Accept-Ranges": "bytes",
                   "Content-Type": "application/octet-stream", "Content-Length": str(end - start + 1)}
        if "lfs" in entry:
            headers.update({"X-Linked-Etag": '"%s"' % etag, "X-Linked-Size": str(size)})
        if status == 206:
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, end, size)
        self.answer(status, headers)
        if head:
            return
        with open(os.path.join(directory, *path.split("/")), "rb") as handle:
            handle.seek(start)
            body = handle.read(end - start + 1)
        if fault and fault.get("cut_after") is not None:
            self.wfile.write(body[:fault["cut_after"]])
            self.entry["sent"] = min(len(body), fault["cut_after"])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.send_body(body, hub.rate)
        self.entry["sent"] = len(body)

    def send_body(self, body, rate):
        """The body at `rate` bytes per second (all at once without one)."""
        if not rate:
            self.wfile.write(body)
            return
        chunk = max(int(rate) // 10, 1)
        for offset in range(0, len(body), chunk):
            self.wfile.write(body[offset:offset + chunk])
            self.wfile.flush()
            time.sleep(0.1)

    def answer(self, status, headers, body=b""):
        self.entry["status"] = status
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)
            self.entry["sent"] = len(body)

    def json(self, data):
        body = json.dumps(data).encode()
        self.answer(200, {"Content-Type": "application/json", "Content-Length": str(len(body))}, body)

    def error(self, status, code, message, sha=None):
        body = json.dumps({"error": message}).encode()
        headers = {"Content-Type": "application/json", "Content-Length": str(len(body)), "X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        if sha:
            headers["X-Repo-Commit"] = sha
        self.answer(status, headers, body)


def refusing_port(host="127.0.0.1"):
    """A port on `host` bound and closed again: an endpoint there refuses the connection (the
    failing fetch of the -vvv secret tests)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class HubEndpoint:
    """The endpoint over `root`; ``start()`` serves it in a daemon thread, ``url`` is its address."""

    def __init__(self, root, host="127.0.0.1", port=0, log_file=None, rate=None):
        self.root, self.log_file, self.log, self.rate = root, log_file, [], rate
        self._lock, self._faults, self._entries = threading.Lock(), {}, {}
        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.server.hub = self
        self.url = "http://%s:%d" % self.server.server_address[:2]
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def entries(self, directory):
        """Tree entries of a revision directory (revisions never change: computed once)."""
        with self._lock:
            if directory not in self._entries:
                self._entries[directory] = [hub_layout.file_entry(directory, p) for p in hub_layout.list_files(directory)]
            return self._entries[directory]

    def add_fault(self, path, cut_after=None, status=None):
        """The next GET of file `path` (of any repo) is cut after `cut_after` body bytes, or answered `status`."""
        with self._lock:
            self._faults.setdefault(path, []).append({"cut_after": cut_after, "status": status})

    def take_fault(self, path):
        with self._lock:
            queue = self._faults.get(path) or []
            return queue.pop(0) if queue else None

    def record(self, entry):
        with self._lock:
            self.log.append(entry)
            if self.log_file:
                with open(self.log_file, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(entry, sort_keys=True) + "\n")

    def requests(self, method=None, file=None):
        """The logged requests, of one method and of one file's /resolve/ URL when given."""
        with self._lock:
            return [e for e in self.log if (method is None or e["method"] == method)
                    and (file is None or "/resolve/" in e["path"] and e["path"].split("/resolve/")[1].split("/", 1)[1] == file)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log")
    parser.add_argument("--rate", type=int, help="send file bodies at this many bytes per second")
    parser.add_argument("--add-tiny-qwen2", action="store_true",
                        help="lay the project's tiny model out under --root as %s first" % hub_layout.TINY_QWEN2_REPO)
    args = parser.parse_args(argv)
    if args.add_tiny_qwen2:
        sha = hub_layout.lay_out(hub_layout.TINY_QWEN2, args.root)
        print("%s at revision %s (main)" % (hub_layout.TINY_QWEN2_REPO, sha), flush=True)
    hub = HubEndpoint(args.root, args.host, args.port, args.log, args.rate)
    print("serving %s on %s (HF_ENDPOINT=%s)" % (args.root, hub.url, hub.url), flush=True)
    try:
        hub.server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        hub.server.server_close()


if __name__ == "__main__":
    main()

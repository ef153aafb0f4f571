"""A model_files_endpoint with credentials (https://user:token@mirror) stays secret: stamps and
messages name the mirror without them (plugins/module_utils/model_files/hub.py,
public_endpoint), and every task of roles/model_files that passes the endpoint hides its output
when the endpoint carries them (no_log)."""

import json
import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.sglang.deploy.plugins.module_utils.model_files import hub

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("url,public", [
    ("https://user:pw@mirror.example/hf", "https://mirror.example/hf"),
    ("https://token@mirror.example:8443", "https://mirror.example:8443"),
    ("http://u:p@ss@10.0.0.5/api", "http://10.0.0.5/api"),
    ("https://mirror.example/hf", "https://mirror.example/hf"),
    ("https://mirror.example/a@b", "https://mirror.example/a@b"),
    ("https://mirror.example/hf?token=hf_abc", "https://mirror.example/hf"),
    ("https://u:p@mirror.example/hf?x=1#tok", "https://mirror.example/hf"),
    ("", ""), (None, None),
])
def test_public_endpoint_strips_the_user_information(url, public):
    assert hub.public_endpoint(url) == public


def test_a_client_error_is_scrubbed_of_token_and_credentials():
    endpoint = "https://alice:s3cret@mirror.example"
    text = "HTTPError for https://alice:s3cret@mirror.example/api (auth s3cret, token hf_x)"
    scrubbed = hub._scrub(text, "hf_x", endpoint)
    assert "s3cret" not in scrubbed and "alice" not in scrubbed and "hf_x" not in scrubbed
    assert "https://mirror.example/api" in scrubbed


@pytest.mark.parametrize("endpoint, secrets", [
    ("https://bob9user@mirror.example/hf", ["bob9user"]),  # a bare user name, no password
    ("https://bob9user@mirror.example:8443", ["bob9user"]),
    # percent-encoded in the URL, decoded by the client in what it quotes (a Basic auth user, a query value)
    ("https://bob9user%40corp:pw9%2Fsecret@mirror.example/hf", ["bob9user@corp", "pw9/secret", "bob9user%40corp"]),
    ("https://mirror.example/hf?token=tok9%2Bsecret", ["tok9+secret", "tok9%2Bsecret"]),
])
def test_a_bare_or_encoded_user_is_scrubbed_from_a_client_error(endpoint, secrets):
    text = "ConnectError for %s/api/models/x (auth %s)" % (endpoint, " ".join(secrets))
    scrubbed = hub._scrub(text, None, endpoint)
    assert not [s for s in secrets if s in scrubbed], scrubbed
    assert "https://mirror.example" in scrubbed


def test_a_query_token_is_scrubbed_from_a_client_error():
    endpoint = "https://mirror.example/hf?token=hf_q123&user=bob"
    text = f"404 Client Error for url: {endpoint}/api/models/x (token hf_q123)"
    scrubbed = hub._scrub(text, None, endpoint)
    assert "hf_q123" not in scrubbed and "bob" not in scrubbed
    assert "https://mirror.example/hf/api/models/x" in scrubbed


def _tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ("block", "rescue", "always"):
            yield from _tasks(node.get(key))


def test_every_task_that_passes_the_endpoint_hides_its_output_when_it_has_credentials():
    found = 0
    for path in sorted((ROOT / "roles" / "model_files" / "tasks").glob("*.yml")):
        for task in _tasks(yaml.safe_load(path.read_text(encoding="utf-8"))):
            args = next((v for k, v in task.items() if isinstance(v, dict) and "endpoint" in v), None)
            if args is None:
                continue
            found += 1
            assert "no_log" in task, (path.name, task.get("name"))
            # no_log: "{{ model_files_endpoint is search('PATTERN') }}"
            pattern = re.fullmatch(r"\{\{ model_files_endpoint is search\('(.+)'\) \}\}", task["no_log"]).group(1)
            for endpoint, hidden in (("https://u:p@mirror.example", True), ("https://tok@mirror.example/hf", True),
                                     ("https://mirror.example/hf?token=hf_x", True),
                                     ("https://mirror.example/hf", False), ("https://mirror.example/a@b", False),
                                     ("", False)):
                assert bool(re.search(pattern, endpoint)) is hidden, (task["name"], endpoint)
    assert found == 4  # per revision (shared, host): the quick check and the background fetch


@pytest.mark.parametrize("endpoint", ["https://alice:s3cret@mirror.example/hf", "https://mirror.example/hf?token=s3cret",
                                      "https://alice@mirror.example/hf"])
def test_the_modules_result_and_its_invocation_never_show_the_credentials(run_module, endpoint):
    # what -vvv prints and what an async job leaves in ~/.ansible_async: the module's result
    from ansible_collections.sglang.deploy.plugins.modules import model_files_fetch
    result = run_module(model_files_fetch, {"source": "hub", "repo_id": "org/../x", "revision": "0" * 40,
                                            "root": "/nonexistent/models", "endpoint": endpoint})
    assert result["failed"] and "s3cret" not in json.dumps(result) and "alice" not in json.dumps(result)


@pytest.mark.parametrize("endpoint", ["http://alice:pw9secret@[::1/hf", "http://[::1/hf?token=pw9secret"])
def test_an_endpoint_no_parser_reads_is_still_scrubbed(endpoint):
    # urlsplit refuses these ("Invalid IPv6 URL"): the client's error is scrubbed all the same
    scrubbed = hub._scrub(f"InvalidURL: {endpoint}/api/models/x (pw9secret)", None, endpoint)
    assert "pw9secret" not in scrubbed and "alice" not in scrubbed


@pytest.mark.parametrize("endpoint", ["http://alice:pw9secret@[::1/hf", "http://[::1/hf?token=pw9secret"])
def test_an_unparsable_endpoint_fails_cleanly_without_the_credentials(run_module, endpoint):
    from ansible_collections.sglang.deploy.plugins.modules import model_files_fetch
    result = run_module(model_files_fetch, {"source": "hub", "repo_id": "org/x", "revision": "0" * 40,
                                            "root": "/nonexistent/models", "endpoint": endpoint})
    assert result["failed"] and "pw9secret" not in json.dumps(result) and "alice" not in json.dumps(result)


def test_an_unexpected_error_is_a_scrubbed_failure_not_a_traceback(run_module, monkeypatch):
    # a traceback goes to stderr and into the async job's file unmasked: the module fails instead
    from ansible_collections.sglang.deploy.plugins.modules import model_files_fetch
    endpoint = "https://alice:pw9secret@mirror.example/hf?token=tok9secret"

    def boom(params, check_mode=False):
        raise RuntimeError(f"unexpected at {endpoint}/api/models/x: password pw9secret, token tok9secret")
    monkeypatch.setattr(model_files_fetch, "run", boom)
    result = run_module(model_files_fetch, {"source": "hub", "repo_id": "org/x", "revision": "0" * 40,
                                            "root": "/nonexistent/models", "endpoint": endpoint})
    text = json.dumps(result)
    assert result["failed"] and "RuntimeError" in result["msg"] and "https://mirror.example/hf" in result["msg"]
    assert "pw9secret" not in text and "tok9secret" not in text and "alice" not in text

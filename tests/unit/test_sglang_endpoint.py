"""An endpoint verified by its URL (playbooks/verify_endpoint.yml): the URL rules and the name it
is kept under (plugins/module_utils/verify/endpoint.py), the flags its baseline is keyed by, and
the quality reference read from the endpoint's own file instead of a release
(plugins/module_utils/quality/run.py, reference())."""

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.sglang.deploy.plugins.filter.filters import FilterModule
from ansible_collections.sglang.deploy.plugins.module_utils.verify import endpoint as ep
from ansible_collections.sglang.deploy.plugins.module_utils.quality import run as vq

FILTERS = FilterModule().filters()


@pytest.mark.parametrize("url, name, base", [
    ("http://127.0.0.1:30000", "endpoint-127.0.0.1-30000", "http://127.0.0.1:30000"),
    ("http://10.0.0.5:30000/", "endpoint-10.0.0.5-30000", "http://10.0.0.5:30000"),
    ("https://llm.example.org", "endpoint-https-llm.example.org-443", "https://llm.example.org:443"),
    ("http://[::1]:8000", "endpoint-__1-8000", "http://[::1]:8000"),
])
def test_a_url_names_its_endpoint(url, name, base):
    assert FILTERS["sglang_endpoint_id"](url) == name
    assert FILTERS["sglang_endpoint_base_url"](url) == base


@pytest.mark.parametrize("url, rule", [
    ("", "is empty"),
    ("ftp://h:1", "scheme must be http or https"),
    ("http://user:secret@h:30000", "carries credentials"),
    ("http://h:30000/v1", "without a path"),
    ("http://h:30000?token=x", "without a path, query"),
    ("http://h:99999", "not a number from 1 to 65535"),
    ("http://h:30000\n", "whitespace or a control character"),
    ("http://:30000", "names no host"),
])
def test_a_url_the_verification_cannot_use_is_refused_naming_the_rule(url, rule):
    with pytest.raises(AnsibleFilterError, match=rule) as err:
        FILTERS["sglang_endpoint_id"](url)
    assert "secret" not in str(err.value) and "token=x" not in str(err.value)
    assert "sglang_verify_endpoint_url" in str(err.value)


def test_the_launch_flags_key_the_baseline_without_address_or_secrets():
    cmd = ("python3 -m sglang.launch_server --model-path /m --host 0.0.0.0 --port 30000 --api-key <redacted> "
           "--cuda-graph-max-bs 16 --enable-metrics")
    assert FILTERS["sglang_endpoint_launch_flags"](cmd) == {
        "model-path": "/m", "cuda-graph-max-bs": "16", "enable-metrics": True}
    assert ep.launch_flags("") == {} and ep.launch_flags(None) == {}


def _q(tmp_path, **kw):
    q = {"release_dir": str(tmp_path / "releases"), "release_fact": str(tmp_path / "index.json")}
    q.update(kw)
    return q


def test_the_reference_comes_from_the_endpoints_file_when_one_is_named(tmp_path):
    ref = {"format": 1, "prompt_set": "abc", "recorded_at": "2026-12-07T04:00:00Z", "entries": []}
    path = tmp_path / "quality.json"
    path.write_text(json.dumps(ref))
    assert vq.reference(_q(tmp_path, reference_path=str(path))) == (ref, "2026-12-07T04:00:00Z")
    kept = dict(ref, kept_since="2026-12-01T00:00:00Z")
    path.write_text(json.dumps(kept))
    assert vq.reference(_q(tmp_path, reference_path=str(path)))[1] == "2026-12-01T00:00:00Z"


def test_no_file_yet_is_no_reference_and_no_file_named_is_the_release(tmp_path):
    assert vq.reference(_q(tmp_path, reference_path=str(tmp_path / "missing.json"))) == (None, None)
    (tmp_path / "releases" / "r1").mkdir(parents=True)
    (tmp_path / "releases" / "r1" / "quality.json").write_text(json.dumps({"prompt_set": "x"}))
    (tmp_path / "index.json").write_text(json.dumps({"current": "r1"}))
    assert vq.reference(_q(tmp_path)) == ({"prompt_set": "x"}, "r1")
    assert vq.reference(_q(tmp_path, reference_path="")) == ({"prompt_set": "x"}, "r1")

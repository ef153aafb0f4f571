"""The offline check of the model settings (plugins/module_utils/model_files/lint.py, run
by roles/model_files/tasks/lint.yml in playbooks/lint.yml): a Hub source needs a pinned commit sha,
and the server's model-path must be the revision's directory."""

import os

import pytest
import yaml
from ansible_collections.sglang.deploy.plugins.module_utils.model_files.lint import model_files_lint_findings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHA = "0123456789abcdef0123456789abcdef01234567"
HOST = "gpu-node-01.example.invalid"
REPO = "nvidia/Qwen3.5-397B-A17B-NVFP4"
HUB = {"source": "hub", "repo_id": REPO, "revision": SHA, "require_sha": True, "root": "/data/models",
       "name": "Qwen3.5-397B-A17B-NVFP4", "shared_root": "/mnt/models", "src_path": "",
       "dest": f"/data/models/Qwen3.5-397B-A17B-NVFP4/{SHA}"}


def rules(settings):
    return [f["rule"] for f in model_files_lint_findings(settings, HOST)]


def test_a_pinned_hub_revision_loaded_from_its_directory_passes():
    assert model_files_lint_findings(HUB, HOST) == []


@pytest.mark.parametrize("revision,why", [
    ("PIN-ME", "is the placeholder of an unpinned revision"),
    ("", "needs a revision"),
    ("main", "is not a 40-hex commit sha"),
    (SHA.upper(), "is not a 40-hex commit sha"),
])
def test_an_unpinned_hub_revision_is_refused_naming_the_variable_the_host_and_how_to_find_the_sha(revision, why):
    found = model_files_lint_findings(dict(HUB, revision=revision, dest=f"/data/models/Qwen3.5-397B-A17B-NVFP4/{revision}"), HOST)
    assert [f["rule"] for f in found] == ["model-files-revision"]
    f = found[0]
    assert f["severity"] == "error" and f["flag"] == "model_files_revision" and why in f["message"]
    assert f["msg"].startswith(f"{HOST}: model_files_revision [model-files-revision] ")
    assert f"HfApi().model_info('{REPO}').sha" in f["fix"] and f"https://huggingface.co/{REPO}/commits/main" in f["fix"]
    assert f["msg"].endswith("(source: docs/models.md)")


def test_the_placeholder_is_refused_even_without_require_sha():
    assert rules(dict(HUB, revision="PIN-ME", require_sha=False)) == ["model-files-revision"]
    assert rules(dict(HUB, revision="v1.0", require_sha=False, dest="/data/models/Qwen3.5-397B-A17B-NVFP4/v1.0")) == []


def test_the_model_path_must_be_the_revisions_directory():
    found = model_files_lint_findings(dict(HUB, dest="/data/models/Qwen3.5-397B-A17B-NVFP4"), HOST)
    assert [f["rule"] for f in found] == ["model-files-model-path"]
    assert f"/data/models/Qwen3.5-397B-A17B-NVFP4/{SHA}" in found[0]["fix"]
    assert "{{ model_files_revision }}" in found[0]["fix"]


@pytest.mark.parametrize("change,rule", [
    ({"repo_id": "Qwen3.5-397B"}, "model-files-repo"),
    ({"root": "data/models", "dest": f"data/models/Qwen3.5-397B-A17B-NVFP4/{SHA}"}, "model-files-path"),
    ({"shared_root": "mnt/models"}, "model-files-path"),
])
def test_other_settings_fetch_would_refuse(change, rule):
    assert rules(dict(HUB, **change)) == [rule]


def test_only_hub_and_path_sources_are_checked():
    assert rules(dict(HUB, source="", revision="PIN-ME")) == []
    assert rules(dict(HUB, source="controller", revision="")) == []
    path = dict(HUB, source="path", src_path="/srv/models/tiny-qwen2", revision="", shared_root="")
    assert rules(path) == []
    assert rules(dict(path, src_path="srv/models")) == ["model-files-path"]


def test_the_shipped_inventories():
    """production: hub, the placeholder (refused until pinned); local: path, pinned, consistent."""
    def merged(inventory, group):
        out = {}
        for g in ("all", group):
            directory = os.path.join(ROOT, "inventories", inventory, "group_vars", g)
            for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
                with open(os.path.join(directory, name), encoding="utf-8") as fh:
                    out.update(yaml.safe_load(fh) or {})
        return out

    def settings(data, revision=None):
        revision = data["model_files_revision"] if revision is None else revision
        dest = str(data["sglang_server_args"]["model-path"]).replace("{{ model_files_revision }}", revision)
        return {"source": data["model_files_source"], "repo_id": data["model_files_repo_id"], "revision": revision,
                "require_sha": True, "root": data.get("model_files_root", "/data/models"),
                "name": data["model_files_repo_id"].split("/")[-1], "shared_root": data.get("model_files_shared_root", ""),
                "src_path": data.get("model_files_src_path", ""), "dest": dest}

    production = merged("production", "blackwell")
    assert production["model_files_repo_id"] == REPO and production["model_files_shared_root"]
    assert rules(settings(production)) == ["model-files-revision"]
    assert rules(settings(production, SHA)) == []
    assert rules(settings(merged("local", "all"))) == []


@pytest.mark.parametrize("repo", ["nvidia/Qwen3.5\n", "nvidia/../etc", "../..", "org/a--b", "org/name.git", "org/na me",
                                  "org/name\u2028", "a/b/c"])
def test_a_repo_id_the_hub_refuses_is_refused(repo):
    rules = [f["rule"] for f in model_files_lint_findings(dict(HUB, repo_id=repo), "h")]
    assert "model-files-repo" in rules


@pytest.mark.parametrize("name", ["../../../etc", "a/b", "..", ".", "x\ny", "-x"])
def test_a_model_name_that_is_not_one_directory_is_refused(name):
    found = [f for f in model_files_lint_findings(dict(HUB, name=name), "h") if f["rule"] == "model-files-name"]
    assert found and found[0]["msg"].startswith("h: model_files_name [model-files-name]")


@pytest.mark.parametrize("params", [{"repo_id": "nvidia/Qwen3.5\n"}, {"repo_id": "nvidia/../etc"},
                                    {"name": "../../../etc"}, {"name": "x\u2028y"}])
def test_the_fetch_module_refuses_them_before_any_download(params):
    from ansible_collections.sglang.deploy.plugins.modules import model_files_fetch as F
    with pytest.raises(F.FetchError):
        F.Fetch(dict({"source": "hub", "repo_id": REPO, "revision": SHA, "root": "/nonexistent/models"}, **params))

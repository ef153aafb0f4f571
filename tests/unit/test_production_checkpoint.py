"""The production profile's checkpoint choice (inventories/production/group_vars/blackwell/
checkpoint.yml): the values written out in model.yml, sglang.yml and verify.yml are the chosen
entry's, each entry names a quantization the on-host check accepts for its quant_algo, and the
rules judge both entries alike."""

import os

import pytest
import yaml
from sglang_flags_rules_support import ROOT, check
from ansible_collections.sglang.deploy.plugins.module_utils.flags import checkpoint as K

BLACKWELL = os.path.join(ROOT, "inventories", "production", "group_vars", "blackwell")


def _load(name):
    with open(os.path.join(BLACKWELL, name), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


CHOICE = _load("checkpoint.yml")
ENTRIES = CHOICE["blackwell_checkpoints"]


def test_the_written_out_values_are_the_chosen_checkpoints():
    chosen = ENTRIES[CHOICE["blackwell_checkpoint"]]
    model, flags, verify = _load("model.yml"), _load("sglang.yml"), _load("verify.yml")
    assert model["model_files_repo_id"] == chosen["repo"]
    args = flags["sglang_server_args"]
    assert args["quantization"] == chosen["quantization"]
    # roles/model_files puts the revision in <root>/<the repository's name>/<revision>
    assert args["model-path"] == "{}/{}/{{{{ model_files_revision }}}}".format(
        model["model_files_root"], chosen["repo"].split("/")[-1])
    for key, value in chosen["expect_resolved"].items():
        assert verify["sglang_verify_expect_resolved"][key] == value
    assert verify["sglang_verify_quality_tolerance"] == chosen["quality_tolerance"]


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_each_entry_is_complete_and_its_quantization_fits_its_checkpoint(name):
    entry = ENTRIES[name]
    assert {"repo", "quantization", "quant_algo", "expect_resolved", "quality_tolerance"} <= set(entry)
    assert K.quantization_fits(f"modelopt {entry['quant_algo']}", entry["quantization"]) is None
    others = [e for n, e in ENTRIES.items() if n != name and e["quant_algo"] != entry["quant_algo"]]
    for other in others:  # the other checkpoint's flag is refused on this one
        assert K.quantization_fits(f"modelopt {entry['quant_algo']}", other["quantization"])


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_the_profile_passes_the_rules_with_either_checkpoint(name):
    entry = ENTRIES[name]
    args = dict(_load("sglang.yml")["sglang_server_args"], quantization=entry["quantization"])
    args["model-path"] = f"/data/models/{entry['repo'].split('/')[-1]}/0000"
    assert check(args, _load("sglang.yml")["sglang_server_env"]) == []
    # and NVFP4 MoE left to auto is refused for both (SGLang PR 39807)
    auto = {k: v for k, v in args.items() if k != "moe-runner-backend"}
    assert "sm120-nvfp4-moe-runner-auto" in {f["rule"] for f in check(auto, {})}

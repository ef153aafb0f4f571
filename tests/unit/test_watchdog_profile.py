"""The production profile sizes SGLang's in-process watchdogs (docs/blackwell-profile.md,
Watchdogs): both are set, the hard one above the largest legitimate forward, and the soft one
fires before the hard one so that a hang's stacks are logged before the kill."""

import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "inventories" / "production" / "group_vars" / "blackwell" / "sglang.yml"
CATALOG = ROOT / "roles" / "sglang_flags" / "files" / "catalogs" / "sglang-0.5.23.json"

# The largest prefill estimate of the profile: one chunk of 8192 tokens (SGLang's
# chunked-prefill-size for 90-160 GiB GPUs) at the end of a 131072-token context on TP 8 over
# PCIe, estimated at 1-3 s and bounded at 10 s; not measured (docs/blackwell-profile.md, Watchdogs).
LARGEST_PREFILL_CHUNK_ESTIMATE_S = 10
# SGLang's watchdog thread checks every half timeout: it fires 1 to 1.5 timeouts after the last
# forward began (srt/utils/watchdog.py of sglang 0.5.23, WatchdogRaw._watchdog_once).
LATEST_FIRING_FACTOR = 1.5


@pytest.fixture(scope="module")
def args():
    return yaml.safe_load(PROFILE.read_text(encoding="utf-8"))["sglang_server_args"]


def test_both_watchdogs_are_set_in_seconds(args):
    for flag in ("watchdog-timeout", "soft-watchdog-timeout"):
        value = args.get(flag)
        assert isinstance(value, (int, float)) and not isinstance(value, bool), (flag, value)
        assert value > 0, (flag, value)


def test_the_hard_watchdog_is_above_the_largest_prefill_estimate(args):
    assert args["watchdog-timeout"] > LARGEST_PREFILL_CHUNK_ESTIMATE_S


def test_the_soft_watchdog_fires_before_the_hard_one(args):
    soft, hard = args["soft-watchdog-timeout"], args["watchdog-timeout"]
    assert hard > soft
    # the soft one's latest firing comes before the hard one's earliest
    assert soft * LATEST_FIRING_FACTOR < hard
    # and the soft one does not fire on a legitimate prefill chunk either
    assert soft > LARGEST_PREFILL_CHUNK_ESTIMATE_S


def test_the_hard_watchdog_is_shorter_than_sglangs_default(args):
    """Sized for the profile: a hang becomes a restart sooner than with SGLang's default."""
    catalog = json.loads(CATALOG.read_text(encoding="utf-8"))["options"]
    assert catalog["--watchdog-timeout"]["default"] == 300
    assert catalog["--soft-watchdog-timeout"]["default"] is None
    assert args["watchdog-timeout"] < catalog["--watchdog-timeout"]["default"]

"""sglang_release's filters: the ml_env generation a release's environment file names, and the
{release id: generation} map the record keeps so that ml_env never prunes those generations."""

import base64
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "roles", "sglang_release", "filter_plugins"))
from sglang_release import sglang_release_env_generation, sglang_release_generations  # noqa: E402

ENV = '# Ansible managed\nPATH="/root/ml-env/bin:/usr/bin"\nSGLANG_DEPLOY_ML_ENV="3f2a9c1d0e4b"\n'


def slurped(item, text):
    return {"item": item, "content": base64.b64encode(text.encode()).decode(), "changed": False}


def test_reads_the_generation_line_written_by_sglang_server():
    assert sglang_release_env_generation(ENV) == "3f2a9c1d0e4b"


def test_no_generation_line_or_an_empty_one_names_nothing():
    assert sglang_release_env_generation('PATH="/usr/bin"\n') == ""
    assert sglang_release_env_generation('SGLANG_DEPLOY_ML_ENV=""\n') == ""
    assert sglang_release_env_generation('X_SGLANG_DEPLOY_ML_ENV="abc"\n') == ""
    assert sglang_release_env_generation(None) == ""


def test_maps_each_release_of_a_slurp_loop_to_its_generation():
    results = [
        slurped("r1", ENV),
        {"item": "r0", "failed": True, "msg": "file not found"},  # release copy gone
        slurped("r2", 'PATH="/usr/bin"\n'),  # names no generation
        slurped("r3", 'SGLANG_DEPLOY_ML_ENV="legacy"\n'),
    ]
    assert sglang_release_generations(results) == {"r1": "3f2a9c1d0e4b", "r3": "legacy"}
    assert sglang_release_generations([]) == {}

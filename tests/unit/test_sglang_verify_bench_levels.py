"""verify/concurrency.py's sglang.benchmark.serving levels: every level in one process (the
module imported once, run once per level with that level's arguments, as `python -m` runs it).

A stand-in package `sglang.benchmark.serving` (written below, on the driver's PYTHONPATH) takes
the real module's arguments with argparse and writes a record of the real --output-file layout
(the keys verify/stats.py reads); it counts its imports in a file. The real module runs in the
demo's and Molecule default's full verification (playbooks/verify.yml)."""

from __future__ import annotations

import json
import sys

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.verify import concurrency

STAND_IN = '''
import argparse, json, os, sys
with open(os.environ["IMPORTS_LOG"], "a") as log:
    log.write("import\\n")
if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    for name in ("num-prompts", "random-output-len", "max-concurrency", "output-file"):
        ap.add_argument("--" + name, required=True)
    args, _ = ap.parse_known_args()
    with open(os.environ["IMPORTS_LOG"], "a") as log:
        log.write("key in argv: %s, key in env: %s\\n" % (
            any("sk-test" in a for a in sys.argv), os.environ.get("OPENAI_API_KEY") == "sk-test"))
    conc, n = int(args.max_concurrency), int(args.num_prompts)
    if os.environ.get("FAIL_AT") == str(conc):
        raise SystemExit("server went away at %d" % conc)
    record = {"completed": n, "duration": 1.0, "total_output_tokens": n * int(args.random_output_len),
              "output_throughput": 100.0 * conc, "p99_ttft_ms": 10.0 * conc, "median_tpot_ms": 5.0,
              "max_concurrency": conc, "output_lens": [int(args.random_output_len)] * n,
              "generated_texts": ["the keeper lit the lamp and watched the sea %d" % i for i in range(n)]}
    with open(args.output_file, "a") as out:
        out.write(json.dumps(record) + "\\n")
'''


@pytest.fixture(name="sweep")
def fixture_sweep(tmp_path):
    pkg = tmp_path / "lib" / "sglang" / "benchmark"
    pkg.mkdir(parents=True)
    (tmp_path / "lib" / "sglang" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "serving.py").write_text(STAND_IN)
    imports = tmp_path / "imports.log"
    imports.touch()
    sw = {"python": sys.executable, "tokenizer": "/models/tiny", "output_len": 16, "timeout": 60,
          "env": {"PYTHONPATH": str(tmp_path / "lib"), "IMPORTS_LOG": str(imports)}}
    return sw, imports


def test_every_level_from_one_process_in_level_order(sweep):
    sw, imports = sweep
    records = concurrency.bench_serving_levels({"garbage_min_run": 0}, "http://127.0.0.1:1", "m", [1, 4, 16], 2, sw, None)
    assert [r["concurrency"] for r in records] == [1, 4, 16]
    assert [r["output_throughput"] for r in records] == [100.0, 400.0, 1600.0]
    assert [r["completed"] for r in records] == [2, 8, 32] and all(r["errors"] == 0 for r in records)
    assert records[2]["p99_ttft_ms"] == 160.0 and records[0]["decode_tps_from_tpot"] == 200.0
    assert imports.read_text().count("import\n") == 3  # the module run three times ...
    # ... by one interpreter: the driver's code is the only -c, and the levels are one file
    assert concurrency.LEVELS_DRIVER.count("run_module") == 1


def test_a_level_that_fails_names_the_exit_and_the_levels_without_figures(sweep):
    sw, _ = sweep
    sw["env"]["FAIL_AT"] = "4"
    with pytest.raises(RuntimeError) as err:
        concurrency.bench_serving_levels({"garbage_min_run": 0}, "http://127.0.0.1:1", "m", [1, 4, 16], 2, sw, None)
    assert "exit 1" in str(err.value) and "no figures at [4, 16]" in str(err.value)
    assert "server went away at 4" in str(err.value)


def test_the_key_goes_in_the_environment_never_in_the_arguments(sweep):
    sw, imports = sweep
    concurrency.bench_serving_levels({"garbage_min_run": 0}, "http://127.0.0.1:1", "m", [2], 2, sw, "sk-test")
    assert "key in argv: False, key in env: True" in imports.read_text()
    argv = concurrency.bench_serving_argv("http://h:30000", "m", 4, 8, {"tokenizer": "/t"}, "/work/level.jsonl")
    assert argv[argv.index("--max-concurrency") + 1] == "4" and argv[argv.index("--num-prompts") + 1] == "8"
    assert json.loads(json.dumps(argv)) == argv

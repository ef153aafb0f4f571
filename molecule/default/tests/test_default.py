"""The deployed slice: a real SGLang under systemd, from /root/ml-env, answering correctly."""

import json

import pytest
import yaml

UNIT = "sglang"
PORT = 30000
with open(__file__.rsplit("/molecule/", 1)[0] + "/inventories/local/group_vars/all/sglang.yml", encoding="utf-8") as _fh:
    LOCAL = yaml.safe_load(_fh)
EXPECTED = json.load(
    open(
        __file__.rsplit("/molecule/", 1)[0]
        + "/roles/model_files/files/tiny-qwen2/expected_answers.json",
        encoding="utf-8",
    )
)


def test_systemd_is_pid1(host):
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"


def test_unit_active_and_enabled(host):
    svc = host.service(UNIT)
    assert svc.is_running, host.run(f"journalctl -u {UNIT} -n 40 --no-pager").stdout
    assert svc.is_enabled


def test_unit_runs_ml_env_python(host):
    pid = host.check_output(f"systemctl show -p MainPID --value {UNIT}")
    assert int(pid) > 0
    cmdline = host.file(f"/proc/{pid}/cmdline").content_string.split("\0")
    assert cmdline[0] == "/root/ml-env/bin/python"
    assert cmdline[1:3] == ["-m", "sglang.launch_server"]
    link = host.file("/root/ml-env")
    assert link.is_symlink
    assert link.linked_to.startswith("/root/ml-envs/")


def test_model_is_the_stamped_revision_copied_from_shared_storage(host):
    """The tiny model took the production path (model_files path source): its revision directory,
    verified against the source's stamp, from the read-only "shared storage" /srv/models."""
    revision = LOCAL["model_files_revision"]
    stamp = json.loads(host.file(f"/data/models/tiny-qwen2/{revision}/.sglang-deploy-model.json").content_string)
    assert stamp["revision"] == revision and stamp["repo"] == "sglang-deploy/tiny-qwen2"
    assert stamp["source"] == "path:/srv/models/tiny-qwen2"
    assert host.check_output("ls -A /data/models/tiny-qwen2").split() == [revision]


def test_unit_file_one_flag_per_line(host):
    unit = host.check_output(f"systemctl cat {UNIT}")
    # the tiny model's revision directory, by its sha (model_files path source)
    assert f"    --model-path /data/models/tiny-qwen2/{LOCAL['model_files_revision']} \\" in unit
    assert "    --device cpu \\" in unit
    assert "EnvironmentFile=/etc/sglang/sglang.env" in unit
    assert "LimitMEMLOCK=infinity" in unit


def test_environment_file_is_private(host):
    env = host.file("/etc/sglang/sglang.env")
    assert env.mode == 0o600
    assert 'HF_HUB_OFFLINE="1"' in env.content_string


def test_listening(host):
    assert host.socket(f"tcp://0.0.0.0:{PORT}").is_listening


def _chat(host, question, **extra):
    body = {
        "model": "tiny-qwen2",
        "messages": [{"role": "user", "content": question}],
        "temperature": 0,
        "max_tokens": 16,
    }
    body.update(extra)
    out = host.check_output(
        "curl -sS --max-time 60 -H 'Content-Type: application/json' "
        f"-d '{json.dumps(body)}' http://127.0.0.1:{PORT}/v1/chat/completions"
    )
    return json.loads(out)


@pytest.mark.parametrize("qa", EXPECTED, ids=[qa["question"] for qa in EXPECTED])
def test_known_answers(host, qa):
    reply = _chat(host, qa["question"])
    choice = reply["choices"][0]
    assert choice["message"]["content"].strip() == qa["answer"], reply
    assert choice["finish_reason"] == "stop"

"""roles/model_files' progress of a background fetch or copy (plugins/module_utils/model_files/progress.py,
plugins/modules/model_files_follow.py): measured from the files on disk, worded for an operator; the
job's end read from its async status file as async_status reads it."""

import json

from ansible_collections.sglang.deploy.plugins.modules import model_files_follow as poll
from ansible_collections.sglang.deploy.plugins.module_utils.model_files import progress


def record(tmp_path, files, started=1000.0, base=0):
    return {"pid": 1, "dir": str(tmp_path), "files": files, "label": "org/model@0123456789ab", "phase": "fetch",
            "started": started, "base_bytes": base}


def test_done_files_temporary_files_and_partial_names_count_as_they_grow(tmp_path):
    (tmp_path / "config.json").write_bytes(b"x" * 10)          # done
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.safetensors").write_bytes(b"x" * 40)  # renamed early: not its full size yet
    download = tmp_path / ".cache" / "huggingface" / "download"
    download.mkdir(parents=True)
    (download / "etag.abc.incomplete").write_bytes(b"x" * 300)   # the client's transfer
    (tmp_path / progress.COPY_TMP).write_bytes(b"x" * 5)         # a path copy's transfer
    files = {"config.json": 10, "sub/a.safetensors": 100, "b.safetensors": 1000}
    assert progress.measure(record(tmp_path, files)) == (10 + 40 + 300 + 5, 1)


def test_the_bytes_done_never_exceed_the_total(tmp_path):
    download = tmp_path / ".cache" / "huggingface" / "download"
    download.mkdir(parents=True)
    (download / "x.incomplete").write_bytes(b"x" * 500)
    assert progress.measure(record(tmp_path, {"w": 100})) == (100, 0)


def test_the_line_has_the_total_the_rate_and_the_time_left(tmp_path):
    rec = record(tmp_path, {"a": 150 * 10 ** 9, "b": 80 * 10 ** 9}, started=1000.0, base=10 * 10 ** 9)
    text = progress.line(rec, 46 * 10 ** 9, 1, now=1000.0 + 360)
    assert text == ("fetch org/model@0123456789ab: 46.0 GB of 230.0 GB (20%), 1 of 2 files, 6 min 00 s elapsed, "
                    "100.0 MB/s, about 30 min 40 s left")
    # nothing gained yet: no rate, no estimate
    assert progress.line(rec, 10 * 10 ** 9, 0, now=1005.0).endswith("0 of 2 files, 5 s elapsed")


def test_start_writes_the_record_and_finish_removes_it(tmp_path):
    path = str(tmp_path / "state" / ".m.progress.json")
    (tmp_path / "f").write_bytes(b"x" * 7)
    progress.start(path, str(tmp_path), {"f": 7, "g": 3}, "from /shared/m/sha", "copy")
    rec = progress.read(path)
    assert rec["files"] == {"f": 7, "g": 3} and rec["base_bytes"] == 7 and rec["phase"] == "copy"
    progress.finish(path)
    assert progress.read(path) is None
    progress.start("", str(tmp_path), {}, "x", "copy")  # no progress file asked: nothing written


def test_a_job_is_finished_when_its_status_file_holds_a_result(tmp_path):
    status = tmp_path / "j1.1"
    assert poll.job_finished(str(status)) is False  # not written yet
    status.write_text(json.dumps({"started": 1, "finished": 0, "ansible_job_id": "j1.1"}))
    assert poll.job_finished(str(status)) is False
    status.write_text(json.dumps({"changed": True, "path": "/data/models/m/sha"}))
    assert poll.job_finished(str(status)) is True
    status.write_text("{half a json")  # being written
    assert poll.job_finished(str(status)) is False

#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the host with any python3 (standard library only).

DOCUMENTATION = r"""
---
module: model_files_follow
short_description: Follow a model_files_fetch that runs in the background (async)
description:
  - "Waits up to I(wait) seconds for the async job whose status is I(results_file) to end, then says how far its transfer
    got, measured from the files on disk against what the fetch said it would fill
    (I(progress_file)): bytes and files done of the total, the rate, the time left, as
    C(progress_line). Meant for C(until: result.job_done) with C(retries); the play's
    C(sglang_progress) callback shows the line on each retry. Changes nothing."
  - The job's status file is the one the async task returned (C(results_file)), read as
    C(ansible.builtin.async_status) reads it; collect the job's result with that module after.
options:
  results_file: {type: path, required: true, description: The C(results_file) the async fetch task returned.}
  progress_file: {type: path, required: true, description: The fetch's I(progress_file).}
  wait: {type: int, default: 10, description: Seconds to wait before answering while the job runs.}
author: [sglang_deploy contributors]
"""

EXAMPLES = r"""
- name: Fetch the revision in the background
  sglang.deploy.model_files_fetch:
    repo_id: nvidia/Qwen3.5-397B-A17B-NVFP4
    revision: "{{ model_files_revision }}"
    root: /data/models
    progress_file: /run/sglang-deploy/model-fetch.progress
  async: 7200
  poll: 0
  register: _fetch_job

- name: Follow it (bytes and files of the total, rate, time left)
  sglang.deploy.model_files_follow:
    results_file: "{{ _fetch_job.results_file }}"
    progress_file: /run/sglang-deploy/model-fetch.progress
    wait: 10
  register: _followed
  until: _followed is failed or _followed.job_done
  retries: 722
  delay: 0
"""

RETURN = r"""
job_done: {description: "The job ended (successfully or not); not C(finished), a key Ansible keeps for async results.", type: bool,
           returned: always}
progress_line: {description: "How far the transfer got, or what the job is doing before it transfers.", type: str, returned: always}
progress: {description: "C(bytes_done), C(bytes_total), C(files_done), C(files_total) (empty before the transfer).", type: dict,
           returned: always}
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.model_files import progress
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_files import read_json


def job_finished(path):
    """Whether the async job ended: its status file holds the module's result (async_status's rule:
    a file without ``started`` is a result) or says finished."""
    data = read_json(path)
    if data is None:
        return False  # not written yet, or being written
    return "started" not in data or bool(data.get("finished"))


ARGUMENT_SPEC = dict(
    results_file=dict(type="path", required=True),
    progress_file=dict(type="path", required=True),
    wait=dict(type="int", default=10),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    deadline = time.time() + max(p["wait"], 0)
    finished = job_finished(p["results_file"])
    while not finished and time.time() < deadline:
        time.sleep(min(0.25, max(deadline - time.time(), 0)))  # a revision in place ends at once
        finished = job_finished(p["results_file"])
    record = progress.read(p["progress_file"])
    if record is None:
        text = "done" if finished else "listing the files and checking the space (no transfer yet)"
        module.exit_json(changed=False, job_done=finished, progress={}, progress_line=text)
    done_bytes, done_files = progress.measure(record)
    module.exit_json(changed=False, job_done=finished, progress_line=progress.line(record, done_bytes, done_files),
                     progress={"bytes_done": done_bytes, "bytes_total": sum(record["files"].values()),
                               "files_done": done_files, "files_total": len(record["files"])})


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Stamp a model directory as one revision, so that model_files' ``path`` source can serve it.

    scripts/model-stamp.py DIR --repo ORG/NAME [--check]

Writes DIR/.sglang-deploy-model.json: the sha256 and size of every file, and a content revision
(a 40-hex id of the files: plugins/module_utils/model_files/manifest.py). Use it for a
checkpoint that has no Hub commit (trained or converted in-house) before putting it on shared
storage; the project's tiny model (roles/model_files/files/tiny-qwen2) is stamped with it.
--check writes nothing and fails when the stamp is missing or no longer matches the files.
"""

import argparse
import sys

from ansible_collections.sglang.deploy.plugins.module_utils.model_files import manifest as mf

SOURCE = "scripts/model-stamp.py"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--repo", required=True, help="the model's name as org/name")
    parser.add_argument("--check", action="store_true", help="compare with the stamp, write nothing")
    args = parser.parse_args(argv)
    files = mf.compute_manifest(args.directory)
    revision = mf.content_revision(files)
    if args.check:
        stamp = mf.read_stamp(args.directory)
        if stamp is None or stamp["files"] != files or stamp["revision"] != revision or stamp["repo"] != args.repo:
            print("%s: the stamp is missing or does not match the files; run scripts/model-stamp.py %s --repo %s"
                  % (args.directory, args.directory, args.repo), file=sys.stderr)
            return 1
    else:
        mf.write_stamp(args.directory, files, args.repo, revision, SOURCE)
    print("%s %s at revision %s: %d files, %d bytes" % ("checked" if args.check else "stamped", args.repo,
                                                     revision, len(files), mf.total_bytes(files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

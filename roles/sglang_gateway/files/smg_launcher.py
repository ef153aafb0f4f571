#!/usr/bin/env python3
# Installed by roles/sglang_gateway as <venv>/bin/smg-launcher and started by the smg unit.
# smg 1.13 takes its keys only as command-line options (--api-key, --control-plane-api-keys)
# and reads no file for them; this launcher reads them from the unit's systemd credential
# (LoadCredential=keys:<config_dir>/keys.json, a root-only 0600 file), or, where the unit names
# the keys file instead (sglang_gateway_keys_credential: false, readable by root and the smg
# group only), from that file, and hands them to smg's own parser in-process
# (smg.launch_router.parse_router_args / launch_router), so they never appear in
# /proc/<pid>/cmdline or the environment. The other options come from args.json.
"""Start smg with its keys from a systemd credential or a root-owned keys file."""

import json
import os
import sys

KEY_OPTIONS = ("--api-key", "--control-plane-api-keys", "--tenant-api-key")


def build_argv(args, keys):
    """smg's argv from the options list of args.json and the keys dict of the credential."""
    for item in args:
        if str(item).split("=", 1)[0] in KEY_OPTIONS:
            sys.exit("smg-launcher: %s in args.json: keys belong in the credential file, not the "
                     "options (roles/sglang_gateway: sglang_gateway_extra_args)" % item)
    argv = [str(a) for a in args]
    if keys.get("api_key"):
        argv += ["--api-key", keys["api_key"]]
    if keys.get("admin_api_key"):
        argv += ["--control-plane-api-keys", "admin:ansible:admin:" + keys["admin_api_key"]]
    return argv


def main():
    config = sys.argv[1] if len(sys.argv) > 1 else "/etc/smg/args.json"
    with open(config) as handle:
        args = json.load(handle)
    creds = os.environ.get("CREDENTIALS_DIRECTORY")
    if creds:
        path = os.path.join(creds, "keys")
    elif len(sys.argv) > 2:
        path = sys.argv[2]
    else:
        sys.exit("smg-launcher: no CREDENTIALS_DIRECTORY and no keys file: start it from the smg unit "
                 "(LoadCredential=keys:..., or the keys file as the second argument)")
    with open(path) as handle:
        keys = json.load(handle)
    os.environ.pop("CREDENTIALS_DIRECTORY", None)
    from smg.launch_router import launch_router, parse_router_args
    launch_router(parse_router_args(build_argv(args, keys)))


if __name__ == "__main__":
    main()

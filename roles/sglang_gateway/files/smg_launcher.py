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

# smg 1.13's options that carry or grant a credential (smg/router_args.py): the keys, a tenant's
# key, a JWT issuer and its role mapping (a role mapped to admin), the Oracle password. Kept equal
# to SMG_KEY_OPTIONS of plugins/module_utils/sglang_input_guard.py (tests/unit/test_gateway_inputs.py).
KEY_OPTIONS = ("--api-key", "--control-plane-api-keys", "--tenant-api-key", "--jwt-issuer", "--jwt-audience",
               "--jwt-jwks-uri", "--jwt-role-mapping", "--oracle-password")
# what smg's parser makes of them (RouterArgs fields), each unset by default
KEY_FIELDS = ("api_key", "control_plane_api_keys", "tenant_api_keys", "jwt_issuer", "jwt_audience",
              "jwt_jwks_uri", "jwt_role_mapping", "oracle_password")


def key_option(item):
    """The key option an argv item reads as (argparse takes an unambiguous prefix: --api-k,
    --control-plane-api; an ambiguous one is refused too), or ""."""
    name = str(item).split("=", 1)[0]
    if not name.startswith("--") or len(name) < 3:
        return ""
    return next((o for o in KEY_OPTIONS if o.startswith(name)), "")


def refuse(why):
    sys.exit("smg-launcher: %s in args.json: keys belong in the credential file, not the options "
             "(roles/sglang_gateway: sglang_gateway_extra_args)" % why)


def check_parsed(parsed):
    """Refuse the options when smg's own parser (parse_router_args) set a key from them."""
    found = [f for f in KEY_FIELDS if getattr(parsed, f, None)]
    if found:
        refuse(", ".join(found))


def build_argv(args, keys):
    """smg's argv from the options list of args.json and the keys dict of the credential."""
    for item in args:
        if key_option(item):
            refuse("%s (read as %s)" % (str(item).split("=", 1)[0], key_option(item)))
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
    argv = build_argv(args, keys)
    check_parsed(parse_router_args([str(a) for a in args]))  # the options alone, as smg reads them
    launch_router(parse_router_args(argv))


if __name__ == "__main__":
    main()

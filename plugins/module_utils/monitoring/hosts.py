# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the sglang_monitoring role: what Prometheus needs to know about each SGLang host.

- sglang_monitoring_hosts(hostnames, hostvars, defaults): one plain dict per SGLang host
  (address, port, labels, the thresholds of its alert rules), read from the host's own variables;
  its flags through the one flag model (launch_flags), as its unit is rendered from them.
- sglang_monitoring_gateways(hostnames, hostvars, default_port): one plain dict per host of the
  gateway group (roles/sglang_gateway, smg): its name, address and metrics port.
- flag_hash(args), a function of the entries (not a filter): the flag-set hash the speed gates
  key their baselines by, from the one flag model (plugins/module_utils/flags/model.py:
  flag names folded, false/null dropped, secrets left out).

Pure functions (unit tests: tests/unit/test_sglang_monitoring_hosts.py).
"""


from ansible.module_utils.parsing.convert_bool import boolean

from ansible.errors import AnsibleFilterError


# the one flag model (plugins/module_utils/flags/model.py)
from ansible_collections.sglang.deploy.plugins.module_utils.flags import model as MODEL
SECRET_FLAGS = MODEL.SECRET_FLAGS

# SGLang 0.5.23 sets max_running_requests to 48 when the flag is not given, for these
# speculative algorithms (sglang/srt/arg_groups/speculative_hook.py: _handle_eagle_family for
# EAGLE, EAGLE3, STANDALONE and NEXTN, its alias; _handle_frozen_kv_mtp, _handle_dflash,
# _handle_dspark, _handle_ngram). UNO sets no cap; without speculation the cap comes from the
# KV pool's size, which /metrics does not show.
DEFAULT_SPEC_RUNNING_CAP = 48
SPEC_ALGORITHMS_CAPPED = frozenset(("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "FROZEN_KV_MTP",
                                    "DFLASH", "DSPARK", "NGRAM"))

# Per-host variables: read from the SGLang host's own variables (group_vars, host_vars), and
# where the host does not define one, from the monitoring role's value (`defaults`).
PER_HOST_KEYS = ("sglang_monitoring_node_exporter", "sglang_monitoring_dcgm",
                 "sglang_monitoring_ttft_p99_max_ms", "sglang_monitoring_itl_p99_max_ms",
                 "sglang_monitoring_min_spec_accept_length", "sglang_monitoring_running_cap")


def flag_hash(args):
    """The flag-set hash of the speed gates' baselines, of inventory flags as written."""
    return MODEL.flag_hash(MODEL.normalize_args(args or {}))


def launch_flags(name, hv):
    """The host's flags as its unit is rendered from them: sglang_flags_normalized where this run
    set it (roles/sglang_flags, tasks_from: model), else the host's sglang_server_args through
    the same model (names folded: "--port" is "port"; false/null dropped). Another host's
    variables are all there is here (playbooks/monitoring.yml runs on the monitoring hosts)."""
    flags = _var(hv, "sglang_flags_normalized")
    if isinstance(flags, dict):
        return flags
    try:
        return MODEL.normalize_args(_var(hv, "sglang_server_args"))
    except MODEL.FlagModelError as exc:
        raise AnsibleFilterError("%s: %s" % (name, exc))


def _blank(value):
    return value is None or (isinstance(value, str) and not value.strip())


def running_cap(args, override=None):
    """The most requests SGLang runs at once with these flags, or None when /metrics cannot
    tell: the override, else --max-running-requests, else 48 for a capped speculative algorithm."""
    if not _blank(override):
        return int(override)
    args = args or {}
    value = args.get("max-running-requests")
    if not _blank(value) and value is not False:
        return int(value)
    algorithm = args.get("speculative-algorithm")
    if not _blank(algorithm) and algorithm is not False and str(algorithm).upper() in SPEC_ALGORITHMS_CAPPED:
        return DEFAULT_SPEC_RUNNING_CAP
    return None


def _var(hostvars_of_host, key, default=None):
    """The host's variable when it defines it (even as null: null switches a threshold off)."""
    try:
        if key in hostvars_of_host:
            return hostvars_of_host[key]
    except TypeError:
        pass
    return default


def ml_env_generation(hv):
    """The ml_env generation the host runs: set in this run, else its local fact (cached or
    gathered: /etc/ansible/facts.d/ml_env.fact written by roles/ml_env), else ''."""
    active = _var(hv, "ml_env_active_generation")
    if not _blank(active):
        return str(active)
    for local in (_var(hv, "ansible_local"), (_var(hv, "ansible_facts") or {}).get("local")):
        if isinstance(local, dict):
            fact = local.get("ml_env")
            if isinstance(fact, dict) and not _blank(fact.get("active")):
                return str(fact["active"])
    return ""


def _ms_to_s(value, what, host):
    if _blank(value):
        return None
    try:
        seconds = float(value) / 1000.0
    except (TypeError, ValueError):
        raise AnsibleFilterError("%s: %s is %r, not a number of milliseconds" % (host, what, value))
    return round(seconds, 6)


def itl_ceiling_ms(min_decode_tps):
    """sglang_verify_min_decode_tps (tokens/s) as a per-token latency ceiling in ms."""
    if _blank(min_decode_tps) or float(min_decode_tps) <= 0:
        return None
    return 1000.0 / float(min_decode_tps)


def worker_url(name, hv, args=None):
    """The host's server as the gateway knows it: sglang_gateway_worker_url, else the default of
    roles/sglang_gateway (http://<ansible_host or name>:<port flag or 30000>), without a trailing
    slash. The one reading: the gateway's registration and the rollout's batches use it
    (plugins/module_utils/rollout/urls.py)."""
    if args is None:
        args = launch_flags(name, hv)
    connect = _var(hv, "ansible_host") or name
    url = _var(hv, "sglang_gateway_worker_url") or "http://%s:%s" % (connect, args.get("port") or 30000)
    return str(url).rstrip("/")


def host_entry(name, hv, defaults):
    """One SGLang host's plain dict."""
    defaults = defaults or {}
    per_host = {key: _var(hv, key, defaults.get(key)) for key in PER_HOST_KEYS}
    args = launch_flags(name, hv)
    expected = _var(hv, "sglang_verify_expected_args") or args
    port = args.get("port") or 30000
    connect = _var(hv, "ansible_host") or name
    address = _var(hv, "sglang_monitoring_address") or connect
    ttft = per_host["sglang_monitoring_ttft_p99_max_ms"]
    if _blank(ttft):
        ttft = _var(hv, "sglang_verify_max_ttft_ms")
    itl = per_host["sglang_monitoring_itl_p99_max_ms"]
    if _blank(itl):
        itl = itl_ceiling_ms(_var(hv, "sglang_verify_min_decode_tps"))
    floor = per_host["sglang_monitoring_min_spec_accept_length"]
    speculative = not _blank(args.get("speculative-algorithm")) and args.get("speculative-algorithm") is not False
    return {
        "host": name,
        "address": str(address),
        "port": int(port),
        "flag_hash": flag_hash(expected),
        "ml_env_generation": ml_env_generation(hv),
        "model": str(args.get("served-model-name") or ""),
        # -e VAR=false arrives as the string "false": Ansible's own boolean rule
        "node_exporter": boolean(per_host["sglang_monitoring_node_exporter"], strict=False),
        "dcgm": boolean(per_host["sglang_monitoring_dcgm"], strict=False),
        "ttft_p99_max_s": _ms_to_s(ttft, "the TTFT p99 limit", name),
        "itl_p99_max_s": _ms_to_s(itl, "the ITL p99 limit", name),
        "min_spec_accept_length": float(floor) if speculative and not _blank(floor) else None,
        "running_cap": running_cap(args, per_host["sglang_monitoring_running_cap"]),
    }


def hosts(hostnames, hostvars, defaults=None):
    """sglang_monitoring_hosts: the SGLang hosts, sorted by name, as plain dicts."""
    return [host_entry(name, hostvars[name], defaults) for name in sorted(hostnames or [])]


def gateways(hostnames, hostvars, default_port=29000):
    """sglang_monitoring_gateways: the gateway hosts, sorted by name: {gateway, address, port}.
    The address is the host's sglang_monitoring_address, else ansible_host, else its name; the
    port its sglang_gateway_metrics_port (smg's --prometheus-port), else `default_port`."""
    out = []
    for name in sorted(hostnames or []):
        hv = hostvars[name]
        address = _var(hv, "sglang_monitoring_address") or _var(hv, "ansible_host") or name
        port = _var(hv, "sglang_gateway_metrics_port") or default_port
        try:
            port = int(port)
        except (TypeError, ValueError):
            raise AnsibleFilterError("%s: sglang_gateway_metrics_port %r is not a port number" % (name, port)) from None
        out.append({"gateway": name, "address": str(address), "port": port})
    return out

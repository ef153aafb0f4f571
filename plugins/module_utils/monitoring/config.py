# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter of the sglang_monitoring role: the Prometheus configuration for the SGLang fleet.

sglang_monitoring_prometheus_config(hosts, options) -> {global, alerting, rule_files,
scrape_configs}, where `hosts` is the output of sglang_monitoring_hosts
(plugins/module_utils/monitoring/hosts.py) and options["gateways"] that of
sglang_monitoring_gateways. Jobs: `sglang` (each host's /metrics), `smg` (each gateway host's
--prometheus-port, label `gateway`), `node` (node exporters, 9100), `dcgm` (NVIDIA DCGM exporters,
9400), `prometheus` (itself, when it is installed by the role), then the operator's own.

Pure function (unit tests: tests/unit/test_sglang_monitoring_config.py).
"""

from ansible.errors import AnsibleFilterError

JOB_SGLANG = "sglang"
JOB_GATEWAY = "smg"
JOB_NODE = "node"
JOB_DCGM = "dcgm"


def _hostport(host, port):
    host = str(host)
    if ":" in host and not host.startswith("["):
        host = "[%s]" % host  # IPv6 literal
    return "%s:%s" % (host, port)


def _static(target, labels):
    return {"targets": [target], "labels": {k: str(v) for k, v in sorted(labels.items()) if v not in (None, "")}}


# SGLang's metrics are named sglang:<name>. Asked for OpenMetrics (Prometheus 2.x asks for it
# first), the prometheus_client SGLang 0.5.23 runs writes the samples as sglang_<name> (its HELP
# and TYPE lines keep the colon), so Debian's Prometheus 2.42 stored sglang_cache_hit_rate where
# the text format says sglang:cache_hit_rate (measured on the demo hosts; docs/monitoring.md).
# SGLang exports no sglang_-named metric of its own, so the rules, the dashboard and the report
# use the one canonical spelling and the job maps the other back to it.
SGLANG_NAME_RELABEL = {"source_labels": ["__name__"], "regex": "sglang_(.+)", "target_label": "__name__",
                       "replacement": "sglang:$1"}


def sglang_job(hosts, metrics_path):
    """One static target per SGLang host, labelled with its name, flag set, generation and model."""
    return {
        "job_name": JOB_SGLANG,
        "metrics_path": metrics_path,
        "metric_relabel_configs": [dict(SGLANG_NAME_RELABEL)],
        "static_configs": [
            _static(_hostport(h["address"], h["port"]),
                    {"host": h["host"], "flag_hash": h["flag_hash"],
                     "ml_env_generation": h.get("ml_env_generation"), "model": h.get("model")})
            for h in hosts],
    }


def gateway_job(gateways):
    """One static target per gateway host (smg serves /metrics on its --prometheus-port)."""
    if not gateways:
        return None
    return {
        "job_name": JOB_GATEWAY,
        "static_configs": [_static(_hostport(g["address"], g["port"]), {"gateway": g["gateway"]})
                           for g in sorted(gateways, key=lambda x: x["gateway"])],
    }


def _extra_static(entries, default_port):
    """Extra targets: "host:port" strings or {target, host} mappings."""
    out = []
    for entry in entries or []:
        if isinstance(entry, dict):
            target = str(entry.get("target") or "")
            label = entry.get("host") or target.rsplit(":", 1)[0]
        else:
            target, label = str(entry), str(entry).rsplit(":", 1)[0]
        if not target:
            raise AnsibleFilterError("an extra target needs `target` (HOST:PORT): %r" % (entry,))
        if ":" not in target.rsplit("]", 1)[-1]:
            target = _hostport(target, default_port)
        out.append(_static(target, {"host": label}))
    return out


def exporter_job(job, hosts, flag, port, extra):
    statics = [_static(_hostport(h["address"], port), {"host": h["host"]}) for h in hosts if h.get(flag)]
    statics += _extra_static(extra, port)
    if not statics:
        return None
    return {"job_name": job, "static_configs": statics}


def prometheus_config(hosts, options=None):
    """sglang_monitoring_prometheus_config: the whole configuration as a mapping."""
    o = dict(options or {})
    hosts = list(hosts or [])
    jobs = [sglang_job(hosts, o.get("metrics_path") or "/metrics") if hosts else None,
            gateway_job(o.get("gateways")),
            exporter_job(JOB_NODE, hosts, "node_exporter", o.get("node_exporter_port") or 9100,
                         o.get("node_exporter_targets")),
            exporter_job(JOB_DCGM, hosts, "dcgm", o.get("dcgm_port") or 9400, o.get("dcgm_targets"))]
    if o.get("self_target"):
        jobs.append({"job_name": "prometheus", "static_configs": [{"targets": [str(o["self_target"])]}]})
    config = {
        "global": {"scrape_interval": o.get("scrape_interval") or "15s",
                   "evaluation_interval": o.get("evaluation_interval") or "15s"},
        "scrape_configs": [j for j in jobs if j] + list(o.get("extra_scrape_configs") or []),
    }
    if o.get("rule_files"):
        config["rule_files"] = list(o["rule_files"])
    if o.get("alertmanagers"):
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": list(o["alertmanagers"])}]}]}
    return config

"""Judge an SGLang launch command with the installed SGLang's own parser and resolver.

Run by roles/sglang_flags/tasks/host_validate.yml with the server's interpreter, before any
restart. It changes nothing on the host: it reads the model's config.json, parses the argv
with ``prepare_server_args`` (argparse: unknown flags, bad choices) and runs the resolver
(``resolve_once`` + ``check_server_args``), which needs no weights and no GPU memory.

Input: one JSON object on stdin (by hand: ``python sglang_preflight.py < request.json``)::

    {"argv": ["--model-path", "/data/m", "--tp", "8", ...],   # tokens after -m sglang.launch_server
     "simulate_sm": "12.0",           # optional: pretend to be this CUDA GPU (CPU test machines)
     "simulate_memory_mib": 97887,    # optional: its memory (RTX PRO 6000 Blackwell: 96 GB)
     "gpu_count": 8,                  # optional: GPUs the host has (gpu_host facts)
     "layout_source": "...",          # plugins/module_utils/flags/parallel_layout.py's text
                                      #   (by hand from the repository: read from there)
     "rules": {...}, "renames": {...}, "waive": [...]}   # host rules from the rules table

Output: one JSON object on stdout (everything SGLang prints goes to stderr)::

    {"ok": bool, "phase": "parse|host|resolve|done", "errors": [...], "warnings": [...],
     "resolved": {...}, "sglang_version": "...", "timings": {...}}

Exit status: 0 accepted, 1 rejected, 2 bad input to this script.
"""

import contextlib
import io
import json
import logging
import os
import re
import sys
import time
import traceback

T0 = time.monotonic()
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

# what the report shows of the resolved arguments (all optional: absent on older versions)
RESOLVED_KEYS = [
    "model_path", "served_model_name", "device", "tp_size", "pp_size", "nnodes",
    "attention_backend", "prefill_attention_backend", "decode_attention_backend",
    "moe_runner_backend", "speculative_moe_runner_backend", "fp4_gemm_runner_backend",
    "quantization", "speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
    "speculative_num_draft_tokens", "mamba_radix_cache_strategy", "disable_overlap_schedule",
    "max_running_requests", "mem_fraction_static", "chunked_prefill_size", "page_size",
    "enable_mscclpp", "disable_custom_all_reduce", "enable_torch_symm_mem", "linear_attn_backend",
]


class _Collect(logging.Handler):
    """Keeps SGLang's own warnings (deprecations, silently changed values) for the report."""

    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.messages = []

    def emit(self, record):
        try:
            text = _ANSI.sub("", record.getMessage()).strip()
        except Exception:  # noqa: BLE001 - a broken log record must not hide the verdict
            return
        if text and text not in self.messages and len(self.messages) < 50:
            self.messages.append(text)


def _fmt(template, **kw):
    class _Safe(dict):
        def __missing__(self, key):
            return "{" + key + "}"

    return str(template).format_map(_Safe(**kw))


class Verdict:
    def __init__(self, request):
        self.request = request
        self.rules = request.get("rules") or {}
        self.waive = set(request.get("waive") or [])
        self.out = {
            "ok": True,
            "phase": "start",
            "errors": [],
            "warnings": [],
            "resolved": {},
            "sglang_version": "",
            "python": sys.executable,
            "timings": {},
        }

    def time(self, name):
        self.out["timings"][name] = round(time.monotonic() - T0, 2)

    def error(self, rule, flag, message, fix="", source="sglang"):
        item = {"rule": rule, "flag": flag, "message": message, "fix": fix, "source": source}
        if rule in self.waive:
            item["message"] = "waived by sglang_flags_waive: " + message
            self.out["warnings"].append(item)
            return
        self.out["errors"].append(item)
        self.out["ok"] = False

    def host_rule(self, rule_id, flag, **kw):
        rule = self.rules.get(rule_id) or {
            "message": rule_id, "fix": "", "source": "docs/sglang-versions.md#project-checks"}
        self.error(
            rule_id,
            flag,
            _fmt(rule["message"], **kw).strip(),
            _fmt(rule.get("fix", ""), **kw).strip(),
            rule.get("source", ""),
        )

    def warn(self, rule, flag, message):
        self.out["warnings"].append({"rule": rule, "flag": flag, "message": message})


def _unknown_flags(text):
    m = re.search(r"unrecognized arguments: (.*)", text)
    if not m:
        return []
    return [t for t in m.group(1).split() if t.startswith("--")]


def _apply_simulation(v, sm_text, memory_mib):
    """Make SGLang's GPU probes answer as a CUDA GPU of compute capability ``sm_text``.

    For CPU test machines only; on a GPU host the resolver reads NVML. Uses SGLang's own
    ``runtime_context.override_platform``.
    """
    m = re.match(r"^\s*(\d+)\.(\d+)\s*$", str(sm_text))
    if not m:
        raise ValueError(f"simulate_sm must be major.minor (e.g. 12.0), got {sm_text!r}")
    major, minor = int(m.group(1)), int(m.group(2))
    from sglang.srt.runtime_context import override_platform  # noqa: PLC0415
    import sglang.srt.utils.common as common  # noqa: PLC0415

    common.get_device_memory_capacity = lambda device=None: float(memory_mib)
    try:
        import sglang.srt.arg_groups.memory_hook as memory_hook  # noqa: PLC0415

        memory_hook.get_device_memory_capacity = common.get_device_memory_capacity
    except ImportError:
        pass
    ctx = override_platform(
        is_cuda=True, is_hip=False, is_npu=False, is_xpu=False, is_musa=False, is_mps=False,
        is_sm90=(major == 9), is_sm100=(major == 10 and minor == 0),
        is_sm100_or_sm110=(major in (10, 11)), is_sm110=(major == 11),
        is_sm120=(major == 12), is_blackwell=(major in (10, 11, 12)),
        is_hopper_with_cuda_12_3=(major == 9), has_amx=False, has_flashinfer=True,
        device_sm=major * 10 + minor, device_capability=(major, minor),
    )
    ctx.install()
    v.warn("simulation", "sglang_flags_simulate_sm",
           f"GPU probes simulated as SM{major}.{minor} with {memory_mib} MiB (CPU test machine)")


def _layout_module(request):
    """plugins/module_utils/flags/parallel_layout.py, the one owner of the GPU count (the
    offline rule tp-exceeds-gpu-count counts with it too): host_validate.yml sends its text in
    the request; run by hand from the repository, it is read from there. None if neither."""
    name = "parallel_layout.py"
    source = request.get("layout_source")
    here = globals().get("__file__")
    if not source and here:
        path = os.path.join(os.path.dirname(os.path.abspath(here)), "..", "..", "..", "plugins",
                            "module_utils", "flags", name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as fh:
                source = fh.read()
    if not source:
        return None
    namespace = {"__name__": "sglang_parallel_layout"}
    exec(compile(source, name, "exec"), namespace)  # noqa: S102 - the collection's own file
    return namespace


def check_gpu_count(v, sa, request, gpu_count):
    """Rule host-tp-exceeds-gpu-count: the GPUs the parsed flags need (dp x tp x pp / nnodes,
    attention DP inside tp) against the GPUs the host has, ``gpu_count`` (None: not known)."""
    layout = _layout_module(request)
    if layout is None:
        v.error("preflight", "tp", "the GPU count cannot be checked: the request holds no "
                "layout_source (plugins/module_utils/flags/parallel_layout.py)",
                "run the check through roles/sglang_flags (host_validate.yml)", "preflight")
        return
    flags = layout["flags_from_server_args"](sa)
    need = layout["gpus_needed"](flags)
    if gpu_count in (None, "") or need <= int(gpu_count):
        return
    v.host_rule("host-tp-exceeds-gpu-count", "tp-size", value=need, layout=layout["layout_text"](flags),
                gpu_count=gpu_count)


def check_cpu_ranks(v, sa, request, numa_nodes=None):
    """Rules host-cpu-ranks-exceed-numa-nodes and host-cpu-omp-bind-groups: on a CPU server each
    rank's scheduler binds its OpenMP threads at start (SGLang 0.5.23 numa_utils.init_threads_binding,
    ranks = dp x tp x pp): without SGLANG_CPU_OMP_THREADS_BIND one NUMA node per rank, with it one
    '|'-separated core group per rank, else an assert kills the rank during init. ``numa_nodes``:
    SGLang's own count (utils.common.get_cpu_ids_by_node) when None."""
    if getattr(sa, "device", None) != "cpu":
        return
    layout = _layout_module(request)
    if layout is None:
        return  # check_gpu_count names a missing layout_source
    lay = layout["layout"](layout["flags_from_server_args"](sa))
    ranks = lay["dp"] * lay["tp"] * lay["pp"]
    if ranks <= 1:
        return
    shape = "dp-size %d x tp-size %d x pp-size %d = %d ranks" % (lay["dp"], lay["tp"], lay["pp"], ranks)
    bind = os.environ.get("SGLANG_CPU_OMP_THREADS_BIND", "all")
    if bind != "all":
        groups = len(bind.split("|"))
        if groups < ranks:
            v.host_rule("host-cpu-omp-bind-groups", "dp-size", layout=shape, ranks=ranks, groups=groups, value=bind)
        return
    if numa_nodes is None:
        from sglang.srt.utils.common import get_cpu_ids_by_node  # noqa: PLC0415

        numa_nodes = len(get_cpu_ids_by_node())
    if ranks > numa_nodes:
        v.host_rule("host-cpu-ranks-exceed-numa-nodes", "dp-size", layout=shape, ranks=ranks,
                    numa_nodes=numa_nodes)


def main(request, v):
    argv = request.get("argv")
    if not isinstance(argv, list) or not all(isinstance(t, str) for t in argv):
        v.error("input", "sglang_flags_candidate_argv", "argv must be a list of strings")
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never download while validating
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    collector = _Collect()
    logging.getLogger().addHandler(collector)

    # --- parse: SGLang's own argparse ---------------------------------------------------------
    v.out["phase"] = "parse"
    import sglang  # noqa: PLC0415

    v.out["sglang_version"] = getattr(sglang, "__version__", "")
    from sglang.srt.server_args import prepare_server_args  # noqa: PLC0415

    v.time("import")
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            sa = prepare_server_args(list(argv))
    except SystemExit as exc:
        text = _ANSI.sub("", captured.getvalue()).strip()
        lines = [ln for ln in text.splitlines() if ln.strip()]
        err = next((ln for ln in reversed(lines) if ": error: " in ln or ln.startswith("error")), "")
        message = err or (lines[-1] if lines else f"argparse exited {exc.code}")
        v.error("sglang-argparse", "argv", f"SGLang {v.out['sglang_version']} rejects the flags: "
                f"{message}", "fix the flag named in SGLang's message", "sglang argparse")
        for flag in _unknown_flags(message):
            hint = (request.get("renames") or {}).get(flag.lstrip("-"))
            if hint:
                message = _fmt(hint["message"], flag=flag.lstrip("-"), replacement=hint["replacement"],
                               version=v.out["sglang_version"])
                v.error(hint["rule"], flag.lstrip("-"), message.strip(),
                        f"write {hint['replacement']}", hint.get("source", ""))
        return 1
    finally:
        sys.stderr.write(captured.getvalue())
    v.time("parse")

    # --- host rules: what only the host can tell ------------------------------------------------
    v.out["phase"] = "host"
    model_path = getattr(sa, "model_path", None)
    model_ok = bool(model_path) and os.path.isfile(os.path.join(str(model_path), "config.json"))
    if not model_ok:
        v.host_rule("host-model-path-missing", "model-path", value=model_path)
    if getattr(sa, "enable_mscclpp", False):
        import importlib.util  # noqa: PLC0415

        if importlib.util.find_spec("mscclpp") is None:
            v.host_rule("host-mscclpp-not-importable", "enable-mscclpp", value=sys.executable)
    gpu_count = request.get("gpu_count")
    simulate = request.get("simulate_sm") or ""
    if gpu_count in (None, "") and not simulate and getattr(sa, "device", None) not in ("cpu",):
        try:
            import torch  # noqa: PLC0415

            if torch.cuda.is_available():
                gpu_count = torch.cuda.device_count()
        except Exception as exc:  # noqa: BLE001 - report, do not crash
            v.warn("gpu-count", "tp", f"could not count GPUs: {exc}")
    check_gpu_count(v, sa, request, gpu_count)
    try:
        check_cpu_ranks(v, sa, request)
    except Exception as exc:  # noqa: BLE001 - report, do not crash
        v.warn("cpu-ranks", "dp-size", f"could not count the NUMA nodes: {exc}")
    if not model_ok:
        return 1  # the resolver would try to fetch the model from the Hub

    # --- resolve: SGLang's own resolver, platform from NVML or simulated ------------------------
    v.out["phase"] = "resolve"
    if simulate:
        try:
            _apply_simulation(v, simulate, request.get("simulate_memory_mib") or 97887)
        except Exception as exc:  # noqa: BLE001
            v.error("simulation", "sglang_flags_simulate_sm",
                    f"cannot simulate SM {simulate} with SGLang {v.out['sglang_version']}: "
                    f"{type(exc).__name__}: {exc}")
            return 1
        if getattr(sa, "device", None) is None:
            sa.device = "cuda"  # get_device() would look for a real accelerator
    root = logging.getLogger()
    if collector not in root.handlers:  # SGLang's logging setup may have replaced the handlers
        root.addHandler(collector)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            sa.resolve_once()
            sa.check_server_args()
    except BaseException as exc:  # noqa: BLE001 - SGLang raises asserts, ValueErrors, SystemExit
        if isinstance(exc, KeyboardInterrupt):
            raise
        frames = traceback.extract_tb(exc.__traceback__)
        where = ""
        if frames:
            last = frames[-1]
            fname = last.filename.split("site-packages/")[-1]
            where = f" (at {fname}:{last.lineno}: {(last.line or '').strip()})"
        text = str(exc).strip() or "(no message)"
        v.error("sglang-resolve", "argv",
                f"SGLang {v.out['sglang_version']} resolver rejects the flags: "
                f"{type(exc).__name__}: {text}{where}",
                "fix the flags SGLang names; a bare AssertionError carries the failing "
                "condition in its source line", "sglang resolver")
        if os.environ.get("SGLANG_FLAGS_TRACEBACK"):
            traceback.print_exc()
        return 1
    finally:
        v.time("resolve")
        for message in collector.messages:
            v.warn("sglang-log", "-", message)

    resolved = sa.resolved_dict() if hasattr(sa, "resolved_dict") else vars(sa)
    for key in RESOLVED_KEYS:
        if key in resolved:
            value = resolved[key]
            v.out["resolved"][key] = value if isinstance(value, (int, float, str, bool, type(None))) \
                else str(value)[:200]
    v.out["phase"] = "done"
    return 0 if v.out["ok"] else 1


if __name__ == "__main__":
    real_stdout = os.dup(1)
    os.dup2(2, 1)  # anything SGLang prints (C or Python) goes to stderr
    sys.stdout = sys.stderr
    try:
        # host_validate.yml sends {"script": <this file>, "request": {...}} on stdin and execs
        # the script with the request already read; run by hand, the request is stdin itself
        req = globals().get("SGLANG_FLAGS_REQUEST")
        if req is None:
            req = json.load(sys.stdin)
    except ValueError as exc:
        req = None
        verdict = Verdict({})
        verdict.error("input", "stdin", f"stdin is not a JSON request: {exc}")
        rc = 2
    if req is not None:
        verdict = Verdict(req)
        try:
            rc = main(req, verdict)
        except Exception as exc:  # noqa: BLE001 - e.g. sglang not importable: report it
            verdict.error("preflight", verdict.out["phase"],
                          f"{type(exc).__name__}: {exc}", "check sglang_flags_python", "preflight")
            traceback.print_exc()
            rc = 1
    verdict.out["ok"] = rc == 0 and verdict.out["ok"]
    verdict.time("total")
    with os.fdopen(real_stdout, "w") as out:
        out.write(json.dumps(verdict.out, default=str) + "\n")
    sys.exit(rc)

"""Every input has a kind (docs/security.md, "Input kinds"): each option of each entry point of each
role's meta/argument_specs.yml names its kind in the role's meta/input_kinds.yml, or says why it is
free-form; the entry is sound (a known kind, known parameters, a closed dict's keys); a dict option
is closed (its keys listed) or a map, an environment, the flag model's or free-form with a reason;
a choice's choices are the spec's; and every entry point that takes options refuses what its kinds
refuse first (sglang.deploy.sglang_inputs, tag always), before anything else runs. A role added next
round without kinds, or an option added without one, fails here."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.sglang.deploy.plugins.module_utils.inputs import catalogue as C

ROOT = Path(__file__).resolve().parents[2]
ACTION = "sglang.deploy.sglang_inputs"
# entry points whose first task is not the check, and why
EXEMPT = {
    ("sglang_flags", "lint"): "it is the lint: playbooks/lint.yml judged every role's kinds of every host just before",
    ("sglang_firewall", "lint"): "run by playbooks/lint.yml after its check of every role, and by the role's main "
                                 "after main's own check",
    ("model_files", "lint"): "run by playbooks/lint.yml after its check of every role",
    ("sglang_flags", "model"): "the flag model itself, run by playbooks/lint.yml after its check of every role and by "
                               "sglang_server's render after that role's entry point judged the flags; a name it "
                               "cannot read fails the normalisation with its fix",
    ("sglang_gateway", "group"): "run on every host of the inventory by deploy.yml's second play, on the controller "
                                 "only (add_host by a variable): its one option is a group name the lint's check of "
                                 "every role (the gateway hosts' play included) judged first",
}
# entry points whose first task reports the kinds' refusals as findings instead of failing, and why
REPORTING = {
    ("sglang_flags", "judge"): "it exports findings instead of failing (the sweep records a candidate whose inputs "
                               "are refused as rejected, and runs the others)",
}
# the kinds whose value is a mapping (a dict option must have one of them)
MAPPING_KINDS = {"dict", "map", "env", "flags", "smg-args", "free"}


def role_dirs(roots=ROOT / "roles"):
    return sorted(p.parent.parent for p in Path(roots).glob("*/meta/argument_specs.yml"))


def specs(role_dir):
    return yaml.safe_load((role_dir / "meta" / "argument_specs.yml").read_text())["argument_specs"] or {}


def options(role_dir):
    """{option: its spec} over every entry point (the same option is one input)."""
    out = {}
    for entry in specs(role_dir).values():
        out.update((entry or {}).get("options") or {})
    return out


def kinds(role_dir):
    path = role_dir / "meta" / "input_kinds.yml"
    return yaml.safe_load(path.read_text()) if path.is_file() else None


def kind_problems(role_dir) -> list:
    """Why ``role_dir``'s kinds do not cover its argument specs ([] when they do)."""
    role, found = role_dir.name, kinds(role_dir)
    if found is None:
        return [f"{role}: no meta/input_kinds.yml: every option names its kind there (docs/security.md, Input kinds)"]
    given, opts = found.get("options") or {}, options(role_dir)
    out = [f"{role}.{o}: no kind (or `kind: free` with `why`)" for o in sorted(set(opts) - set(given))]
    out += [f"{role}.{o}: a kind for an option its argument spec lacks" for o in sorted(set(given) - set(opts))]
    for name, spec in given.items():
        out += C.spec_problems(spec, f"{role}.{name}")
        kind = C.spec_of(spec)
        if name not in opts:
            continue
        if opts[name].get("type") == "dict" and kind.get("kind") not in MAPPING_KINDS:
            out.append(f"{role}.{name}: a dict option is closed (kind dict with its keys), a map, an env, the "
                       f"flag model's or free-form, not {kind.get('kind')}")
        if opts[name].get("options") and kind.get("kind") == "dict" and set(kind.get("keys") or {}) != set(
                opts[name]["options"]):
            out.append(f"{role}.{name}: its keys are not the spec's suboptions {sorted(opts[name]['options'])}")
        if kind.get("kind") == "choice" and opts[name].get("choices") and [str(c) for c in kind.get("choices") or []] != [
                str(c) for c in opts[name].get("choices") or []]:
            out.append(f"{role}.{name}: its choices are not the spec's {opts[name].get('choices')}")
    out += [f"{role}: no cross-check {c!r}" for c in found.get("checks") or [] if c not in C.CHECKS]
    return out


def first_task(role_dir, entry, seen=()):
    """The first task an entry point runs, through the task files it imports or includes first."""
    path = role_dir / "tasks" / f"{entry}.yml"
    tasks = yaml.safe_load(path.read_text()) or []
    task = tasks[0] if tasks else {}
    imported = task.get("ansible.builtin.import_tasks") or (
        task.get("ansible.builtin.include_tasks") if "when" not in task else None)
    if imported and imported not in seen:
        return first_task(role_dir, imported.removesuffix(".yml"), seen + (imported,))
    return task


@pytest.mark.parametrize("role_dir", role_dirs(), ids=lambda p: p.name)
def test_every_option_of_every_entry_point_names_its_kind(role_dir):
    assert kind_problems(role_dir) == []


@pytest.mark.parametrize("role,entry", [(d.name, e) for d in role_dirs() for e, s in specs(d).items()
                                        if (s or {}).get("options")])
def test_every_entry_point_refuses_its_inputs_first(role, entry):
    if (role, entry) in EXEMPT:
        return
    task = first_task(ROOT / "roles" / role, entry)
    assert ACTION in task, f"roles/{role}/tasks/{entry}.yml: the first task is not {ACTION}: {task.get('name')}"
    assert "always" in (task.get("tags") or []), f"roles/{role}/tasks/{entry}.yml: the check is not tagged always"
    if (role, entry) in REPORTING:
        assert task[ACTION] == {"report": True} and task.get("register"), task
        return
    assert not task[ACTION], "the check judges its own role (no arguments)"


def test_a_role_without_kinds_or_an_option_without_one_fails(tmp_path):
    role = tmp_path / "new_role"
    (role / "meta").mkdir(parents=True)
    (role / "meta" / "argument_specs.yml").write_text(yaml.safe_dump({"argument_specs": {"main": {"options": {
        "new_role_port": {"type": "int"}, "new_role_limits": {"type": "dict"}}}}}))
    assert kind_problems(role)[0].startswith("new_role: no meta/input_kinds.yml")
    (role / "meta" / "input_kinds.yml").write_text(yaml.safe_dump({"options": {"new_role_port": "port",
                                                                               "new_role_limits": "text"}}))
    assert kind_problems(role) == ["new_role.new_role_limits: a dict option is closed (kind dict with its keys), a "
                                   "map, an env, the flag model's or free-form, not text"]
    (role / "meta" / "input_kinds.yml").write_text(yaml.safe_dump({"options": {
        "new_role_port": "port", "new_role_limits": {"kind": "free"}}}))
    assert kind_problems(role) == ["new_role.new_role_limits: a free-form option says why (`why`)"]
    (role / "meta" / "input_kinds.yml").write_text(yaml.safe_dump({"options": {"new_role_port": "port"}}))
    assert kind_problems(role) == ["new_role.new_role_limits: no kind (or `kind: free` with `why`)"]


def test_every_kind_and_cross_check_says_what_it_is():
    assert all(k.summary for k in C.KINDS.values())
    assert all(summary for _, summary in C.CHECKS.values())
    used = {C.spec_of(s).get("kind") for d in role_dirs() for s in (kinds(d) or {}).get("options", {}).values()}
    assert used <= set(C.KINDS)


def role_includes():
    """(file, role, entry, rolespec_validate) of every include_role / import_role of the playbooks and roles."""
    found = []
    for path in sorted(list(ROOT.glob("*.yml")) + list(ROOT.glob("playbooks/*.yml")) + list(ROOT.glob("roles/*/tasks/*.yml"))):
        def walk(node):
            if isinstance(node, dict):
                for key in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
                    if isinstance(node.get(key), dict):
                        args = node[key]
                        found.append((str(path.relative_to(ROOT)), args.get("name"), args.get("tasks_from", "main"),
                                      args.get("rolespec_validate", True)))
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for item in node:
                    walk(item)
        walk(yaml.safe_load(path.read_text()))
    return found


@pytest.mark.parametrize("where,role,entry", [(w, r, e) for w, r, e, v in role_includes() if v is False])
def test_an_include_without_ansibles_validation_targets_an_entry_point_that_validates(where, role, entry):
    """``rolespec_validate: false`` leaves Ansible's own argument spec task out: only where the entry
    point's first task (sglang.deploy.sglang_inputs) validates the spec itself."""
    assert (role, entry) not in EXEMPT, f"{where}: {role} {entry} has no check of its own"
    assert ACTION in first_task(ROOT / "roles" / role, entry), f"{where}: {role} {entry}"


def test_the_deploys_hot_path_costs_one_task_per_entry_point():
    """The no-op deploy's entry points are included without Ansible's own validation task (the check
    does both): a slower deploy would follow from leaving one out."""
    deploy = {(r, e) for w, r, e, v in role_includes() if w == "deploy.yml" and v is False}
    assert {("gpu_host", "main"), ("cuda_toolkit", "main"), ("sglang_firewall", "main"), ("ml_env", "main"),
            ("model_files", "main"), ("sglang_watchdog", "install"), ("gpu_admit", "main"), ("sglang_flags", "main"),
            ("sglang_server", "validate"), ("sglang_rollout", "plan"), ("sglang_server", "ensure_running"),
            ("sglang_watchdog", "main"), ("sglang_rollout", "main"), ("sglang_gateway", "main"),
            ("sglang_gateway", "register")} <= deploy


def required_without_default(role_dir) -> list:
    """Options whose kind says ``required: true`` although an entry point that judges the role's
    kinds may run without them: no default in defaults/main.yml and not required by that entry
    point's own spec (the kinds are the role's, judged at every entry point; a value only one entry
    point needs is required by that entry point's argument spec, not by its kind)."""
    defaults_file = role_dir / "defaults" / "main.yml"
    defaults = (yaml.safe_load(defaults_file.read_text()) if defaults_file.is_file() else None) or {}
    found = []
    for option, entry in ((kinds(role_dir) or {}).get("options") or {}).items():
        if not (isinstance(entry, dict) and entry.get("required")) or option in defaults:
            continue
        for name, spec in specs(role_dir).items():
            opts = (spec or {}).get("options") or {}
            if opts and (role_dir.name, name) not in EXEMPT and not (opts.get(option) or {}).get("required"):
                found.append(f"{role_dir.name}.{option}: its kind is required, but entry point {name} runs "
                             "without it (no default, not required by its spec)")
    return found


@pytest.mark.parametrize("role_dir", role_dirs(), ids=lambda p: p.name)
def test_a_required_kind_holds_at_every_entry_point(role_dir):
    assert required_without_default(role_dir) == []


def test_a_kind_required_where_an_entry_point_may_leave_it_out_fails(tmp_path):
    role = tmp_path / "new_role"
    (role / "meta").mkdir(parents=True)
    (role / "meta" / "argument_specs.yml").write_text(yaml.safe_dump({"argument_specs": {
        "check": {"options": {"new_role_target": {"type": "str", "required": True}}},
        "activate": {"options": {"new_role_target": {"type": "str"}}}}}))
    (role / "meta" / "input_kinds.yml").write_text(yaml.safe_dump({"options": {
        "new_role_target": {"kind": "dir-name", "required": True}}}))
    assert required_without_default(role) == ["new_role.new_role_target: its kind is required, but entry point "
                                              "activate runs without it (no default, not required by its spec)"]
    (role / "meta" / "input_kinds.yml").write_text(yaml.safe_dump({"options": {"new_role_target": "dir-name"}}))
    assert required_without_default(role) == []

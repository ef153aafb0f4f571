"""The action of sglang.deploy.sglang_inputs (plugins/modules/sglang_inputs.py documents it): a role's
inputs judged by their kinds on the controller, before anything is touched (docs/security.md,
"Input kinds"). It reads ``roles/<role>/meta/input_kinds.yml``, templates each option the host
defines (an option that cannot be templated here, e.g. one reading a fact gathered later, is left to
the next entry point that can) and runs the catalogue (plugins/module_utils/inputs/catalogue.py)."""

from __future__ import annotations

import os

from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.utils.vars import combine_vars

from ansible_collections.sglang.deploy.plugins.module_utils.inputs import catalogue
from ansible_collections.sglang.deploy.plugins.modules.sglang_inputs import ARGUMENT_SPEC


class _Variables:
    """The host's variables as the task sees them, each templated when a kind asks for it."""

    def __init__(self, templar, task_vars):
        self._templar, self._vars, self._done = templar, task_vars, {}

    def get_value(self, name, missing):
        if name in self._done:
            return self._done[name]
        value = missing
        if name in self._vars:
            try:
                value = self._templar.template(self._vars[name])
            except (AnsibleError, TypeError, ValueError):  # undefined here: judged where it is defined
                value = missing
            if type(value).__name__.endswith(("Undefined", "Marker")):
                value = missing
        self._done[name] = value
        return value


def spec_errors(role, entry, values, params):
    """Ansible's own validation of an entry point's argument spec (what the task it inserts before a
    role's tasks does: types, choices, required), on the host's values and the include's role
    parameters. The check runs it itself, so that an include may leave Ansible's out
    (``rolespec_validate: false``) and an entry point costs one task, not two."""
    spec = ((catalogue.load_specs(role).get(entry) or {}).get("options")) or {}
    if not spec:
        return []
    given = {name: values.get_value(name, None) for name in spec}
    given = {name: value for name, value in given.items() if value is not None}
    checked = ArgumentSpecValidator(spec).validate(combine_vars(given, params or {}), validate_role_argument_spec=True)
    return list(checked.error_messages)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        checked = ArgumentSpecValidator(ARGUMENT_SPEC).validate(self._task.args)
        if checked.error_messages:
            return dict(result, failed=True, msg="; ".join(checked.error_messages))
        args = checked.validated_parameters
        own = self._task._role.get_name(include_role_fqcn=False) if self._task._role else None
        roles = args.get("roles") or [args.get("role") or own]
        if not all(roles):
            return dict(result, failed=True, msg="sglang_inputs: name the role (role:), or call it inside one")
        host = str(task_vars.get("inventory_hostname", ""))
        local = str(getattr(self._play_context, "connection", "") or task_vars.get("ansible_connection", "")) in (
            "local", "ansible.builtin.local")
        as_user = local and not self._play_context.become and os.geteuid() != 0
        ctx = catalogue.Ctx(host, (host, task_vars.get("ansible_host"), task_vars.get("inventory_hostname_short")),
                            _Variables(self._templar, task_vars), as_user=as_user)
        found = []
        variables = ctx._variables  # pylint: disable=protected-access  the one templating of this task
        if not args.get("roles") and self._task._role:  # an entry point: its argument spec too
            entry = (self._task._role._from_files or {}).get("tasks", "main")
            for message in spec_errors(roles[0], entry, variables, self._task._role._role_params):
                found.append((roles[0], f"role {roles[0]} ({entry})", catalogue.Problem(
                    "argument-spec", message, f"correct the variable (roles/{roles[0]}/meta/argument_specs.yml)")))
        for role in roles:
            for variable, problem in catalogue.role_problems(catalogue.load_kinds(role), ctx):
                found.append((role, variable, problem))
        seen, refusals = set(), []
        for _, variable, problem in found:  # an option that defaults to another's value is named once
            text = catalogue.line(host, variable, problem)
            key = text.split(" [", 1)[1] if " [" in text else text
            if key not in seen:
                seen.add(key)
                refusals.append(text)
        findings = [{"rule": p.rule, "severity": "error", "status": "violation", "flag": v + p.where, "value": None,
                     "message": p.message, "fix": p.fix, "source": f"roles/{r}/meta/input_kinds.yml"}
                    for r, v, p in found]
        result.update(changed=False, refusals=refusals, findings=findings, checked=roles)
        if refusals and not args["report"]:
            what = roles[0] if len(roles) == 1 else "these roles"
            result.update(failed=True, msg=[f"{host}: {what} refuses {len(refusals)} input(s) that cannot work "
                                            "(nothing was touched):"] + refusals)
        return result

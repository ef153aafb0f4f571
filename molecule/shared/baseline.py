"""The known states of a Molecule fleet that the verifier's fixtures bring the hosts to, so that
each test sets up what it needs instead of inheriting the previous test's result.

The baseline is the inventory's own configuration, deployed (deploy.yml with no flag override)
and serving. ensure_baseline() is cheap when the fleet is already there: one `systemctl cat`
and one real question per host, compared with what the baseline deploy left; only a host that
differs makes it run deploy.yml, which then restores just that host (a no-op deploy of 3 hosts
costs ~15-25 s, a restore one rollout batch per host that differs).

A test that needs only a serving fleet on configurations deployed on purpose (it asserts what
changes against the units it found, not against the baseline's) asks ensure_known_good(): every
host answers and runs a unit that the baseline, a named state or a passing test left there
(mark_good()); any other host (one a failed test left on a broken or half-rolled change) sends
the fleet back to the baseline. Named states (a new model revision on every host, ...) are
remembered once reached, with the unit each host had then; current() gives a state back only
while every host still has exactly that unit and answers.
"""

from __future__ import annotations

from ansible_collections.sglang.deploy.molecule.shared.fleet import ask, figure, ip_of, playbook, unit_text

# the restore from a new model revision back to the inventory's: the quality reference on the
# host is the newer revision's, and the old revision's numerics differ from it as far as the
# gate can tell (roles/sglang_verify, plugins/module_utils/quality/compare.py); the fixture
# accepts its own way back on purpose, as an operator would
RESTORE_VARS = {"sglang_verify_quality_accept": True}


class Fleet:
    """The hosts of one scenario and the states the fixtures know them in."""

    def __init__(self, hosts):
        self.hosts = list(hosts)
        self.states = {}  # name -> ({host: unit text}, data)
        self.good = {h: set() for h in self.hosts}  # units deployed on purpose and verified
        self.seconds = []  # each deploy.yml run the fixtures needed (reported by report())

    def silent(self, hosts=None):
        """The hosts that do not answer the known question right now."""
        out = []
        for host in self.hosts if hosts is None else hosts:
            try:
                if ask(ip_of(host), timeout=15) != "OK":
                    out.append(host)
            except OSError:
                out.append(host)
        return out

    def units(self):
        return {h: unit_text(h) for h in self.hosts}

    def differing(self, name):
        """The hosts whose unit is not the one they had in state `name`, or that do not answer;
        every host when the state was never reached."""
        if name not in self.states:
            return list(self.hosts)
        units = self.states[name][0]
        changed = [h for h in self.hosts if unit_text(h) != units[h]]
        return changed + self.silent([h for h in self.hosts if h not in changed])

    def mark_good(self):
        """Every host's unit as it is now was deployed on purpose and verified (by the caller)."""
        for host, unit in self.units().items():
            self.good[host].add(unit)

    def remember(self, name, data=None):
        """Record that every host is now in state `name` (its unit as it is now); a known-good one."""
        self.states[name] = (self.units(), data)
        self.mark_good()

    def current(self, name):
        """The data of state `name` when every host is still in it, else None."""
        return None if self.differing(name) else self.states[name][1]

    def ensure_known_good(self):
        """Every host serving a unit deployed on purpose; else the baseline."""
        units = self.units()
        unknown = [h for h in self.hosts if units[h] not in self.good[h]]
        if unknown or self.silent():
            self.ensure_baseline()

    def ensure_baseline(self):
        """Every host on the inventory's configuration and serving; deploy.yml runs only when a
        host differs (the first call always runs it: a no-op after a converge). A restore must
        give each host back exactly the unit the first baseline deploy left."""
        differ = self.differing("baseline")
        if not differ:
            return
        _, out, took = playbook("deploy.yml", RESTORE_VARS)
        self.seconds.append(took)
        if "baseline" in self.states:
            units = self.states["baseline"][0]
            drifted = [h for h in self.hosts if unit_text(h) != units[h]]
            assert not drifted, f"deploy.yml of the inventory's configuration did not restore the unit of {drifted}"
            print(f"baseline restored on {', '.join(differ)} in {took:.0f} s")
        else:
            self.remember("baseline")
            print(f"baseline deployed in {took:.0f} s")
        silent = self.silent()
        assert not silent, f"after the baseline deploy, these hosts do not answer: {silent}\n{out[-3000:]}"

    def report(self):
        """The cost of the fixtures' deploys, a figure of its own (reports/test-figures.log)."""
        figure(f"fixtures: deploy.yml to reach the baseline ran {len(self.seconds)} time(s), "
               f"{sum(self.seconds):.0f} s in all (" + ", ".join(f"{s:.0f}" for s in self.seconds) + " s)")

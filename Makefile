# sglang-deploy: the two commands are `make demo` and `make test` (README.md).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
VENV := .venv
BIN := $(VENV)/bin
LOCAL := -i inventories/local
# molecule and its plugins call ansible-playbook / ansible-config by name
export PATH := $(abspath $(VENV))/bin:$(PATH)
export ANSIBLE_FORCE_COLOR ?= 0
export PY_COLORS ?= 0

.PHONY: help disk setup tools docker image wheelhouse demo demo-hosts demo-down ci-demo lint unit check molecule test-scenario test bench verify-quick gate-check heal-check clean drift figures figures-check collection

help:
	@echo "make demo       local container hosts + deploy.yml + verification report"
	@echo "make demo-down  remove the local container hosts"
	@echo "make test       everything CI runs (lint, unit tests, Molecule)"
	@echo "make check      the fast tier: lint + unit and integration tests, no containers"
	@echo "make test-scenario S=rollout  one Molecule scenario alone (its setup included)"
	@echo "make bench      our benchmark client vs sglang.benchmark.serving (interleaved medians)"
	@echo "make gate-check the speed gates on the demo hosts: no false failure, a throttled host caught"
	@echo "make heal-check a demo host's server hung (kill -STOP): out of the gateway, restarted, back, by its watchdog"
	@echo "make drift      the newest sglang on production's indexes against every inventory's profile"
	@echo "make figures    docs/figures.md, the generated page of figures, from docs/figures.yml and reports/"
	@echo "make collection reports/sglang-deploy-<version>.tar.gz, the collection sglang.deploy as ansible-galaxy builds it"

# about 20 GiB: wheelhouse 3.1, two ml_env generations of 6.6 each, container layers
DISK_GIB ?= 20
disk:                  ## fail early, with the fix, when the caches will not fit on the disk
	./scripts/check-disk.sh $(DISK_GIB)

tools:                 ## controller venv (requirements.txt) + collections
	./scripts/bootstrap.sh

docker:                ## Docker engine from Debian, started if not running
	./scripts/docker-up.sh

image: docker          ## Debian 12 + systemd base image, built once per recipe hash
	./scripts/build-image.sh >/dev/null

wheelhouse: tools      ## every wheel of the local profile's ml_env spec, built once per spec
	$(BIN)/ansible-playbook $(LOCAL) playbooks/wheelhouse.yml

setup: disk tools docker image wheelhouse

DEMO_HOSTS_ARGS ?=
demo-hosts: setup
	$(BIN)/ansible-playbook $(LOCAL) playbooks/local_hosts.yml $(DEMO_HOSTS_ARGS)

demo: demo-hosts       ## the main job on the embedded default (a gateway in front), Prometheus beside it, then the verification report
	$(BIN)/ansible-playbook $(LOCAL) deploy.yml
	$(BIN)/ansible-playbook $(LOCAL) playbooks/monitoring.yml
	$(BIN)/ansible-playbook $(LOCAL) playbooks/verify.yml
	@echo "demo: the gateway (smg) in front of the demo hosts: http://127.0.0.1:30080/v1/chat/completions"
	@echo "demo: Prometheus scraping the demo hosts (alerts: /alerts): http://127.0.0.1:9090"
	@echo "demo: verification report: reports/latest.md (links this run's Prometheus graphs)"

demo-down: tools
	$(BIN)/ansible-playbook $(LOCAL) playbooks/local_hosts.yml -e local_hosts_state=absent

# CI's run of the README's main command (.ci/run: inside `make test`, TEST_THEN, once default is
# done), reusing the image, wheelhouse, venv and ml_env generation `make test` built: new demo
# hosts from the image built minutes before, `make demo` whole, its time, then the hosts removed
# whatever happened. A complete generation the
# scenarios built is linked into .cache/ml-envs/demo (scripts/ml-envs-seed.sh) and mounted at
# the hosts' /root/ml-envs; without one the hosts install their own, as `make demo` does.
ci-demo:
	$(MAKE) demo-down >/dev/null
	start=$$(date +%s); rc=0; \
	  envs=$$(./scripts/ml-envs-seed.sh demo); \
	  shared=$$(ls "$$envs"/*/ml-env-generation.json 2>/dev/null | head -n 1); \
	  $(MAKE) demo DEMO_HOSTS_ARGS="$${shared:+-e local_hosts_ml_envs=$$envs}" || rc=$$?; \
	  echo "=== make demo took $$(( $$(date +%s) - start )) s (rc=$$rc)"; \
	  $(MAKE) demo-down >/dev/null || true; exit $$rc

# The production profile ships its model revision unpinned (model_files_revision: PIN-ME in
# inventories/production/group_vars/blackwell/model.yml), which its lint refuses until a site pins
# the sha; and its API key lives in a vault file the operator creates (README.md, "Production
# use"), which this lint, CI's included, has neither the file nor the password of. The target lints
# everything else of it with a well-formed stand-in sha (not a real revision of the model) and
# names the risk it accepts for the key (docs/security.md); a deploy of the shipped profile still
# stops at both refusals.
LINT_PRODUCTION_REVISION := 0000000000000000000000000000000000000000
LINT_NO_KEY := {"sglang_server_allow_no_api_key": "make lint: the API key is in a vault file of the operator, not in the repository"}
# ansible-lint resolves the project's modules from ~/.ansible/collections first; a copy of this
# collection there (Molecule's prerun put one before it was turned off in .config/molecule, or an
# `ansible-galaxy collection install` by hand) from an older checkout fails the lint of a newer
# one (a module it lacks): it goes first.
lint: tools
	rm -rf "$(HOME)/.ansible/collections/ansible_collections/sglang/deploy"
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint
	$(BIN)/ansible-playbook playbooks/lint.yml -e model_files_revision=$(LINT_PRODUCTION_REVISION) -e '$(LINT_NO_KEY)'
	$(BIN)/ansible-playbook playbooks/lint.yml -i inventories/local

# `python -m pytest`, not the pytest script: the venv's python puts this checkout's ./collections
# on the path (scripts/collections.sh), whatever path the script's #! line names the venv by
unit: tools
	$(BIN)/python -m pytest -q -n 2 tests

# the fast tier for everyday work (no Docker, no Molecule): yamllint, ansible-lint, lint.yml on
# both inventories, pytest (unit and integration tests); docs/testing.md gives its time
check: lint unit

# Each scenario sets up what it needs, so they run alone and in any order: a scenario that finds
# no complete ml_env generation in .cache/ml-envs builds one from the wheelhouse (the rollout
# scenario on its first host alone, molecule/rollout/converge.yml); one that finds it there
# (linked into its own .cache/ml-envs/<scenario> by scripts/ml-envs-seed.sh) reuses it, as a
# second host would. The order below only lets the later ones reuse what `default` built.
MOLECULE_SCENARIOS ?= default rollout cuda_toolkit gpu_host
# the scenarios one after another, then the figures they measured
MOLECULE_RUN = ./scripts/molecule-run.sh $(1) && \
  echo "=== figures measured by the scenarios (reports/test-figures.log)" && \
  { cat reports/test-figures.log 2>/dev/null || echo "(none)"; }
molecule: setup
	$(call MOLECULE_RUN,$(MOLECULE_SCENARIOS))

# one scenario alone, e.g. `make test-scenario S=rollout` (setup included: image, wheelhouse)
test-scenario:
	@test -n "$(S)" || { echo "usage: make test-scenario S=<one of: $(MOLECULE_SCENARIOS)>"; exit 2; }
	$(MAKE) --no-print-directory molecule MOLECULE_SCENARIOS="$(S)"

# `make test`: everything CI runs, scheduled by scripts/test-phases.sh so that both cores stay busy:
# from the start `make check`, the scenarios that start no server (MOLECULE_BESIDE_CHECK) and the
# first serving scenario whole (MOLECULE_FIRST: up to its converge, then its verifier); the second
# serving scenario (MOLECULE_SECOND) once the first has converged (its ml_env generation complete).
# TEST_THEN names a target run after the first scenario (.ci/run: ci-demo). Timings are taken
# under each other's load (the script says why that is safe); `make test-scenario` runs one alone.
MOLECULE_BESIDE_CHECK ?= cuda_toolkit gpu_host
MOLECULE_FIRST ?= default
MOLECULE_SECOND ?= rollout
TEST_THEN ?=
test: disk setup
	./scripts/test-phases.sh "$(MOLECULE_BESIDE_CHECK)" $(MOLECULE_FIRST) $(MOLECULE_SECOND) $(TEST_THEN)

BENCH_HOST ?= sglang-local-1
bench: tools           ## ours vs sglang.benchmark.serving at concurrency 1, interleaved pairs, medians
	$(BIN)/python scripts/bench-compare.py \
	  --url http://$$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' $(BENCH_HOST)):30000 \
	  --exec-prefix 'docker exec $(BENCH_HOST)' --bench-url http://127.0.0.1:30000

verify-quick: tools    ## the rollout's quick gate on the demo hosts
	$(BIN)/ansible-playbook $(LOCAL) playbooks/verify.yml -e sglang_verify_quick=true

# Downloads the newest sglang wheel (no dependencies) from the production profile's indexes,
# builds its flag catalog in a temporary directory and judges every inventory's profile against
# it: flags rejected or renamed, defaults changed, pins that would move. Fails when the
# production profile would break. DRIFT_ARGS="--sglang X" pins the version; needs the venv
# (make tools). `make test` uses only the committed catalogs.
DRIFT_ARGS ?=
drift:
	$(BIN)/python scripts/sglang_drift.py $(DRIFT_ARGS)

# docs/figures.md, a generated page (the one place that states CI's time, among every other
# figure): docs/figures.yml (measured by hand) plus the newest figures of reports/test-figures.log
# (Molecule) and reports/history.jsonl (verification runs), where present.
# FIGURES_ARGS="--log '' --history ''" uses docs/figures.yml alone.
FIGURES_ARGS ?=
figures: tools         ## writes docs/figures.md
	$(BIN)/python scripts/figures-table.py --out docs/figures.md $(FIGURES_ARGS)

figures-check: tools   ## fails when docs/figures.md is stale against the same inputs (or missing)
	$(BIN)/python scripts/figures-table.py --check --out docs/figures.md $(FIGURES_ARGS)

# The collection's artifact (galaxy.yml; build_ignore leaves out the caches, tests and Molecule),
# as tests/integration/test_collection_build.py builds, installs and uses it; --force replaces
# the artifact of the same version.
collection: tools      ## reports/sglang-deploy-<version>.tar.gz
	mkdir -p reports
	$(BIN)/ansible-galaxy collection build --force --output-path reports

GATE_CHECK_RUNS ?= 10
heal-check: tools      ## a demo host's server hung for real: its watchdog takes it out, restarts it, puts it back (no Ansible)
	$(BIN)/python scripts/heal-check.py

gate-check: tools      ## verify.yml N times on the unchanged demo hosts (0 gate failures), then one host throttled (caught)
	$(BIN)/python scripts/gate-check.py --runs $(GATE_CHECK_RUNS)

clean: demo-down
	rm -rf .cache/facts

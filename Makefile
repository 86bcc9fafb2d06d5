# One entry point for people and CI. Everything expensive is cached under
# ~/.cache/nomad-zfs-csi, so a second run on the same machine is quick.
SHELL := /bin/bash
VENV := .venv/bin
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/build/collections
export PATH := $(CURDIR)/$(VENV):$(PATH)

.PHONY: setup test test-extended unit sanity lint changelog pack rules controller-lines integration integration-host integration-vm integration-vm-a integration-vm-b molecule demo vm-start vm-stop nomad-start nomad-stop bench

setup:
	bash scripts/setup.sh

## The README's test command: set-up, then every check in two lanes side by side (scripts/checks.sh):
## unit, sanity, lint, changelog, pack, rules, integration-host and controller-lines beside integration-vm and molecule.
test: setup
	bash scripts/checks.sh

## The same with the extended tier too (docs/testing.md, Tiers): every test, and both Molecule scenarios.
test-extended: setup
	NZC_EXTENDED=1 bash scripts/checks.sh

## The unit tests twice: under the venv's pytest, and under ansible-test units as a collection user's CI runs them.
unit:
	$(VENV)/pytest -q tests/unit
	bash scripts/ansible-test.sh units

sanity:
	bash scripts/ansible-test.sh sanity

## Python (ruff: format and lint), YAML (yamllint), Ansible (ansible-lint) and the modules' documentation
## (antsibull-docs: markup, and that each M(), O() and RV() names what exists); also .pre-commit-config.yaml's hooks.
lint:
	$(VENV)/ruff format --check .
	$(VENV)/ruff check .
	$(VENV)/yamllint --strict .
	$(VENV)/ansible-lint --profile production
	$(VENV)/antsibull-docs lint-collection-docs --plugin-docs build/collections/ansible_collections/nomad_zfs/csi

## The fragments of the next release, and the released history that CHANGELOG.rst is made from.
changelog:
	$(VENV)/antsibull-changelog lint
	$(VENV)/antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml

pack:
	$(VENV)/pytest -q -p no:cacheprovider tests/pack

## The controller lines above the venv's (ansible-core 2.20 and 2.21 on Python 3.13, in the Debian 13 root of
## scripts/controller-line.sh): on each, the unit tests, ansible-test sanity and units, and ansible-lint. The stack's
## site.yml runs on the newest (docs/testing.md, Controller lines).
CONTROLLER_LINE_CHECKS := pytest -q -p no:cacheprovider tests/unit; bash scripts/ansible-test.sh sanity; \
	bash scripts/ansible-test.sh units; ansible-lint --profile production
controller-lines:
	set -e; for line in $$(bash scripts/controller-line.sh lines); do \
		echo "controller line: ansible-core $$line"; \
		bash scripts/controller-line.sh run "$$line" bash -ec '$(CONTROLLER_LINE_CHECKS)'; \
	done

## The zfs_metrics role's alert rules: promtool (Debian's, tests/tools/install-promtool.sh) checks them and runs their
## unit tests, tests/rules/*.test.yml.
PROMTOOL := $${NOMAD_ZFS_CSI_CACHE:-$$HOME/.cache/nomad-zfs-csi}/bin/promtool
rules:
	$(PROMTOOL) check rules roles/zfs_metrics/files/nomad-zfs-csi.rules.yml
	$(PROMTOOL) test rules tests/rules/*.test.yml

# The integration tests that need no VM: Nomad agents on this host.
HOST_ONLY := tests/integration/acl tests/integration/host_volume tests/integration/event_source

## Every integration test, one lane after the other.
integration: integration-host integration-vm

integration-host:
	$(VENV)/pytest -q -p no:cacheprovider --durations=10 $(HOST_ONLY)

# The VM's tests in two parts of about equal time, each on a VM and a stack of its own, so that make test runs
# them side by side (scripts/checks.sh): the second part's VM has its own run dir and Nomad port, and runs Debian 13
# with OpenZFS 2.4 (trixie-backports), where the first runs Debian 12 with OpenZFS 2.3 (README, What it runs on).
# In the order of a run of all of them: the two nodes' package last. The first part's last package is the example on
# separate hosts (tests/integration/conftest.py orders it).
VM_B_TESTS := tests/integration/replication tests/integration/stack/test_csi_plugin_recovery.py \
	tests/integration/stack/test_openzfs_24.py tests/integration/stack/test_docker_plugin.py tests/integration/stack/two_nodes
VM_B_ENV := ZFSVM_RUN_DIR=$${NOMAD_ZFS_CSI_CACHE:-$$HOME/.cache/nomad-zfs-csi}/zfsvm/run-b ZFSVM_NOMAD_PORT=4656 \
	ZFSVM_RELEASE=trixie

## Every test on the VM: both parts, one after the other.
integration-vm: integration-vm-a integration-vm-b

# ZFSVM_KEEP leaves the VM up for the Molecule scenarios; `make vm-stop` stops it.
integration-vm-a:
	ZFSVM_KEEP=1 $(VENV)/pytest -q -p no:cacheprovider --durations=30 tests/integration \
		$(HOST_ONLY:%=--ignore=%) $(VM_B_TESTS:%=--ignore=%)

# Its VM stops at the end.
integration-vm-b:
	$(VM_B_ENV) $(VENV)/pytest -q -p no:cacheprovider --durations=30 $(VM_B_TESTS)

## Runs after integration, which leaves the VM up for the scenarios to reuse; storage_host's destroy stops it.
## SCENARIOS picks some (csi_plugin, storage_host); both by default.
molecule:
	bash scripts/molecule.sh $(SCENARIOS)

## The main job: the site playbook against the local default stack.
demo: setup
	bash scripts/demo.sh

vm-start:
	bash tests/zfsvm/zfsvm.sh start

vm-stop:
	bash tests/zfsvm/zfsvm.sh stop

nomad-start:
	bash scripts/nomad-dev.sh start

nomad-stop:
	bash scripts/nomad-dev.sh stop

bench: setup
	bash bench/run.sh

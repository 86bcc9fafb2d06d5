# One entry point for people and CI. Everything expensive is cached under
# ~/.cache/nomad-zfs-csi, so a second run on the same machine is quick.
SHELL := /bin/bash
VENV := .venv/bin
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/build/collections
export PATH := $(CURDIR)/$(VENV):$(PATH)

.PHONY: setup test unit sanity lint changelog pack integration molecule demo vm-start vm-stop nomad-start nomad-stop bench

setup:
	bash scripts/setup.sh

## The README's test command: set-up, then every check in order.
test: setup unit sanity lint changelog pack integration molecule

## The unit tests twice: under the venv's pytest, and under ansible-test units as a collection user's CI runs them.
unit:
	$(VENV)/pytest -q tests/unit
	bash scripts/ansible-test.sh units

sanity:
	bash scripts/ansible-test.sh sanity

## Python (ruff: format and lint), YAML (yamllint) and Ansible (ansible-lint); also .pre-commit-config.yaml's hooks.
lint:
	$(VENV)/ruff format --check .
	$(VENV)/ruff check .
	$(VENV)/yamllint --strict .
	$(VENV)/ansible-lint --profile production

## The fragments of the next release, and the released history that CHANGELOG.rst is made from.
changelog:
	$(VENV)/antsibull-changelog lint
	$(VENV)/antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml

pack:
	$(VENV)/pytest -q -p no:cacheprovider tests/pack

# ZFSVM_KEEP leaves the VM up for the Molecule scenario; `make vm-stop` stops it.
integration:
	ZFSVM_KEEP=1 $(VENV)/pytest -q -p no:cacheprovider --durations=25 tests/integration

## Runs after integration, which leaves the VM up for the scenario to reuse; its destroy stops it.
molecule:
	bash scripts/molecule.sh

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

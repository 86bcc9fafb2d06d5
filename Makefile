# One entry point for people and CI. Everything expensive is cached under
# ~/.cache/nomad-zfs-csi, so a second run on the same machine is quick.
SHELL := /bin/bash
VENV := .venv/bin
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/build/collections
export PATH := $(CURDIR)/$(VENV):$(PATH)

.PHONY: setup test unit sanity lint changelog pack integration demo vm-start vm-stop bench

setup:
	bash scripts/setup.sh

## The README's test command: set-up, then every check in order.
test: setup unit sanity lint changelog pack integration

unit:
	$(VENV)/pytest -q tests/unit

sanity:
	bash scripts/sanity.sh

lint:
	$(VENV)/ansible-lint --profile production

changelog:
	$(VENV)/antsibull-changelog lint

pack:
	$(VENV)/pytest -q -p no:cacheprovider tests/pack

integration:
	$(VENV)/pytest -q -p no:cacheprovider tests/integration

## The main job: the site playbook against the local default stack.
demo: setup
	bash scripts/demo.sh

vm-start:
	bash tests/zfsvm/zfsvm.sh start

vm-stop:
	bash tests/zfsvm/zfsvm.sh stop

bench: setup
	bash bench/run.sh

# Two commands do all set-up on a fresh clone:
#   make study   install (once), then run the default study
#   make test    install (once), then the whole test suite
# and one is the edit loop: make check, the tests that start no Snakemake and train nothing
# (docs/development.md).
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
VENV ?= .venv
PYTHON3 ?= python3
# Tools run as `python -m`: a venv's entry scripts hold its folder in their #! line, which a
# moved clone no longer has.
PY := $(VENV)/bin/python
# A venv made in another folder (the clone was moved): pip's #! line names the old one. Its
# scripts and activate would run the old path, so the install step rebuilds it.
VENV_REAL := $(realpath $(VENV))
VENV_MOVED := $(if $(VENV_REAL),$(shell test ! -f $(VENV)/bin/pip || head -n 3 $(VENV)/bin/pip | grep -qF '$(VENV_REAL)/bin/python' || echo moved))
STAMP := $(VENV)/.installed-$(shell cat envs/requirements.txt envs/requirements-dev.txt | cksum | cut -d' ' -f1)
CORES ?= all
# make test's pytest-xdist workers; tests that share the tiny study run on one of them.
TEST_WORKERS ?= 2
# pip on some machines warns about every missing local index folder; keep the log readable.
PIP_FILTER := { grep -v "is ignored: it is neither a file nor a directory" || true; }

.PHONY: install study test check lint clean-results FORCE

$(STAMP): envs/requirements.txt envs/requirements-dev.txt $(if $(VENV_MOVED),FORCE)
	$(if $(VENV_MOVED),@echo "$(VENV) was made in another folder: rebuilding it"; rm -rf $(VENV))
	test -x $(PY) || $(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r envs/requirements-dev.txt 2>&1 | $(PIP_FILTER)
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

study: install
	$(PY) -m snakemake --cores $(CORES)

test: install
	$(PY) -m pytest -q -n $(TEST_WORKERS)

check: install
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "not workflow"

lint: install
	$(PY) -m ruff check .
	$(PY) -m snakefmt --check Snakefile rules/
	$(PY) -m snakemake --lint

clean-results:
	rm -rf results logs .snakemake/metadata

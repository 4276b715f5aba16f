# Two commands do all set-up on a fresh clone:
#   make study   install (once), then run the default study
#   make test    install (once), then the whole test suite
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat envs/requirements.txt envs/requirements-dev.txt | cksum | cut -d' ' -f1)
CORES ?= all
# make test's pytest-xdist workers; tests that share the tiny study run on one of them.
TEST_WORKERS ?= 2
# pip on some machines warns about every missing local index folder; keep the log readable.
PIP_FILTER := { grep -v "is ignored: it is neither a file nor a directory" || true; }

.PHONY: install study test lint clean-results

$(STAMP): envs/requirements.txt envs/requirements-dev.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r envs/requirements-dev.txt 2>&1 | $(PIP_FILTER)
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

study: install
	$(VENV)/bin/snakemake --cores $(CORES)

test: install
	$(PY) -m pytest -q -n $(TEST_WORKERS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/snakefmt --check Snakefile rules/
	$(VENV)/bin/snakemake --lint

clean-results:
	rm -rf results logs .snakemake/metadata

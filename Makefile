# VTA in Python. Every target bootstraps .venv from the package index on first use.
#   make test                the whole test suite (what CI runs)
#   make sim [SIM=rtl]       the main job on the default configuration
#   make verilog [CONFIG=]   the Verilog of the core
#   make bench               the benchmarks under benchmarks/
SHELL := /bin/bash
PY ?= python3
VENV := .venv
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CONFIG ?= default
SIM ?= functional
JOBS ?= 2
PYTEST_ARGS ?=

.PHONY: all test sim verilog bench venv clean help
all: test

help:
	@sed -n '1,6p' Makefile

$(STAMP): pyproject.toml
	@test -x $(PYTHON) || $(PY) -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -e ".[test,rtl,plot]"
	@touch $@

venv: $(STAMP)

test: $(STAMP)
	$(PYTHON) -m pytest -n $(JOBS) $(PYTEST_ARGS)

sim: $(STAMP)
	$(PYTHON) -m vta sim --backend $(SIM) --config $(CONFIG)

verilog: $(STAMP)
	$(PYTHON) -m vta verilog --config $(CONFIG)

bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PYTHON) $$b || exit 1; done

clean:
	rm -rf build sim_build .pytest_cache

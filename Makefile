# VTA in Python. Every target bootstraps .venv from the package index on first use.
#   make test                the whole test suite (what CI runs)
#   make sim [SIM=rtl]       the main job on the default configuration
#   make verilog [CONFIG=]   the Verilog of the core
#   make bench               the benchmarks under benchmarks/
#   make sweep [SPACE=]      the design-space sweep (designspace/spaces/small.toml) -> build/sweep
#   make bitstream [BOARD= CONFIG= MEMORY=onchip|sdram SEEDS=2]  a bitstream and its report in bitstreams/
#   make fuzz [SCALE=20]     a long fuzz campaign of every command (lists all failures)
SHELL := /bin/bash
PY ?= python3
VENV := .venv
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CONFIG ?= default
BOARD ?= ulx3s-85f
MEMORY ?= onchip
# two nextpnr seeds by default: ecp5-large meets its 100 MHz on seed 2, not on seed 1 (README)
SEEDS ?= 2
SIM ?= functional
JOBS ?= 2
PYTEST_ARGS ?=
SPACE ?= designspace/spaces/small.toml
SWEEP_OUT ?= build/sweep

SCALE ?= 20

.PHONY: all test sim verilog bench sweep bitstream fuzz venv clean help
all: test

help:
	@sed -n '1,8p' Makefile

$(STAMP): pyproject.toml
	@test -x $(PYTHON) || $(PY) -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -e ".[test,rtl,plot,sweep,fpga,board,sdram,onnx,torch,digits]"
	@touch $@

venv: $(STAMP)

test: $(STAMP)
	$(PYTHON) -m pytest -n $(JOBS) $(PYTEST_ARGS)

sim: $(STAMP)
	$(PYTHON) -m vta sim --backend $(SIM) --config $(CONFIG)

verilog: $(STAMP)
	$(PYTHON) -m vta verilog --config $(CONFIG)

sweep: $(STAMP)
	mkdir -p $(dir $(SWEEP_OUT))
	$(PYTHON) -m vta sweep --space $(SPACE) --out $(SWEEP_OUT) --jobs $(JOBS)

# CONFIG defaults to the core's default, which does not fit an ECP5: ecp5-small or ecp5-large.
bitstream: $(STAMP)
	$(PYTHON) -m vta bitstream --board $(BOARD) --config $(if $(filter default,$(CONFIG)),ecp5-large,$(CONFIG)) --memory $(MEMORY) --seeds $(SEEDS)

bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PYTHON) $$b || exit 1; done

fuzz: $(STAMP)
	$(PYTHON) -m tests.fuzz.campaign --scale $(SCALE)

clean:
	rm -rf build sim_build .pytest_cache

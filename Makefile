# p4cc — see README.md. Everything runs as root on Linux.
#   make run    set up (first time), run dctcp-queue, print where the report is
#   make test   set up (first time), run every test suite this machine can run

SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
P4CC  := $(VENV)/bin/p4cc
EXPERIMENT ?= dctcp-queue
TARGET ?= auto
# an arm the fidelity monitor finds unfaithful runs again, up to this many times
RETRY_VOID ?= 2
ARGS ?=

.PHONY: all setup build run test test-unit test-rust test-python test-ptf \
        test-integration p4 p4-check p4-tna p4-tna-check ptf bench sim-pgo clean help mininet

all: help

help:
	@echo "make run          run $(EXPERIMENT) end to end on the best target (TARGET=auto|embedded|bmv2)"
	@echo "make test         all tests: p4 output freshness, Rust, Python, PTF, integration"
	@echo "make mininet      a programmed P4 network at Mininet's prompt (TOPOLOGY=two_hosts)"
	@echo "make setup        install what p4cc needs (Debian packages, .venv, Rust builds)"
	@echo "make p4           recompile p4src/ with p4c (needs p4c-bm2-ss)"
	@echo "make p4-tna       compile p4src/tna/ with bf-p4c for tofino and tofino2 (docs/tofino.md)"
	@echo "make ptf [TARGET=embedded|bmv2|tofino]  the PTF data-plane suite (default: every target present)"
	@echo "make bench        benchmarks that print figures (switch, hosts, simulator, sweeps)"
	@echo "make sim-pgo      rebuild the simulator profile-guided (needs rustc's llvm-profdata)"
	@echo "make clean        remove anything a killed run left behind (netns, links, processes)"

setup:
	@bash scripts/setup.sh

build: setup

run: setup
	$(P4CC) run $(EXPERIMENT) --target $(TARGET) --retry-void $(RETRY_VOID) $(ARGS)

TOPOLOGY ?= two_hosts
mininet: setup
	$(P4CC) mininet $(TOPOLOGY) --target $(TARGET)

p4:
	@python3 tools/p4build.py build

p4-check:
	@python3 tools/p4build.py check

# bf-p4c's output goes to build/tofino/CHIP/; the P4Info to p4src/build/tofino/.
p4-tna:
	@nice python3 tools/p4build.py tna-build

p4-tna-check:
	@python3 tools/p4build.py tna-check

test: setup
	@bash scripts/test.sh

# TARGET=auto runs every target present; a target not installed is skipped
# with the reason.
ptf: setup
	@if [ "$(TARGET)" = auto ]; then \
	  $(PY) ptf-tests/run.py --target embedded && \
	  $(PY) ptf-tests/run.py --target bmv2 --skip-if-absent && \
	  $(PY) ptf-tests/run.py --target tofino --skip-if-absent; \
	else \
	  $(PY) ptf-tests/run.py --target $(TARGET) --skip-if-absent; \
	fi

# A profile-guided build of the simulator (docs/simulator.md); `make setup`
# keeps using its profile until sim/target/pgo is removed.
sim-pgo: setup
	@bash scripts/sim-pgo.sh

bench: setup
	P4CC_PYTHON=$(PWD)/$(PY) bash switch/bench/bench.sh
	bash hosts/bench/veth_bench.sh
	$(PY) sim/bench/bench.py
	$(PY) sim/bench/fabric_bench.py
	$(PY) experiments/bench/fidelity_bench.py
	$(PY) experiments/bench/sweep_bench.py

clean:
	@if [ -x $(P4CC) ]; then $(P4CC) clean; else echo "nothing to clean (p4cc not set up)"; fi

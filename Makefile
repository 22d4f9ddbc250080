# Two entry points for a fresh machine (see README):
#   make demo   - set up .venv (only what the demo needs) and run the simulated end-to-end demo
#   make test   - set up .venv (everything the tests need, Debian packages included) and run the suite
# Each does all of its own set-up; .ci/run only calls `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install --quiet --disable-pip-version-check
DEMO_STAMP := $(VENV)/.installed-demo
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test setup system-packages bench docs-check mutation clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	@echo "setting up $(VENV) for the demo (numpy, scipy, numba, pyzmq, mcap, mujoco, matplotlib)"
	$(PIP) -e '.[sim,plot]'
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	@echo "setting up $(VENV) for the tests (the demo's packages plus the hardware peers, pinocchio, ray, playwright)"
	$(PIP) -e '.[test,sim,plot]'
	touch $@ $(DEMO_STAMP)

# Debian packages the tests drive (Chromium, systemd-analyze): installed where the host allows it
# (root with apt-get); elsewhere one line says what to install and why.
system-packages:
	@bash tools/setup/system_packages.sh test

setup: $(TEST_STAMP) system-packages

demo: $(DEMO_STAMP)
	$(BIN)/robodyn demo

# Two test processes (at most one per core): tests/conftest.py keeps the real-time tests together in
# one of them; the other works through the rest beside it.
test: $(TEST_STAMP) system-packages
	$(BIN)/python -m pytest -q --durations=20 -n auto --maxprocesses 2 --dist loadscope --no-loadscope-reorder

bench: $(TEST_STAMP)
	$(PIP) -e '.[bench]'
	$(BIN)/python bench/regressor/run.py

# Mutation testing of the math modules (tools/mutation/modules.toml; scores in docs/testing.md).
# Not part of `make test` or CI. One mutant at a time: the source file is mutated in place, so
# do not edit the tree while it runs. MUTATION_ARGS="--sample 40 --module calibration/ik.py" etc.
MUTATION_ARGS ?=
mutation: $(TEST_STAMP)
	$(PIP) -e '.[mutation]'
	$(BIN)/python tools/mutation/run.py $(MUTATION_ARGS)

# Rerun the benchmarks that take a few minutes and report figures in README.md and docs/*.md whose
# command now prints something else (not in CI: it takes minutes; the fast check is tests/docs).
docs-check: $(TEST_STAMP)
	$(BIN)/python bench/docs_figures.py --rerun

clean:
	rm -rf $(VENV) build *.egg-info

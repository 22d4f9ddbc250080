# Two entry points for a fresh machine (see README):
#   make demo   - set up .venv and run the main job
#   make test   - set up .venv and run the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test setup bench docs-check mutation clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,sim,plot]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/robodyn demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python bench/regressor/run.py

# Mutation testing of the math modules (tools/mutation/modules.toml; scores in docs/testing.md).
# Not part of `make test` or CI. One mutant at a time: the source file is mutated in place, so
# do not edit the tree while it runs. MUTATION_ARGS="--sample 40 --module calibration/ik.py" etc.
MUTATION_ARGS ?=
mutation: $(STAMP)
	$(BIN)/pip install --quiet -e '.[mutation]'
	$(BIN)/python tools/mutation/run.py $(MUTATION_ARGS)

# Rerun the benchmarks that take a few minutes and report figures in README.md and docs/*.md whose
# command now prints something else (not in CI: it takes minutes; the fast check is tests/docs).
docs-check: $(STAMP)
	$(BIN)/python bench/docs_figures.py --rerun

clean:
	rm -rf $(VENV) build *.egg-info

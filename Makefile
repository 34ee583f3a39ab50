# Every target creates .venv on first use, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint format typecheck test-real envtest bench docs clean

$(STAMP): setup.cfg setup.py pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,docs]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m samples.demo

test: $(STAMP) lint typecheck
	PYINFORMERS_CACHE_MUTATION_DETECTOR=1 $(PY) -m pytest $(PYTEST_ARGS)

# ruff's formatter and linter, configured in pyproject.toml.
lint: $(STAMP)
	$(VENV)/bin/ruff format --check --quiet .
	$(VENV)/bin/ruff check --quiet .

format: $(STAMP)
	$(VENV)/bin/ruff format --quiet .
	$(VENV)/bin/ruff check --quiet --fix .

# Zero errors under setup.cfg's [mypy] flags (strict, minus two; see there).
typecheck: $(STAMP)
	$(PY) -m mypy

# The real control plane (etcd, kube-apiserver, kube-controller-manager) built from Go
# modules into a per-user cache; slow the first time, "up to date" afterwards.
envtest:
	hack/envtest/build.sh

# The tests that use the k8s fixture, against the real control plane.
test-real: $(STAMP) envtest
	PYINFORMERS_CACHE_MUTATION_DETECTOR=1 $(PY) -m pytest --k8s-server=real -m k8s $(PYTEST_ARGS)

# make bench [BENCH=bench_pipeline] [BENCH_QUICK=1]: runs the benchmarks, writes benchmarks/report/README.md
bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	BENCH_QUICK=$(BENCH_QUICK) $(PY) -m benchmarks $(BENCH)

docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

clean:
	rm -rf $(VENV) docs/_build build *.egg-info .pytest_cache .hypothesis

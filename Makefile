# perflake: everything a fresh machine needs is behind `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,s3]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) docs/demo.py

# -n: the test files spread over the cores (pytest-xdist; at most 4 workers: each may hold a lake, a DuckDB and
# a moto server), one file's tests on one worker (--dist loadfile: module fixtures are built once)
test: $(STAMP)
	$(PY) -m pytest -q -n auto --maxprocesses 4 --dist loadfile

# ruff (Python: pyproject [tool.ruff]) and sqlfluff (sql/: .sqlfluff); .ci/run runs this before the tests
lint: $(STAMP)
	$(VENV)/bin/ruff check --no-cache .
	$(VENV)/bin/sqlfluff lint sql

bench: $(STAMP)
	bash bench/run.sh

clean:
	rm -rf $(VENV) demo-lake demo-data bench/work build *.egg-info

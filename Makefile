# perflake: everything a fresh machine needs is behind `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) docs/demo.py

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	bash bench/run.sh

clean:
	rm -rf $(VENV) demo-lake demo-data bench/work build *.egg-info

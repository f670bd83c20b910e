# The README's two commands: `make book` and `make test`. Each creates .venv on a fresh
# machine from requirements.txt and installs the package into it.
SHELL := /bin/bash
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv book test unit clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

venv: $(STAMP)

book: $(STAMP)
	$(VENV)/bin/jupyter-book build . --builder html -W -n --keep-going

unit: $(STAMP)
	$(PY) -m pytest -q -m "not browser"

test: unit book

clean:
	rm -rf _build

# The README's two commands: `make book` and `make test`. Each creates .venv on a fresh
# machine from requirements.txt and installs the package into it.
#
#   make book     build _build/html, every page executed; warnings and failing cells fail it
#   make test     unit tests -> make book -> browser checks of the built HTML (what CI runs)
#   make unit     pytest -m "not browser": every unit test, slow ones included, one worker
#                 per core (pytest-xdist; PYTEST_JOBS=0 runs them in this process)
#   make quick    pytest -x -m "not slow and not browser": the edit loop (under a minute);
#                 skips what takes more than about 3 s a test (training at the book's size,
#                 subprocesses, Jupyter kernels), which make unit runs
#   make browser  browser checks only, against an existing _build/html
SHELL := /bin/bash
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# Browser checks: Debian's chromium (Playwright's own browser download is not used) and a
# local copy of MathJax 3, served to the browser in place of the CDN (tests/browser).
CHROMIUM      ?= /usr/bin/chromium
MATHJAX_WHEEL := $(VENV)/vendor/sphinx_mathjax_offline-0.0.2-py3-none-any.whl
SUDO          := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: venv book test unit quick browser browser-deps clean assignments bench bench-book

# JAX's persistent compilation cache, shared by the unit tests (every xdist worker and the
# subprocesses they start) and the book's kernels: a program compiled once is read back by
# every later process instead of being compiled again (XLA compilation is most of the time
# of a test or a chapter on this CPU). Entries are keyed on the program, the backend and
# the JAX version, so a change to the library cannot be served a stale program.
# `make clean` removes it; set JAX_COMPILATION_CACHE_DIR= (empty) to run without it.
export JAX_COMPILATION_CACHE_DIR ?= $(CURDIR)/_build/.jax-cache
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS ?= 0
export JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES ?= 0
# A size limit turns on JAX's file lock (filelock): no process reads a half-written entry.
export JAX_COMPILATION_CACHE_MAX_SIZE ?= 4000000000

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

venv: $(STAMP)

# scripts/book_cache.py clears the execution cache (and pages built from it) whenever
# attnclust/**/*.py, requirements.txt or pyproject.toml changed since the last build.
book: $(STAMP)
	$(PY) scripts/book_cache.py
	$(VENV)/bin/jupyter-book build . --builder html -W -n --keep-going

# pytest-xdist: one worker per core; --dist loadfile keeps each test file in one worker, so
# its module fixtures and the per-process caches (compiled programs, sweeps) are built once.
PYTEST_JOBS ?= auto
XDIST        = -n $(PYTEST_JOBS) --dist loadfile

unit: $(STAMP)
	$(PY) -m pytest -q -m "not browser" $(XDIST)

quick: $(STAMP)
	$(PY) -m pytest -q -x -m "not slow and not browser" $(XDIST)

$(CHROMIUM):
	@echo "Installing Debian's chromium for the browser checks (apt-get)..."
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
	test -x $(CHROMIUM)

$(MATHJAX_WHEEL): | $(STAMP)
	$(PY) -m pip download -q --no-deps sphinx-mathjax-offline==0.0.2 -d $(VENV)/vendor

browser-deps: $(CHROMIUM) $(MATHJAX_WHEEL)

browser: $(STAMP) browser-deps
	$(PY) -m pytest -q -m browser tests/browser

# Sequential on purpose (also under make -j): the browser checks need the built book.
test: $(STAMP)
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory book
	$(MAKE) --no-print-directory browser

clean:
	rm -rf _build

# Student and instructor notebooks of every chapter with exercises, and the autograder
# material (chapters/instructors.md). Grade with:
#   .venv/bin/python -m attnclust.assignments grade SUBMISSIONS --chapter STEM --out grades.csv
ASSIGNMENTS_OUT ?= _build/assignments
assignments: $(STAMP)
	$(PY) -m attnclust.assignments build --out $(ASSIGNMENTS_OUT)

# Benchmarks (not part of make test): one run prints the goal table and writes
# benchmarks/results.json, which the Performance page shows. Bench-only requirements
# (PyTorch CPU) are installed into the same .venv from benchmarks/requirements.txt.
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): benchmarks/requirements.txt | $(STAMP)
	$(PY) -m pip install -q -r benchmarks/requirements.txt
	touch $(BENCH_STAMP)

bench: $(STAMP) $(BENCH_STAMP)
	$(PY) benchmarks/run.py

# Clean book build in a fresh copy of HEAD, then a cached rebuild: writes benchmarks/book.json
# and puts it into the table of benchmarks/results.json (make bench reads it too).
bench-book: $(STAMP)
	$(PY) benchmarks/book.py
	$(PY) benchmarks/run.py --refresh-book

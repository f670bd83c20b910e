# The README's two commands: `make book` and `make test`. Each creates .venv on a fresh
# machine from requirements.txt and installs the package into it.
#
#   make book     build _build/html, every page executed; warnings and failing cells fail it
#   make test     make unit -> make integration -> make book -> browser checks of the built
#                 HTML (what CI runs: every test)
#   make unit     the library's unit and property tests (goal: 4 minutes on 2 cores from a
#                 cold compilation cache): pytest -m "not browser and not kernel and not
#                 subprocess and not pipeline", slow ones included, one worker per core
#                 (pytest-xdist; PYTEST_JOBS=0 runs them in this process)
#   make integration  what starts other processes: Jupyter kernels (the autograder's sandboxed
#                 grading, test books), multi-process JAX, fresh interpreters; and what runs a
#                 chapter's experiment, figures or explorer end to end at its budget (pytest -m
#                 "(kernel or subprocess or pipeline) and not browser"); installs Debian's
#                 bubblewrap first if missing (the autograder's sandbox)
#   make quick    pytest -x -m "not slow" and none of the above: the edit loop (under a
#                 minute); skips what takes more than about 3 s a test (training at the
#                 book's size), which make unit runs
#   make browser  browser checks only, against an existing _build/html
#   make lab      JupyterLab with the chapters opening as notebooks (LAB_FLAGS=--no-browser ...)
SHELL := /bin/bash
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# Browser checks: Debian's chromium (Playwright's own browser download is not used). The book
# serves its own MathJax (sphinx-mathjax-offline, in requirements.txt).
CHROMIUM      ?= /usr/bin/chromium
SUDO          := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# The autograder runs each submission in a sandbox made by Debian's bubblewrap (user, PID,
# mount and network namespaces; attnclust/assignments/sandbox.py); its tests need it.
BWRAP ?= /usr/bin/bwrap

.PHONY: venv lab book test unit integration quick browser browser-deps sandbox-deps clean assignments bench bench-book

# JAX's persistent compilation cache, shared by the unit tests (every xdist worker and the
# subprocesses they start) and the book's kernels: a program compiled once is read back by
# every later process instead of being compiled again (XLA compilation is most of the time
# of a test or a chapter on this CPU). Entries are keyed on the program, the backend and
# the JAX version, so a change to the library cannot be served a stale program.
# `make clean` removes it; set JAX_COMPILATION_CACHE_DIR= (empty) to run without it.
export JAX_COMPILATION_CACHE_DIR ?= $(CURDIR)/_build/.jax-cache
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS ?= 0
export JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES ?= 0
# No size limit (JAX's default): with one, JAX takes a file lock and, before every write,
# reads the last-use file of every entry to choose what to evict, which cost about 65 ms a
# write at 2700 entries (a cold make unit writes that many; measured 2026-12-01).
export JAX_COMPILATION_CACHE_MAX_SIZE ?= -1

# Python writes bytecode caches (__pycache__/, ignored by git) even where the environment
# sets PYTHONDONTWRITEBYTECODE: without them every pytest process parses and rewrites the
# assertions of every test file again and jaxtyping's hook transforms every module of the
# package again. A warm make quick took 43 s with the variable set and 35 s without
# (2026-12-02, this 2-core machine).
unexport PYTHONDONTWRITEBYTECODE

# The tests and the book's kernels compile with LLVM's optimisation level 1 instead of XLA's
# default 2: compiling is most of their time on this CPU, and level 1 compiles a training
# program about 3 times faster for runs about 1.6 times slower, with the same numbers
# (tests/conftest.py gives the measurements). make bench-book times the build with it, as
# make book runs it; make bench (the library's speed) and make lab keep the default.
FAST_COMPILE := XLA_FLAGS="$(strip $(XLA_FLAGS) --xla_backend_optimization_level=1)"
# Truncated entries of that cache (a process killed mid-write) make every later read of them
# warn on stderr, which fails the book: scripts/jax_cache.py deletes them first
# (pytest does the same through tests/conftest.py, so the test targets need no call).
REPAIR_CACHE = $(PY) scripts/jax_cache.py

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

# JupyterLab's settings for this environment: a chapter's MyST file opens as a notebook
# (jupytext), not in the text editor (binder/postBuild installs the same file on Binder).
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json
$(LAB_SETTINGS): jupyter/overrides.json | $(STAMP)
	install -D -m 644 $< $@

venv: $(STAMP) $(LAB_SETTINGS)

# JupyterLab on this machine, with the chapters as notebooks and the explorers working.
lab: venv
	$(VENV)/bin/jupyter lab $(LAB_FLAGS)

# scripts/book_cache.py clears the execution cache (and pages built from it) whenever
# attnclust/**/*.py, requirements.txt or pyproject.toml changed since the last build.
# Then jupyter-cache executes the notebook pages missing from that cache side by side, one a
# core (its local-parallel executor; it reads a page with MyST-NB's own reader, myst_nb_md,
# so the build finds each one in the cache), with _config.yml's execute.timeout. A page that
# fails there is executed again by jupyter-book, which reports the error and fails. (jcache
# asks before it creates a cache folder: mkdir creates it first.)
BOOK_CACHE     := _build/.jupyter_cache
NOTEBOOK_PAGES  = $(sort $(shell grep -l '^kernelspec:' chapters/*.md))
book: $(STAMP)
	$(PY) scripts/book_cache.py
	$(REPAIR_CACHE)
	mkdir -p $(BOOK_CACHE)
	$(VENV)/bin/jcache notebook -p $(BOOK_CACHE) add --reader myst_nb_md $(NOTEBOOK_PAGES)
	$(FAST_COMPILE) $(VENV)/bin/jcache project -p $(BOOK_CACHE) execute --executor local-parallel --timeout 600
	$(FAST_COMPILE) $(VENV)/bin/jupyter-book build . --builder html -W -n --keep-going

# pytest-xdist: one worker per core; --dist loadfile keeps each test file in one worker, so
# its module fixtures and the per-process caches (compiled programs, sweeps) are built once.
PYTEST_JOBS ?= auto
XDIST        = -n $(PYTEST_JOBS) --dist loadfile

# The markers (pyproject.toml) split the tests: every test is in exactly one of unit,
# integration and browser; quick is the part of unit that is not slow.
UNIT_TESTS        := not browser and not kernel and not subprocess and not pipeline
INTEGRATION_TESTS := (kernel or subprocess or pipeline) and not browser

unit: $(STAMP) $(LAB_SETTINGS)
	$(FAST_COMPILE) $(PY) -m pytest -q -m "$(UNIT_TESTS)" $(XDIST)

integration: $(STAMP) $(LAB_SETTINGS) $(BWRAP)
	$(FAST_COMPILE) $(PY) -m pytest -q -m "$(INTEGRATION_TESTS)" $(XDIST)

quick: $(STAMP)
	$(FAST_COMPILE) $(PY) -m pytest -q -x -m "not slow and $(UNIT_TESTS)" $(XDIST)

$(CHROMIUM):
	@echo "Installing Debian's chromium for the browser checks (apt-get)..."
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
	test -x $(CHROMIUM)

$(BWRAP):
	@echo "Installing Debian's bubblewrap for the autograder's sandboxes (apt-get)..."
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
	test -x $(BWRAP)

sandbox-deps: $(BWRAP)

browser-deps: $(CHROMIUM)

browser: $(STAMP) $(LAB_SETTINGS) browser-deps
	$(FAST_COMPILE) $(PY) -m pytest -q -m browser tests/browser

# Sequential on purpose (also under make -j): the browser checks need the built book.
test: $(STAMP)
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory integration
	$(MAKE) --no-print-directory book
	$(MAKE) --no-print-directory browser

clean:
	rm -rf _build

# Student and instructor notebooks of every chapter with exercises, and the autograder
# material (chapters/instructors.md); ASSIGNMENTS_FLAGS=--hidden-checks for graded use (the
# student edition says what each check verifies, without its code). Grade with (in a
# bubblewrap sandbox: make sandbox-deps installs it):
#   .venv/bin/python -m attnclust.assignments grade SUBMISSIONS --chapter STEM --out grades.csv
ASSIGNMENTS_OUT   ?= _build/assignments
ASSIGNMENTS_FLAGS ?=
assignments: $(STAMP)
	$(PY) -m attnclust.assignments build --out $(ASSIGNMENTS_OUT) $(ASSIGNMENTS_FLAGS)

# Benchmarks (not part of make test): one run prints the goal table and writes
# benchmarks/results.json, which the Performance page shows. Bench-only requirements
# (PyTorch CPU) are installed into the same .venv from benchmarks/requirements.txt.
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): benchmarks/requirements.txt | $(STAMP)
	$(PY) -m pip install -q -r benchmarks/requirements.txt
	touch $(BENCH_STAMP)

# bubblewrap: the Autograder section times grading in its sandbox
bench: $(STAMP) $(BENCH_STAMP) $(BWRAP)
	bash benchmarks/kernel/build.sh $(PY) || echo "benchmarks/kernel not built (g++ with OpenMP needed): its step is not timed"
	$(PY) benchmarks/run.py

# Clean book build (make book) in a fresh copy of HEAD, then a cached rebuild: writes benchmarks/book.json
# and puts it into the table of benchmarks/results.json (make bench reads it too).
bench-book: $(STAMP)
	$(PY) benchmarks/book.py
	$(PY) benchmarks/run.py --refresh-book

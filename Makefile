# The README's two commands: `make book` and `make test`. Each creates .venv on a fresh
# machine from requirements.txt and installs the package into it.
#
#   make book     build _build/html, every page executed; warnings and failing cells fail it
#   make test     make unit -> make integration -> make book -> browser checks of the built
#                 HTML (what CI runs: every test)
#   make unit     the library's unit and property tests (goal: 4 minutes on 2 cores from a
#                 cold compilation cache): pytest -m "not integration and not browser", slow
#                 ones included, one worker per core (pytest-xdist; PYTEST_JOBS=0 runs them
#                 in this process)
#   make integration  pytest -m integration: what starts other processes (Jupyter kernels:
#                 the autograder's sandboxed grading, test books; multi-process JAX, fresh
#                 interpreters) and what runs a chapter's experiment, figures or explorer end
#                 to end at its budget; installs Debian's bubblewrap first if missing (the
#                 autograder's sandbox)
#   make quick    make unit without the tests marked slow (pytest -x, the unmarked tests): the
#                 edit loop (under a minute); skips what takes more than about 3 s a test
#                 (training at the book's size), which make unit runs
#   make browser  browser checks only, against an existing _build/html
#   make lab      JupyterLab over the chapters' reader editions, rendered, explorers live
#                 (LAB_FLAGS=--no-browser ...)
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

.PHONY: venv lab book book-student test unit integration quick browser browser-deps sandbox-deps clean assignments bench bench-book replicate

# JAX's and XLA's settings live in scripts/jax_env.py alone (why there, and what they are:
# its docstring): the compilation cache in _build/.jax-cache that the tests, the book's
# kernels, make lab and make bench share, and LLVM's optimisation level 1 (FAST_COMPILE) for
# the tests, make book and make bench-book; make bench and make lab keep XLA's default.
# The tests read them in tests/conftest.py, so the test targets pass nothing; the other
# targets run their command through the script, which also deletes the cache's broken
# entries first (scripts/jax_cache.py). JAX_COMPILATION_CACHE_DIR= (empty) runs without the
# cache; an XLA_FLAGS naming --xla_backend_optimization_level keeps its level.
JAX_ENV      := $(PY) scripts/jax_env.py
FAST_COMPILE := $(JAX_ENV) --fast-compile

# Python writes bytecode caches (__pycache__/, ignored by git) even where the environment
# sets PYTHONDONTWRITEBYTECODE: without them every pytest process parses and rewrites the
# assertions of every test file again and jaxtyping's hook transforms every module of the
# package again, which makes a warm make quick noticeably slower.
unexport PYTHONDONTWRITEBYTECODE

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

# JupyterLab on this machine, over the chapters' reader editions: the notebooks the built
# book offers for download (_ext/reader_notebooks.py), in Jupyter Markdown with the numbers
# the build computed, and the explorers live (attnclust.assignments.live_widget_source).
# They are copied into lab/ (ignored by git, kept by make clean) the first time: running and
# saving them there changes no chapter source, and a notebook saved there is never
# overwritten; delete it for a fresh copy after a rebuild. The book is built first if it is
# missing (make book: about 5 minutes on 2 cores from a fresh clone).
LAB_DIR      := lab
READER_NBS   := _build/html/_sources/chapters
lab: venv
	test -d $(READER_NBS) || $(MAKE) --no-print-directory book
	mkdir -p $(LAB_DIR)/chapters
	cp -n $(READER_NBS)/*.ipynb $(LAB_DIR)/chapters/
	$(JAX_ENV) $(VENV)/bin/jupyter lab --ServerApp.root_dir=$(LAB_DIR) $(LAB_FLAGS)

# scripts/book_cache.py clears the execution cache (and pages built from it) whenever
# attnclust/**/*.py, requirements.txt or pyproject.toml changed since the last build.
# Then jupyter-cache executes the notebook pages missing from that cache side by side, one a
# core (its local-parallel executor; it reads a page with MyST-NB's own reader, myst_nb_md,
# so the build finds each one in the cache), with _config.yml's execute.timeout. A page that
# fails there is executed again by jupyter-book, which reports the error and fails. (jcache
# asks before it creates a cache folder: mkdir creates it first.)
BOOK_CACHE     := _build/.jupyter_cache
# Largest first: jupyter-cache runs the pages in the order they were added, and a chapter's
# length is a fair guess at its running time, so the longest page does not start last.
NOTEBOOK_PAGES  = $(shell ls -S $$(grep -l '^kernelspec:' chapters/*.md))
book: $(STAMP)
	$(PY) scripts/book_cache.py
	mkdir -p $(BOOK_CACHE)
	$(VENV)/bin/jcache notebook -p $(BOOK_CACHE) add --reader myst_nb_md $(NOTEBOOK_PAGES)
	$(FAST_COMPILE) $(VENV)/bin/jcache project -p $(BOOK_CACHE) execute --executor local-parallel --timeout 600
	$(FAST_COMPILE) $(VENV)/bin/jupyter-book build . --builder html -W -n --keep-going

# pytest-xdist: one worker per core; --dist loadfile keeps each test file in one worker, so
# its module fixtures and the per-process caches (compiled programs, sweeps) are built once.
PYTEST_JOBS ?= auto
XDIST        = -n $(PYTEST_JOBS) --dist loadfile

# The markers (pyproject.toml; at most one a test, tests/conftest.py enforces it) split the
# tests: every test is in exactly one of unit, integration and browser; quick is the part of
# unit that is not slow (the unmarked tests).
UNIT_TESTS  := not integration and not browser
QUICK_TESTS := not slow and $(UNIT_TESTS)

unit: $(STAMP) $(LAB_SETTINGS)
	$(PY) -m pytest -q -m "$(UNIT_TESTS)" $(XDIST)

integration: $(STAMP) $(LAB_SETTINGS) $(BWRAP)
	$(PY) -m pytest -q -m integration $(XDIST)

quick: $(STAMP)
	$(PY) -m pytest -q -x -m "$(QUICK_TESTS)" $(XDIST)

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
	$(PY) -m pytest -q -m browser tests/browser

# Sequential on purpose (also under make -j): the browser checks need the built book.
test: $(STAMP)
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory integration
	$(MAKE) --no-print-directory book
	$(MAKE) --no-print-directory browser

clean:
	rm -rf _build

# A copy of the built book without the solutions, for students: _build/student (every
# solution block, the page sources and the notebook downloads removed from a copy of
# _build/html; attnclust/assignments/student_html.py). The book is built first if missing.
book-student: $(STAMP)
	test -f _build/html/index.html || $(MAKE) --no-print-directory book
	$(PY) -m attnclust.assignments student-html --html _build/html --out _build/student

# Student, practice and instructor notebooks of every chapter with exercises, and the
# autograder material (chapters/grading.md): the student edition, for graded work, says
# what each check verifies without its code (ASSIGNMENTS_FLAGS=--visible-checks shows the
# checks); the practice edition, for self-study, shows them. Their text shows the
# numbers and claim sentences of the book's build (attnclust.assignments.built), so the book
# is built first if it is missing; a chapter changed since the build is refused until
# make book runs again. Grade with (in a bubblewrap sandbox: make sandbox-deps installs it):
#   .venv/bin/python -m attnclust.assignments grade SUBMISSIONS --chapter STEM --out grades.csv
ASSIGNMENTS_OUT   ?= _build/assignments
ASSIGNMENTS_FLAGS ?=
assignments: $(STAMP)
	test -d _build/jupyter_execute/chapters || $(MAKE) --no-print-directory book
	$(JAX_ENV) $(PY) -m attnclust.assignments build --out $(ASSIGNMENTS_OUT) $(ASSIGNMENTS_FLAGS)

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
	$(JAX_ENV) $(PY) benchmarks/run.py

# make replicate SEED=N (not part of make test): every claim's evidence again under the master
# seed N (attnclust.book.seeds re-keys every random stream of the book): every committed
# experiment at the book's size, about an hour on 2 cores, into _build/replicate/seed-N, then
# every chapter that states claims, each claim recording its verdict instead of failing.
# Writes replications/seed-N.json, which the Claims page shows (scripts/replicate.py).
replicate: $(STAMP)
	@case "$(SEED)" in ''|*[!0-9]*|0) echo "usage: make replicate SEED=N, N an integer >= 1 (0 is the book's own seed)" >&2; exit 2;; esac
	$(JAX_ENV) $(PY) scripts/replicate.py --seed $(SEED)

# Clean book build (make book) in a fresh copy of HEAD, then a cached rebuild: writes benchmarks/book.json
# and puts it into the table of benchmarks/results.json (make bench reads it too).
bench-book: $(STAMP)
	$(PY) benchmarks/book.py
	$(JAX_ENV) $(PY) benchmarks/run.py --refresh-book

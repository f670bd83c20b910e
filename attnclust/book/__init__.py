"""The book's machinery: what the chapters of the book run, beside the science core.

- ``experiments``: the computations behind each chapter's figures and claims, at the book's
  sizes, and the committed experiments too large for its build;
- ``results``: the committed results files of those experiments (package data) with their
  provenance and freshness check;
- ``figures``: every figure of the book by name (``python -m attnclust reproduce``);
- ``widgets``: the chapters' interactive explorers (ipywidgets) and their static twins;
- ``claims``: the claims ledger that binds each sentence of a result to its evidence;
- ``sweeps``: training runs over seeds at the book's budgets; ``benchmark``: every
  clustering method scored on the same prompts; ``perf``: the Performance page's tables.

Nothing in the science core (``attnclust``) imports from here. The figures need the
``[figures]`` extra (matplotlib), the explorers ``[explorers]``; ``results`` and the
experiments need only the core.
"""

from pathlib import Path as _Path


def repository_root(needs: str) -> _Path:
    """The root of the book's repository (the folder that holds ``_toc.yml``): the current
    folder or one above it, else the clone this package is installed from (``make venv``
    installs it editable), for the pages "For instructors" and "Performance", which read
    the repository's chapters and benchmark results. ``needs`` says what for, in the error
    raised where neither is a clone (a package installed from PyPI or a wheel, Colab)."""
    for folder in [_Path.cwd(), *_Path.cwd().parents, _Path(__file__).resolve().parents[2]]:
        if (folder / "_toc.yml").is_file() and (folder / "chapters").is_dir():
            return folder
    raise FileNotFoundError(
        f"this page reads {needs} from a clone of the book's repository, and neither the "
        f"current folder ({_Path.cwd()}) nor the installed attnclust package is in one: run "
        "it from a clone (make lab)")

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

"""The sizes the book's experiments, figures and training budgets run at: one vocabulary,
one check.

- ``"test"``: tiny, every code path once, for the test suite (seconds);
- ``"small"``: the book's build on a 2-core CPU (what the chapters show when they compute);
- ``"full"``: the committed runs and the paper's scale (minutes to hours on a CPU; an
  accelerator for the largest).

An experiment keeps its own numbers for each size in a table keyed by these names (its
``SIZES``); :func:`pick` reads the table and refuses a name it does not have, naming those
it has. The training budgets (``attnclust.book.sweeps.BUDGETS``) use the same names and add
``"long"``, the committed long-budget run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnclust import _validate as v

SIZES: dict[str, str] = {
    "test": "tiny: every code path once, for the test suite",
    "small": "the book's build on a 2-core CPU",
    "full": "the committed runs and the paper's scale",
}
"""Every size name and what it means."""


def check(size: str, allowed=tuple(SIZES)) -> str:
    """``size``, raising a ValueError unless it is one of ``allowed`` (sizes of ``SIZES``)."""
    return v.one_of("size", size, tuple(s for s in SIZES if s in tuple(allowed)))


def pick(table: Mapping[str, Any], size: str) -> Any:
    """``table[size]``: an experiment's numbers at ``size``; a ValueError naming the sizes
    the table has when it has not this one."""
    unknown = set(table) - set(SIZES)
    if unknown:
        raise ValueError(f"a sizes table may only use the sizes {tuple(SIZES)}, got {sorted(unknown)}")
    return table[check(size, table)]

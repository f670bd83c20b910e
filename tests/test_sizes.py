"""attnclust.book.sizes: one vocabulary of sizes for every experiment, figure and budget."""

import importlib
import pkgutil

import pytest

import attnclust.book
from attnclust.book import sizes, sweeps


def _size_tables():
    """Every module-level ``SIZES``/``*_SIZES`` mapping of the book's machinery."""
    for info in pkgutil.walk_packages(attnclust.book.__path__, "attnclust.book."):
        if info.name.startswith("attnclust.book.widgets"):
            continue  # the explorers import ipywidgets lazily; they hold no sizes table
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if name.endswith("SIZES") and isinstance(value, dict) and module.__name__ != sizes.__name__:
                yield f"{info.name}.{name}", value


def test_every_sizes_table_uses_the_shared_names():
    tables = dict(_size_tables())
    assert len(tables) >= 10  # the experiments' and figures' tables are found
    bad = {name: sorted(set(t) - set(sizes.SIZES)) for name, t in tables.items() if set(t) - set(sizes.SIZES)}
    assert not bad, bad
    # the training budgets use the same names for the same meanings, and add "long"
    assert set(sweeps.BUDGETS) - set(sizes.SIZES) == {"long"}


def test_pick_names_what_a_table_has():
    table = {"test": 1, "full": 2}
    assert sizes.pick(table, "full") == 2
    with pytest.raises(ValueError, match=r"size must be one of \('test', 'full'\), got size='small'"):
        sizes.pick(table, "small")
    with pytest.raises(ValueError, match="may only use the sizes"):
        sizes.pick({"medium": 1}, "medium")

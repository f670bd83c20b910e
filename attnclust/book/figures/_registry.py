"""The registry behind ``attnclust.book.figures`` and ``python -m attnclust reproduce``."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from collections.abc import Callable

from attnclust import _validate as v
from attnclust.book import sizes

SIZES = ("small", "full")
"""The sizes a figure is drawn at (``attnclust.book.sizes``): the book's and the full one."""

# Modules that register figures; imported lazily by ``names`` and ``make``.
MODULES = (
    "mixtures",
    "attention",
    "risk",
    "quantization",
    "training",
    "icq",
    "beyond",
    "digits",
    "performance",
)


@dataclass(frozen=True)
class FigureSpec:
    """A registered figure: its name, the chapter that shows it, and the function."""

    name: str
    chapter: str
    description: str
    func: Callable


FIGURES: dict[str, FigureSpec] = {}


def register(name: str, chapter: str, description: str = ""):
    """Decorator: register ``func(size="small") -> Figure`` under ``name``."""

    def wrap(func):
        if name in FIGURES and FIGURES[name].func is not func:
            raise ValueError(f"figure name {name!r} is registered twice")
        FIGURES[name] = FigureSpec(name, chapter, description or (func.__doc__ or "").strip().split("\n")[0], func)
        return func

    return wrap


def _load_all() -> None:
    for module in MODULES:
        try:
            importlib.import_module(f"{__package__}.{module}")
        except ModuleNotFoundError as err:
            if err.name != f"{__package__}.{module}":
                raise


def names() -> list[str]:
    """All registered figure names, sorted."""
    _load_all()
    return sorted(FIGURES)


def make(name: str, size: str = "small"):
    """Draw the figure ``name`` at ``size`` and return the matplotlib Figure.

    The figure is closed in pyplot before it is returned, so a notebook cell ending in
    ``make(name)`` shows it once (as the cell's value), not a second time through the
    inline backend."""
    _load_all()
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; known: {', '.join(sorted(FIGURES))}")
    sizes.check(size, SIZES)
    import matplotlib.pyplot as plt

    fig = FIGURES[name].func(size=size)
    plt.close(fig)
    return fig

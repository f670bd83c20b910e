"""The registry behind ``attnclust.book.figures`` and ``python -m attnclust reproduce``."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

from attnclust.book import sizes
from attnclust._public import import_submodules

SIZES = ("small", "full")
"""The sizes a figure is drawn at (``attnclust.book.sizes``): the book's and the full one."""


@dataclass(frozen=True)
class FigureSpec:
    """A registered figure: its name, the chapter that shows it, and the function."""

    name: str
    chapter: str
    description: str
    func: Callable


FIGURES: dict[str, FigureSpec] = {}
"""Figure name -> its :class:`FigureSpec`, as registered so far (:func:`names` and
:func:`make` import every figure module first)."""


def register(name: str, chapter: str, description: str = ""):
    """Decorator: register ``func(size="small") -> Figure`` under ``name``."""

    def wrap(func):
        if name in FIGURES and FIGURES[name].func is not func:
            raise ValueError(f"figure name {name!r} is registered twice")
        FIGURES[name] = FigureSpec(name, chapter, description or (func.__doc__ or "").strip().split("\n")[0], func)
        return func

    return wrap


def _load_all() -> None:
    """Import every public module of ``attnclust.book.figures`` (found in the package, not
    listed): each registers its figures with :func:`register` when it is imported."""
    import_submodules(__package__)


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

"""The registry of the explorers: what the benchmark, the browser checks and the book find
about each one, filled by the explorer modules themselves with :func:`register`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from attnclust._public import import_submodules

Moves = tuple[tuple[str, tuple], ...]


@dataclass(frozen=True)
class ExplorerSpec:
    """A registered explorer.

    Attributes:
        name: its name, which its static twin carries in the HTML page
            (``data-explorer``; :mod:`attnclust.book.widgets.static`).
        chapter: the stem of the chapter that shows it (``chapters/<chapter>.md``).
        func: ``func(static=False)`` opens it (an ipywidgets box with ``sliders``).
        draw: the update function its sliders call back (a library function).
        frames: the function that draws the static twin's frames (``draw`` unless given).
        moves: the benchmark's slider moves, ``((slider, (value, ...)), ...)``: one slider
            at a time from the defaults, as a reader dragging it; every value differs from
            the default and from the values before it, so that no move finds its answer
            cached.
    """

    name: str
    chapter: str
    func: Callable
    draw: Callable
    frames: Callable
    moves: Moves

    @property
    def module(self) -> str:
        """The module that defines the explorer."""
        return self.func.__module__


EXPLORERS: dict[str, ExplorerSpec] = {}
"""Explorer name -> its :class:`ExplorerSpec`, as registered so far (:func:`explorers`
imports every explorer module first)."""


def register(name: str, *, chapter: str, draw: Callable, moves: Moves,
             frames: Callable | None = None):
    """Decorator: register the explorer ``func(static=False)`` as ``name`` (see
    :class:`ExplorerSpec` for the arguments)."""
    if not moves or any(not values for _, values in moves):
        raise ValueError(f"explorer {name!r}: moves must give each slider at least one value, got {moves!r}")

    def wrap(func):
        old = EXPLORERS.get(name)
        if old is not None and (old.module, old.func.__qualname__) != (func.__module__, func.__qualname__):
            raise ValueError(f"explorer name {name!r} is registered twice")
        EXPLORERS[name] = ExplorerSpec(name, chapter, func, draw, frames or draw, tuple(moves))
        return func

    return wrap


def explorers() -> list[ExplorerSpec]:
    """Every explorer, sorted by name, after importing every public module of
    ``attnclust.book.widgets`` (each registers its own; none is listed anywhere)."""
    import_submodules(__package__)
    return [EXPLORERS[n] for n in sorted(EXPLORERS)]


def spec_of(func: Callable) -> ExplorerSpec:
    """The registered spec of the explorer function ``func`` (a decorator's wrapper of it
    too)."""
    inner = inspect.unwrap(func)
    for spec in EXPLORERS.values():
        if inspect.unwrap(spec.func) is inner:
            return spec
    raise ValueError(f"{getattr(func, '__qualname__', func)!r} is not a registered explorer; "
                     f"known: {', '.join(sorted(EXPLORERS)) or 'none'}")

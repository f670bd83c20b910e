"""Interactive explorers for Jupyter (ipywidgets), one module per explorer
(``widgets.mixture``, ``widgets.training``, ``widgets.quantization``, ...).

Each explorer module registers its explorer with :func:`register` (its name, the chapter
that shows it, its update callback, and the slider moves the benchmark makes); nothing
lists the modules: :func:`explorers` imports every public module of this package and
returns what they registered, and the benchmark (``benchmarks/run.py``), the browser
checks of the static pages and the API reference read that registry.

Each explorer's update callback is a plain library function (tested) that redraws a
matplotlib figure from slider values; the chapters call every explorer with
``static=True`` so that HTML readers get sliders that work without a kernel
(``widgets.static``: the figure precomputed over a grid of the sliders' values, whose frame
at the defaults is the section's figure). The public names of the modules are
resolved lazily, so ``attnclust.book.widgets.mixture_explorer`` works without
importing ipywidgets at package import time.

Modules whose callbacks compile JAX programs have a ``prepare()`` that compiles every
shape their sliders allow; their explorer starts it in a background thread when it opens.
:func:`slider_values` lists the values a control can take (for the speed tests, which move
every slider through all of them with :func:`time_moves`).
"""

import importlib
import time
from collections.abc import Callable

import numpy as np

from attnclust._public import public_names, submodule_names
from attnclust.book.widgets import _registry
from attnclust.book.widgets._registry import ExplorerSpec, explorers, register

EXPLORERS: dict[str, ExplorerSpec] = _registry.EXPLORERS
"""Explorer name -> its :class:`ExplorerSpec`, as registered so far (:func:`explorers`
imports every explorer module first).

:meta hide-value:
"""

__all__ = ["EXPLORERS", "ExplorerSpec", "explorers", "register", "slider_values", "time_moves",
           "latency_report"]


def slider_values(control) -> tuple:
    """Every value an ipywidgets control of the explorers can take: the options of a
    selection slider or toggle buttons, ``min..max`` by ``step`` for an int, float or
    log slider (a log slider's exponents are on that grid)."""
    if hasattr(control, "options"):
        return tuple(control.options)
    lo, hi, step = control.min, control.max, control.step
    if isinstance(control.value, (int, np.integer)) and not isinstance(control.value, bool):
        return tuple(range(lo, hi + 1, step))
    grid = lo + step * np.arange(int(round((hi - lo) / step)) + 1)
    if hasattr(control, "base"):  # FloatLogSlider: min, max, step are exponents
        grid = control.base ** grid
    return tuple(float(x) for x in grid)


def time_moves(draw: Callable, sliders: dict, defaults: dict,
               check: Callable | None = None) -> dict[tuple[str, object], float]:
    """Move each slider through every value it can take (:func:`slider_values`), one slider
    at a time from ``defaults`` (the default value itself skipped), as a reader would:
    ``draw(**{name: value})`` for each, timed. ``check(result, name, value)``, when
    given, runs after each move, outside the timing. Returns the seconds of each move,
    keyed by (slider name, value)."""
    times = {}
    for name, control in sliders.items():
        for value in slider_values(control):
            default = defaults[name]
            same = value == default if isinstance(value, str) else np.isclose(value, default)
            if same:
                continue
            t0 = time.perf_counter()
            result = draw(**{name: value})
            times[name, value] = time.perf_counter() - t0
            if check is not None:
                check(result, name, value)
    return times


def latency_report(times: dict) -> tuple[float, str]:
    """(p95 in seconds, a one-line summary: moves, p50, p95, the slowest) of
    :func:`time_moves`'s result."""
    t = np.array(list(times.values()))
    p50, p95 = np.percentile(t, [50, 95])
    slowest = max(times, key=times.get)
    return float(p95), (f"{t.size} moves: p50 {p50 * 1e3:.0f} ms, p95 {p95 * 1e3:.0f} ms, "
                        f"max {t.max() * 1e3:.0f} ms at {slowest}")


def __getattr__(name):
    """A public name of a public module of the package (``attnclust._public``; the
    first such module by name)."""
    if name.startswith("__"):  # __all__, __path__ ...: never from a submodule
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for module in submodule_names(__name__):
        mod = importlib.import_module(module)
        if name in public_names(mod):
            return getattr(mod, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Every figure of the book, by name, reproducible with one call.

Each chapter's figures live in a module of this package (``figures.mixtures``,
``figures.training``, ...) and are registered with ``@register``; :func:`names` and
:func:`make` import every public module of the package first, so a new module is found
without being listed anywhere. A figure function takes
``size`` ("small": the book's CPU scale, seconds; "full": the paper-scale setting meant for
an accelerator) and returns a ``matplotlib.figure.Figure``. ``python -m attnclust reproduce``
regenerates them by name.

Imported in IPython (a chapter, a notebook), the package makes IPython show every figure
as the book does, with its smallest text size in the PNG
(``_legibility.install_png_formatter``), where the browser
checks of the built book read it.
"""

from attnclust.book.figures import _legibility, _registry
from attnclust.book.figures._registry import FigureSpec, make, names, register

FIGURES: dict[str, FigureSpec] = _registry.FIGURES
"""Figure name -> its :class:`FigureSpec`, as registered so far (:func:`names` and
:func:`make` import every figure module first).

:meta hide-value:
"""

_legibility.install_png_formatter()

__all__ = ["FIGURES", "FigureSpec", "make", "names", "register"]

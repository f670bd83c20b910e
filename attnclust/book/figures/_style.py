"""The book's figure style: text a reader can read at the text column's width.

Every figure function of ``attnclust.book.figures`` (and every plotting function a chapter
calls directly) is decorated with :func:`styled`: it draws under :data:`STYLE` (matplotlib's
rcParams: 10-point text, 9-point tick labels and legends, constrained layout) and its figure
is at most :data:`WIDTH` inches wide. At the book's 100 dpi (``_legibility.DPI``) a figure
that wide is shown at about its natural size in the desktop column and scaled to 342/590 of
it on a phone, so 9-point text is 12.5 CSS px on a desktop and 7.2 px on a phone, above
``_legibility.FLOOR_PX`` at both (``tests/test_figure_legibility.py`` measures each figure).
A figure with more panels than fit side by side at that width stacks them in rows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import matplotlib as mpl

from attnclust.book.figures._legibility import DPI

WIDTH = 5.8
"""The widest a figure may be, in inches (580 px at :data:`~._legibility.DPI`)."""

TEXT_PT = 10.0
"""Labels and titles, in points."""

SMALL_PT = 9.0
"""Tick labels, legends and annotations, in points: the smallest text of a figure."""

STYLE = {
    "font.size": TEXT_PT,
    "axes.titlesize": TEXT_PT,
    "axes.labelsize": TEXT_PT,
    "figure.titlesize": TEXT_PT,
    "xtick.labelsize": SMALL_PT,
    "ytick.labelsize": SMALL_PT,
    "legend.fontsize": SMALL_PT,
    "legend.title_fontsize": SMALL_PT,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "figure.figsize": (WIDTH, 3.8),
    "figure.constrained_layout.use": True,
}
"""rcParams every figure of the book is drawn under."""


def styled(func: Callable) -> Callable:
    """Decorator: call ``func`` (which returns a matplotlib Figure) under :data:`STYLE`, with
    every axes' tick labels at least :data:`SMALL_PT` (ticks are created lazily, possibly
    after the rc context has closed, so their size is fixed on the axes)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with mpl.rc_context(STYLE):
            fig = func(*args, **kwargs)
            for ax in fig.axes:
                ax.tick_params(which="both", labelsize=SMALL_PT)
        return fig

    return wrapper

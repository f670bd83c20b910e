"""How large a figure's text is as a reader sees it, and the PNG that says so.

A figure's smallest text, in points, becomes CSS pixels on the page as

    px = pt / 72 * dpi * shown / natural

where ``natural`` is the PNG's width in pixels (drawn at ``dpi``) and ``shown`` the width
the page gives it: at most the text column, :data:`COLUMN_PX` wide on a desktop and on a
phone. The book asks for at least :data:`FLOOR_PX` at each width, without zooming.

:func:`smallest_text_pt` finds the size by drawing the figure and recording every string
the renderer draws (tick labels, legends, titles, annotations, mathtext), so text that is
hidden or outside the axes' view does not count. :func:`png` draws a figure as the book
shows it and writes that size into the PNG (text chunk :data:`PNG_KEY`), so a check of the
built HTML can measure each image it finds; :func:`install_png_formatter` makes IPython
show every figure that way.
"""

from __future__ import annotations

import io

import matplotlib.figure
from matplotlib.backends.backend_agg import RendererAgg

PNG_KEY = "attnclust:smallest-text-pt"
"""The PNG text chunk that holds the smallest text size of the figure, in points."""

COLUMN_PX = {"desktop": 672, "phone": 342}
"""The width, in CSS px, of the book's text column in a 1280 px and a 390 px wide window."""

FLOOR_PX = {"desktop": 9.0, "phone": 7.0}
"""The smallest legible text, in CSS px, at each width."""

DPI = 100
"""The resolution the book's figures are drawn at (matplotlib's default figure dpi)."""


class _TextRecorder(RendererAgg):
    """An Agg renderer that notes the size of every non-empty string it draws."""

    def __init__(self, width: float, height: float, dpi: float):
        super().__init__(width, height, dpi)
        self.sizes: list[float] = []

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if s and s.strip():
            self.sizes.append(float(prop.get_size_in_points()))
        return super().draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)


def smallest_text_pt(fig: matplotlib.figure.Figure) -> float:
    """The smallest font size, in points, of the text ``fig`` draws (``inf`` if none)."""
    width, height = fig.get_size_inches() * fig.dpi
    recorder = _TextRecorder(width, height, fig.dpi)
    fig.draw(recorder)
    return min(recorder.sizes, default=float("inf"))


def shown_text_px(pt: float, natural_px: float, shown_px: float, dpi: float = DPI) -> float:
    """The CSS px height of ``pt``-point text in a PNG ``natural_px`` wide drawn at ``dpi``
    and shown ``shown_px`` wide."""
    return pt / 72.0 * dpi * shown_px / natural_px


def text_px_in_column(pt: float, natural_px: float, dpi: float = DPI) -> dict[str, float]:
    """The CSS px of ``pt``-point text at each width of :data:`COLUMN_PX`, for a PNG that
    is shown at its natural width or, if wider, at the column's."""
    return {where: shown_text_px(pt, natural_px, min(natural_px, column), dpi)
            for where, column in COLUMN_PX.items()}


def png(fig: matplotlib.figure.Figure, dpi: float = DPI, **savefig) -> bytes:
    """``fig`` as the book shows it (a tight PNG at ``dpi``), its smallest text size
    written into the text chunk :data:`PNG_KEY`."""
    metadata = {"Software": None, PNG_KEY: f"{smallest_text_pt(fig):.3f}"}
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight",
                metadata=metadata | savefig.pop("metadata", {}), **savefig)
    return buf.getvalue()


def install_png_formatter() -> bool:
    """Make the running IPython show every matplotlib figure through :func:`png`, at the
    figure's own dpi (``%matplotlib inline`` otherwise draws it without the size). Returns
    False outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency of the book
        return False
    shell = get_ipython()
    if shell is None:
        return False
    # In a Jupyter kernel the inline backend, when first loaded (by the first pyplot figure),
    # registers its own PNG formatter for Figure over any registered before: load it now, so
    # that the formatter below comes after it and stays.
    try:
        import matplotlib_inline.backend_inline  # noqa: F401
    except ImportError:  # pragma: no cover - ipykernel depends on it
        pass
    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type(matplotlib.figure.Figure, lambda fig: png(fig, dpi=fig.dpi))
    return True

"""Every figure of the book is legible at reading size, and the measurement that says so works.

The book asks every text element of every figure to be at least ``_legibility.FLOOR_PX``
CSS px as shown in the text column, ``_legibility.COLUMN_PX`` wide on a desktop and on a
phone, without zooming. ``test_registered_figure_is_legible`` draws each registered figure
(``attnclust.book.figures.make``), finds its smallest text (``smallest_text_pt``) and the
width of the PNG the book shows (``png``), and computes the px at both widths
(``text_px_in_column``). The other tests check that measurement itself: a change that made
it report the wrong size, count text that is not drawn, or leave the size out of the PNG
would otherwise let small figures through (tests/browser/layout.py reads that PNG chunk in
the built book).
"""

from __future__ import annotations

import io

import matplotlib.figure
import pytest
from PIL import Image

from attnclust.book.figures import _legibility as L
from attnclust.book.figures import make, names


def _measure(fig: matplotlib.figure.Figure) -> tuple[float, int, dict[str, float]]:
    """(smallest text pt, natural width px of the shown PNG, px at each column width)."""
    pt = L.smallest_text_pt(fig)
    with Image.open(io.BytesIO(L.png(fig))) as im:
        width = im.width
    return pt, width, L.text_px_in_column(pt, width)


@pytest.mark.slow
@pytest.mark.parametrize("name", names())
def test_registered_figure_is_legible(name):
    pt, width, px = _measure(make(name))
    small = {where: round(v, 2) for where, v in px.items() if v < L.FLOOR_PX[where]}
    assert not small, (
        f"figure {name!r}: smallest text {pt:g} pt in a PNG {width} px wide is "
        + ", ".join(f"{v} px on {where} (floor {L.FLOOR_PX[where]:g} px)" for where, v in small.items()))


def _figure(width_in: float = 5.0, legend_pt: float = 4.0) -> matplotlib.figure.Figure:
    fig = matplotlib.figure.Figure(figsize=(width_in, 3), dpi=L.DPI)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], label="a line")
    ax.set_xlabel("x", fontsize=12)
    ax.tick_params(labelsize=11)
    ax.legend(fontsize=legend_pt)
    return fig


def test_smallest_text_is_the_legend():
    assert L.smallest_text_pt(_figure(legend_pt=4.0)) == pytest.approx(4.0)
    assert L.smallest_text_pt(_figure(legend_pt=10.5)) == pytest.approx(10.5)


def test_hidden_and_empty_text_is_not_counted():
    fig = _figure(legend_pt=13.0)
    ax = fig.axes[0]
    ax.text(0.5, 0.5, "hidden", fontsize=2).set_visible(False)
    ax.text(0.5, 0.5, "", fontsize=1)
    ax.text(0.5, 0.5, "   ", fontsize=1)
    ax.set_title("", fontsize=3)
    assert L.smallest_text_pt(fig) == pytest.approx(11.0)  # the tick labels
    ax.text(0.5, 0.5, "shown", fontsize=3)
    assert L.smallest_text_pt(fig) == pytest.approx(3.0)


def test_mathtext_and_figure_text_count():
    fig = _figure(legend_pt=12.0)
    fig.suptitle(r"$\lambda = 1$", fontsize=5)
    assert L.smallest_text_pt(fig) == pytest.approx(5.0)
    fig.text(0.01, 0.01, "note", fontsize=4.5)
    assert L.smallest_text_pt(fig) == pytest.approx(4.5)


def test_figure_without_text():
    fig = matplotlib.figure.Figure()
    assert L.smallest_text_pt(fig) == float("inf")


def test_px_arithmetic():
    # 9 pt at 100 dpi is 12.5 px at natural size; a 684 px PNG is halved on a phone (342 px)
    assert L.shown_text_px(9, 684, 342, dpi=100) == pytest.approx(6.25)
    px = L.text_px_in_column(9, 580)
    assert px["desktop"] == pytest.approx(12.5)  # narrower than the column: natural size
    assert px["phone"] == pytest.approx(12.5 * 342 / 580)
    wide = L.text_px_in_column(9, 1344)
    assert wide["desktop"] == pytest.approx(6.25)
    assert L.text_px_in_column(9, 580, dpi=200)["desktop"] == pytest.approx(25.0)


def test_png_carries_the_smallest_size_and_dpi():
    fig = _figure(width_in=5.0, legend_pt=4.0)
    with Image.open(io.BytesIO(L.png(fig))) as im:
        info = dict(im.info)
        width = im.width
    assert float(info[L.PNG_KEY]) == pytest.approx(4.0)
    assert info["dpi"][0] == pytest.approx(L.DPI, abs=0.5)
    assert 400 < width <= 520  # tight bbox of a 5-inch figure at 100 dpi


def test_the_floor_fails_a_small_figure_and_passes_a_styled_one():
    from attnclust.book.figures._style import SMALL_PT, WIDTH, styled

    _, _, px = _measure(_figure(width_in=10.0, legend_pt=7.0))
    assert px["phone"] < L.FLOOR_PX["phone"] and px["desktop"] < L.FLOOR_PX["desktop"]

    @styled
    def draw():
        fig = matplotlib.figure.Figure(figsize=(WIDTH, 3))
        ax = fig.add_subplot()
        ax.plot([0, 1], [0, 1], label="a line")
        ax.legend()
        return fig

    pt, width, px = _measure(draw())
    assert pt == pytest.approx(SMALL_PT)
    assert all(px[w] >= L.FLOOR_PX[w] for w in L.COLUMN_PX), (width, px)


@pytest.fixture
def ipython_shell():
    from IPython.core.interactiveshell import InteractiveShell

    had = InteractiveShell.initialized()
    shell = InteractiveShell.instance()
    yield shell
    if not had:
        InteractiveShell.clear_instance()


def test_install_png_formatter_in_ipython(ipython_shell):
    assert L.install_png_formatter()
    fig = _figure(legend_pt=4.0)
    data, _ = ipython_shell.display_formatter.format(fig, include=["image/png"])
    with Image.open(io.BytesIO(data["image/png"])) as im:
        assert float(im.info[L.PNG_KEY]) == pytest.approx(4.0)


def test_install_png_formatter_outside_ipython():
    from IPython.core.interactiveshell import InteractiveShell

    if InteractiveShell.initialized():
        pytest.skip("an IPython shell is running in this process")
    assert L.install_png_formatter() is False


@pytest.mark.slow
def test_figures_shown_in_a_kernel_carry_their_size():
    """In a Jupyter kernel, as a chapter runs: a pyplot figure shown by ``plt.show()`` after
    the package is imported (the inline backend loads with the first pyplot figure and
    registers its own PNG formatter) and a figure returned as a cell's value both carry
    PNG_KEY."""
    import base64

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in (
        "import matplotlib.pyplot as plt\nimport attnclust.book.figures",
        "fig, ax = plt.subplots()\nax.plot([0, 1])\nax.legend(['a'], fontsize=6.5)\nplt.show()",
        "import matplotlib.figure\nf = matplotlib.figure.Figure()\nf.add_subplot().set_title('t', fontsize=5.5)\nf",
    )]
    NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    sizes = []
    for cell in nb.cells[1:]:
        pngs = [o["data"]["image/png"] for o in cell.outputs if "image/png" in o.get("data", {})]
        assert len(pngs) == 1, cell.outputs
        with Image.open(io.BytesIO(base64.b64decode(pngs[0]))) as im:
            sizes.append(float(im.info.get(L.PNG_KEY, "nan")))
    assert sizes == [6.5, 5.5]

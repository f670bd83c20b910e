"""attnclust.book.widgets.static: explorers precomputed for the HTML book (frames over a grid,
range inputs that switch between them); the pages themselves are checked in a browser
(tests/browser/test_static_explorers.py)."""

from __future__ import annotations

import base64
import json
import re

import matplotlib.figure
import pytest

from attnclust.book.widgets.static import Grid, StaticExplorer, explorer, frame_png, render_frames


def _draw(a, b):
    """A cheap figure that depends on both values."""
    fig = matplotlib.figure.Figure(figsize=(2, 1.5))
    ax = fig.add_subplot()
    ax.plot([0, 1], [a, b])
    ax.set_title(f"{a} {b}")
    return fig


GRID = Grid({"a": (1, 2, 3), "b": (0.5, 1.5)}, {"a": "A", "b": "B"}, {"a": 2, "b": 0.5})


def test_grid_points_in_product_order():
    assert GRID.size == 6
    assert GRID.points()[:3] == [{"a": 1, "b": 0.5}, {"a": 1, "b": 1.5}, {"a": 2, "b": 0.5}]


@pytest.mark.parametrize("values, defaults, match", [
    ({"a": ()}, {"a": 1}, "no values"),
    ({"a": (1, 2)}, {"a": 3}, "not one of its values"),
])
def test_grid_refuses_bad_values(values, defaults, match):
    with pytest.raises(ValueError, match=match):
        Grid(values, {"a": "A"}, defaults)


def test_each_frame_is_the_figure_drawn_at_its_point():
    frames = render_frames(_draw, GRID)
    assert len(frames) == GRID.size and len(set(frames)) == GRID.size
    for point, frame in zip(GRID.points(), frames):
        assert frame == frame_png(_draw(**point))  # deterministic: no timestamp in the PNG
        assert frame.startswith(b"\x89PNG")


def _spec(page: str) -> dict:
    return json.loads(re.search(r'<script type="application/json">(.*?)</script>', page, re.S)[1])


def test_html_has_a_range_per_slider_at_its_default():
    page = StaticExplorer("toy", GRID, tuple(render_frames(_draw, GRID)), "a line").html()
    ranges = re.findall(r'<input type="range" min="0" max="(\d+)" step="1" value="(\d+)"', page)
    assert ranges == [("2", "1"), ("1", "0")]  # a = 2 is index 1 of (1, 2, 3)
    spec = _spec(page)
    assert spec["sizes"] == [3, 2] and spec["values"] == [[1, 2, 3], [0.5, 1.5]]
    assert base64.b64decode(spec["frames"][5]) == frame_png(_draw(3, 1.5))
    assert 'alt="a line"' in page and "6 figures" in page
    assert "disabled" not in page and "Held fixed" not in page
    # a screen reader reads the slider's value, not the index of its stop
    assert re.findall(r'aria-valuetext="([^"]*)"', page) == ["2", "0.5"]
    assert "setAttribute('aria-valuetext', spec.labels[i][k])" in page


def test_a_slider_with_one_value_is_shown_disabled_and_named_in_the_note():
    grid = Grid({"a": (1, 2, 3), "b": (0.5,)}, {"a": "A", "b": "B"}, {"a": 2, "b": 0.5})
    page = StaticExplorer("toy", grid, tuple(render_frames(_draw, grid)), "a line").html()
    inputs = re.findall(r"<input [^>]*>", page)
    assert len(inputs) == 2 and "disabled" not in inputs[0] and inputs[1].endswith(" disabled>")
    assert "3 figures" in page and "Held fixed in this page: B = 0.5." in page


def test_explorer_output_is_the_widget_and_the_static_html():
    ipywidgets = pytest.importorskip("ipywidgets")
    box = ipywidgets.VBox([])
    box.sliders = {"a": ipywidgets.IntSlider(description="A"),
                   "b": ipywidgets.FloatSlider(description="B")}
    both = explorer("toy", box, _draw, GRID.values, GRID.defaults, "a line", progress=False)
    bundle = both._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/html"].startswith('<div class="ac-static-explorer" id="ac-static-toy"')
    assert both.sliders is box.sliders


@pytest.mark.slow
def test_mixture_explorer_frames_come_from_draw_mixture(monkeypatch):
    from attnclust.book.widgets import mixture as wm

    monkeypatch.setattr(wm, "STATIC_GRID", dict(K=(2,), r_over_sigma=(4.0,), weight=(0.5,),
                                                d=(5,), seed=(0, 1)))
    bundle = wm.mixture_explorer(static=True)._repr_mimebundle_()
    frames = _spec(bundle["text/html"])["frames"]
    assert base64.b64decode(frames[1]) == frame_png(wm.draw_mixture(**{**wm.DEFAULTS, "seed": 1}))


@pytest.mark.slow
def test_training_explorer_frames_come_from_the_group_runs(monkeypatch):
    """The static training explorer: one frame per grid point, in grid order, each the
    figure that ``draw_training(batched=True)`` draws there (a one-group grid: cheap)."""
    from attnclust.book.widgets import training as wt

    monkeypatch.setenv("ATTNCLUST_WIDGETS_NO_PREPARE", "1")
    grid = dict(lam=(1.0, 2.0), r_over_sigma=(4.0,), d=(2,), L=(20,), seed=(0,), init=("close",))
    monkeypatch.setattr(wt, "STATIC_GRID", grid)
    monkeypatch.setitem(wt.DEFAULTS, "d", 2)
    monkeypatch.setitem(wt.DEFAULTS, "L", 20)
    monkeypatch.setitem(wt.DEFAULTS, "init", "close")
    both = wt.training_explorer(static=True)
    frames = _spec(both._repr_mimebundle_()["text/html"])["frames"]
    assert len(frames) == 2 and frames[0] != frames[1]
    point = dict(lam=2.0, r_over_sigma=4.0, d=2, L=20, seed=0, init="close")
    assert base64.b64decode(frames[1]) == frame_png(wt.draw_training(**point, batched=True))


def test_frame_png_ignores_matplotlibs_slow_legend_hint(monkeypatch):
    """matplotlib warns when placing a loc="best" legend took over a second (a matter of the
    machine's load, and a cell's stderr fails the book): a frame is drawn without it. The
    clock here jumps 2 s at every reading, so every placement is "slow"."""
    import io
    import itertools
    import warnings

    import matplotlib.legend
    import matplotlib.pyplot as plt

    ticks = itertools.count(step=2.0)
    monkeypatch.setattr(matplotlib.legend.time, "perf_counter", lambda: next(ticks))
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="can be slow"):  # the planted slowness is seen
            fig.savefig(io.BytesIO(), format="png")
        assert frame_png(fig, colours=0)[:4] == b"\x89PNG"
    plt.close(fig)

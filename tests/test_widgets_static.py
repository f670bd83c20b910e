"""attnclust.book.widgets.static: explorers precomputed for the HTML book (frames over a grid,
range inputs that switch between them); the pages themselves are checked in a browser
(tests/browser/test_static_explorers.py)."""

from __future__ import annotations

import base64
import io
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


# --------------------------------------------------------------------------- the explorers' grids


def _explorer_modules():
    from attnclust.book.widgets import mixture, quantization, training

    return {"mixture": mixture, "quantization": quantization, "training": training}


@pytest.mark.parametrize("name", ["mixture", "quantization", "training"])
def test_every_varied_slider_has_at_least_min_stops_and_the_page_stays_bounded(name):
    """A slider that the static grid varies has at least ``MIN_STOPS`` values; every other
    slider is held at one (its default), so that the frames stay few (at most 30)."""
    from attnclust.book.widgets.static import MIN_STOPS

    mod = _explorer_modules()[name]
    grid = mod.STATIC_GRID
    varied = [n for n, vals in grid.items() if len(vals) > 1]
    assert varied, f"{name}: the static grid varies no slider"
    for n, vals in grid.items():
        assert len(set(vals)) == len(vals), f"{name}: {n} repeats a value {vals}"
        if len(vals) > 1:
            assert len(vals) >= MIN_STOPS, f"{name}: slider {n} has {len(vals)} stops {vals}"
        else:
            assert vals[0] == mod.DEFAULTS[n], f"{name}: {n} is held at {vals[0]}, not its default"
    size = 1
    for vals in grid.values():
        size *= len(vals)
    assert size <= 30


def test_the_note_names_every_slider_held_at_one_value_with_its_value():
    from attnclust.book.widgets.static import held_fixed

    grid = Grid({"a": (1, 2, 3, 4, 5), "d": (5,), "L": (50,), "seed": (0,)},
                {"a": "A", "d": "d", "L": "L", "seed": "seed"}, {"a": 2, "d": 5, "L": 50, "seed": 0})
    assert held_fixed(grid) == "d = 5, L = 50, seed = 0"
    page = StaticExplorer("toy", grid, tuple(render_frames(_draw_one, grid)), "a line").html()
    assert "Held fixed in this page: d = 5, L = 50, seed = 0." in page
    assert "5 figures" in page


def _draw_one(a, d, L, seed):
    from attnclust.book.widgets.static import set_alt

    return set_alt(_draw(a, d + L + seed), f"a = {a}: a line to {d + L + seed}")


def test_each_frame_has_its_own_alt_and_the_page_opens_on_the_default_frame():
    """Each frame carries the alt text its figure was drawn with (``set_alt``); the page's
    <img> opens with the default frame and its alt (no script needed to see it), and the
    script sets the frame's alt when a slider moves."""
    from attnclust.book.widgets.static import alt_of

    grid = Grid({"a": (1, 2, 3, 4, 5), "d": (5,), "L": (50,), "seed": (0,)},
                {"a": "A", "d": "d", "L": "L", "seed": "seed"}, {"a": 2, "d": 5, "L": 50, "seed": 0})
    alts: list[str] = []
    frames = tuple(render_frames(_draw_one, grid, alt="fallback", alts=alts))
    assert alts == [f"a = {a}: a line to 55" for a in (1, 2, 3, 4, 5)]
    assert alt_of(_draw(1, 2), "fallback") == "fallback"
    page = StaticExplorer("toy", grid, frames, tuple(alts)).html()
    spec = _spec(page)
    assert spec["alts"] == alts
    img = re.search(r"<img [^>]*>", page)[0]
    assert f'src="data:image/png;base64,{base64.b64encode(frames[1]).decode()}"' in img
    assert 'alt="a = 2: a line to 55"' in img
    assert spec["frames"][1] == "" and all(spec["frames"][i] for i in (0, 2, 3, 4))  # once in the page
    assert "img.alt = spec.alts[index]" in page
    with pytest.raises(ValueError, match="alt texts"):
        StaticExplorer("toy", grid, frames, ("one",)).alts


def _frame_legibility(frame: bytes) -> dict[str, float]:
    from PIL import Image

    from attnclust.book.figures._legibility import PNG_KEY, text_px_in_column

    image = Image.open(io.BytesIO(frame))
    assert PNG_KEY in image.text, "the frame does not say its smallest text size"
    return text_px_in_column(float(image.text[PNG_KEY]), image.size[0])


def test_frame_png_carries_the_smallest_text_size():
    from PIL import Image

    from attnclust.book.figures._legibility import DPI

    from attnclust.book.widgets.static import DPI as FRAME_DPI

    assert FRAME_DPI == DPI  # the book's resolution, not a reduced one
    for colours in (0, 16):  # full colour and palette: both say their resolution
        frame = frame_png(_draw(1, 2), colours=colours)
        px = _frame_legibility(frame)
        assert px["desktop"] > 0 and px["phone"] > 0
        assert Image.open(io.BytesIO(frame)).info["dpi"] == pytest.approx((DPI, DPI), abs=0.5)


def _default_frame(name, monkeypatch):
    mod = _explorer_modules()[name]
    if name == "mixture":
        return mod.draw_mixture(**mod.DEFAULTS)
    if name == "quantization":
        return mod.draw_quantization(**mod.DEFAULTS)
    monkeypatch.setenv("ATTNCLUST_WIDGETS_NO_PREPARE", "1")  # no background training
    return mod.draw_training(**mod.DEFAULTS, batched=True)


@pytest.mark.parametrize("name", ["mixture", "quantization", pytest.param("training", marks=pytest.mark.slow)])
def test_the_explorers_frames_meet_the_legibility_floor_and_describe_themselves(name, monkeypatch):
    """An explorer's frame at its defaults: its smallest text is at least ``FLOOR_PX`` CSS
    px at both column widths, and its alt text states the slider values and what was
    computed there (not the same text for every frame)."""
    import matplotlib.pyplot as plt

    from attnclust.book.figures._legibility import FLOOR_PX
    from attnclust.book.widgets.static import alt_of

    fig = _default_frame(name, monkeypatch)
    px = _frame_legibility(frame_png(fig))
    plt.close(fig)
    for where, floor in FLOOR_PX.items():
        assert px[where] >= floor, f"{name}: smallest text {px[where]:.2f} px on {where} < {floor}"
    alt = alt_of(fig)
    assert alt and alt != _explorer_modules()[name].STATIC_ALT
    assert "r/σ = 4" in alt and any(ch.isdigit() for ch in alt.split(":", 1)[1])


def test_the_mixture_frames_alt_follows_the_values():
    from attnclust.book.widgets import mixture as wm
    from attnclust.book.widgets.static import alt_of

    a = alt_of(wm.draw_mixture(**{**wm.DEFAULTS, "r_over_sigma": 1.0}))
    b = alt_of(wm.draw_mixture(**{**wm.DEFAULTS, "r_over_sigma": 6.0}))
    assert a != b and "r/σ = 1," in a and "r/σ = 6," in b and "ARI" in a


def test_a_live_explorer_renders_no_frames(monkeypatch):
    """Without ``static=True`` (Jupyter, the reader editions: ``editions.live_widget_source``
    drops it) an explorer draws no static frame: only the HTML build pays for them."""
    pytest.importorskip("ipywidgets")
    from attnclust.book.widgets import mixture as wm
    from attnclust.book.widgets import static

    def refuse(*args, **kwargs):
        raise AssertionError("a live explorer rendered static frames")

    monkeypatch.setattr(static, "render_frames", refuse)
    box = wm.mixture_explorer()
    assert not hasattr(box, "static") and set(box.sliders) == set(wm.STATIC_GRID)

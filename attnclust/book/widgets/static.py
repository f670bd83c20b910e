"""Explorers without a kernel: the same figures, precomputed, behind HTML sliders.

A reader of the static HTML book has no kernel, so an ipywidgets explorer there shows
sliders that redraw nothing. :func:`explorer` pairs the live explorer with a precomputed
one: its figure drawn by the explorer's own update function (the library's ``draw_*``)
at every point of a grid of the sliders' values, each frame a PNG, and a range input per
slider that switches between the frames with a few lines of JavaScript (no network, no
kernel). In Jupyter the live ipywidgets explorer is shown (the output's widget view); the
HTML book shows the precomputed one (its ``text/html``, which the book's build prefers;
``nb_mime_priority_overrides`` in ``_config.yml``). The grid is each slider's values
crossed with the others' (a subset of the live sliders' values, so that a page stays
light); tests/browser/test_static_explorers.py moves every slider of every explorer in
the built pages with the network blocked.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import matplotlib.figure
import matplotlib.pyplot as plt

from attnclust.book.figures import _legibility

__all__ = ["Grid", "StaticExplorer", "explorer", "twin", "frame_png", "render_frames", "set_alt",
           "alt_of", "held_fixed", "MIN_STOPS"]

MIN_STOPS = 5
"""The fewest values a slider that the grid varies takes (a slider with fewer would be a
switch, not a slider); every other slider is held at one value, named in the note."""

DPI = _legibility.DPI
"""Resolution of the frames: the book's (``attnclust.book.figures._legibility.DPI``), the
notebook's default, at which the explorers' text meets the book's legibility floor."""

COLOURS = 128
"""Colours of a frame's palette: a frame is the figure's PNG reduced to an adaptive palette
of this many colours (median cut), about three times lighter than the full-colour PNG
(the training explorer's frame: 43 kB -> 14 kB) and not visibly different for these
line and scatter plots; 0 keeps the full-colour PNG."""


@dataclass(frozen=True)
class Grid:
    """The values each slider takes in the static explorer, in slider order.

    Attributes:
        values: slider name -> the values it can take (a subset of the live slider's).
        labels: slider name -> its label (the live slider's description).
        defaults: slider name -> the value shown first (one of its values).
    """

    values: Mapping[str, Sequence]
    labels: Mapping[str, str]
    defaults: Mapping[str, object]

    def __post_init__(self):
        for name, vals in self.values.items():
            if not vals:
                raise ValueError(f"Grid: slider {name!r} has no values")
            if self.defaults[name] not in vals:
                raise ValueError(f"Grid: the default of {name!r} ({self.defaults[name]!r}) is "
                                 f"not one of its values {tuple(vals)}")

    def points(self) -> list[dict]:
        """Every combination of the sliders' values, the last slider varying fastest."""
        names = list(self.values)
        return [dict(zip(names, combo)) for combo in itertools.product(*self.values.values())]

    @property
    def size(self) -> int:
        n = 1
        for vals in self.values.values():
            n *= len(vals)
        return n


def frame_png(fig: matplotlib.figure.Figure, dpi: int = DPI, colours: int = COLOURS) -> bytes:
    """The figure as PNG bytes (what one frame of a static explorer shows): drawn as the
    book draws its figures (``attnclust.book.figures._legibility.png``: a tight PNG whose
    text chunk ``PNG_KEY`` holds the figure's smallest text size, which the browser check
    reads from every image of a page), reduced to an adaptive palette of ``colours``
    colours (``COLOURS`` by default; 0: full colour), the text chunk and resolution kept. Deterministic:
    the same figure gives the same bytes."""
    with warnings.catch_warnings():
        # matplotlib's hint when placing a legend (loc="best") took over a second: a matter
        # of the machine's load and of a garbage collection falling in that second, not of
        # the figure (an explorer's frames are drawn by the hundred; the book build failed
        # once on it, under load, as a cell's stderr)
        warnings.filterwarnings("ignore", message='Creating legend with loc="best" can be slow')
        raw = _legibility.png(fig, dpi=dpi)
    if not colours:
        return raw
    from PIL import Image, PngImagePlugin

    source = Image.open(io.BytesIO(raw))
    info = PngImagePlugin.PngInfo()
    for key, value in source.text.items():
        info.add_text(key, value)
    image = source.convert("RGB").quantize(colors=colours, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    # the resolution too (pHYs), from which a reader of the PNG turns points into pixels
    image.save(out, format="PNG", optimize=True, pnginfo=info, dpi=source.info.get("dpi", (dpi, dpi)))
    return out.getvalue()


def set_alt(fig: matplotlib.figure.Figure, text: str) -> matplotlib.figure.Figure:
    """Attach to ``fig`` the alt text of the frame it becomes (what the figure shows, from
    the values it was drawn from): an explorer's ``draw_*`` calls it. Returns ``fig``."""
    fig._attnclust_alt = str(text)
    return fig


def alt_of(fig: matplotlib.figure.Figure, default: str = "") -> str:
    """The alt text :func:`set_alt` attached to ``fig``, or ``default``."""
    return getattr(fig, "_attnclust_alt", None) or default


def render_frames(draw: Callable[..., matplotlib.figure.Figure], grid: Grid,
                  dpi: int = DPI, progress: bool = False, alt: str = "",
                  alts: list | None = None) -> list[bytes]:
    """``draw(**point)`` at every point of the grid, as PNG bytes, in :meth:`Grid.points`
    order. A figure that ``draw`` returns is closed once saved (also when pyplot made it).
    When ``alts`` is a list, each frame's alt text is appended to it (:func:`alt_of` the
    figure, ``alt`` when ``draw`` attached none)."""
    points = grid.points()
    if progress:
        from tqdm.auto import tqdm

        points = tqdm(points, desc="static explorer frames", leave=False)
    frames = []
    for point in points:
        fig = draw(**point)
        frames.append(frame_png(fig, dpi))
        if alts is not None:
            alts.append(alt_of(fig, alt))
        plt.close(fig)
    return frames


_SCRIPT = """
(function () {
  const root = document.getElementById(%(id)s);
  if (!root) return;
  const spec = JSON.parse(root.querySelector('script[type="application/json"]').textContent);
  const img = root.querySelector('img');
  const first = img.getAttribute('src');  // the default frame, in the page's HTML
  const inputs = Array.from(root.querySelectorAll('input[type="range"]'));
  function show() {
    let index = 0;
    inputs.forEach((input, i) => {
      const k = Number(input.value);
      index = index * spec.sizes[i] + k;
      input.nextElementSibling.textContent = spec.labels[i][k];
      input.setAttribute('aria-valuetext', spec.labels[i][k]);  // read aloud: the value, not the stop
    });
    img.src = spec.frames[index] ? 'data:image/png;base64,' + spec.frames[index] : first;
    img.alt = spec.alts[index];  // what this frame shows, from its computed values
    root.dataset.frame = String(index);
  }
  inputs.forEach(input => input.addEventListener('input', show));
  show();
})();
"""


_STYLE = """
.ac-static-explorer .ac-static-controls { display: flex; flex-wrap: wrap; gap: 0.3em 1.5em; }
.ac-static-explorer .ac-static-slider { display: flex; align-items: center; gap: 0.5em; }
.ac-static-explorer .ac-static-name { min-width: 3.5em; }
.ac-static-explorer output { min-width: 3em; font-variant-numeric: tabular-nums; }
.ac-static-explorer img { display: block; max-width: 100%; margin-top: 0.5em; }
.ac-static-explorer .ac-static-note { font-size: 0.85em; opacity: 0.8; }
"""


def _label(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def held_fixed(grid: Grid) -> str:
    """The note's list of what the grid holds at one value, from the grid itself:
    ``"d = 5, L = 50, seed = 0"`` (each slider's label and value, in slider order; empty
    when every slider varies)."""
    return ", ".join(f"{grid.labels[n]} = {_label(vals[0])}"
                     for n, vals in grid.values.items() if len(vals) == 1)


@dataclass(frozen=True)
class StaticExplorer:
    """Frames of an explorer over a grid, and the HTML that shows them (``_repr_html_``).

    ``alt`` is the alt text of every frame, or one alt text per frame (grid order)."""

    name: str
    grid: Grid
    frames: tuple[bytes, ...]
    alt: str | tuple[str, ...]

    @property
    def alts(self) -> tuple[str, ...]:
        """The alt text of each frame, in grid order."""
        if isinstance(self.alt, str):
            return (self.alt,) * len(self.frames)
        if len(self.alt) != len(self.frames):
            raise ValueError(f"{len(self.alt)} alt texts for {len(self.frames)} frames")
        return tuple(self.alt)

    def default_index(self) -> int:
        """The frame of the grid's defaults."""
        index = 0
        for n, vals in self.grid.values.items():
            index = index * len(vals) + list(vals).index(self.grid.defaults[n])
        return index

    def html(self) -> str:
        names = list(self.grid.values)
        id_ = f"ac-static-{self.name}"
        first, alts = self.default_index(), self.alts
        encoded = [base64.b64encode(f).decode() for f in self.frames]
        default_src = "data:image/png;base64," + encoded[first]
        encoded[first] = ""  # in the page once: the <img>'s src, which the script reuses
        spec = {"names": names, "sizes": [len(self.grid.values[n]) for n in names],
                "labels": [[_label(v) for v in self.grid.values[n]] for n in names],
                "values": [list(self.grid.values[n]) for n in names],
                "alts": list(alts), "frames": encoded}
        rows = []
        for n in names:
            vals = list(self.grid.values[n])
            k = vals.index(self.grid.defaults[n])
            label = html.escape(self.grid.labels[n])
            rows.append(
                f'<label class="ac-static-slider"><span class="ac-static-name">{label}</span>'
                f'<input type="range" min="0" max="{len(vals) - 1}" step="1" value="{k}" '
                f'data-slider="{html.escape(n)}" aria-label="{label}" '
                f'aria-valuetext="{html.escape(_label(vals[k]))}"'
                f'{" disabled" if len(vals) == 1 else ""}>'
                f'<output>{html.escape(_label(vals[k]))}</output></label>')
        fixed = held_fixed(self.grid)
        held = f" Held fixed in this page: {fixed}." if fixed else ""
        note = (f"Precomputed: {self.grid.size} figures drawn by the library when the book was "
                f"built, one for each combination of the slider values above.{held} Run the chapter "
                "in Jupyter for every value of every slider.")
        return (f'<div class="ac-static-explorer" id="{id_}" data-explorer="{html.escape(self.name)}">'
                f"<style>{_STYLE}</style>"
                f'<div class="ac-static-controls">{"".join(rows)}</div>'
                f'<img src="{default_src}" alt="{html.escape(alts[first])}">'
                f'<p class="ac-static-note">{html.escape(note)}</p>'
                f'<script type="application/json">{json.dumps(spec)}</script>'
                f"<script>{_SCRIPT % {'id': json.dumps(id_)}}</script></div>")

    def _repr_html_(self) -> str:
        return self.html()


class _Both:
    """The live explorer's widget view, and the static explorer's HTML, in one output."""

    def __init__(self, live, static: StaticExplorer):
        self.live, self.static = live, static

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = dict(self.live._repr_mimebundle_(include=include, exclude=exclude) or {})
        data["text/html"] = self.static.html()
        return data


def explorer(name: str, live, draw: Callable[..., matplotlib.figure.Figure],
             values: Mapping[str, Sequence], defaults: Mapping[str, object], alt: str,
             progress: bool = True):
    """The live explorer ``live`` (an ipywidgets box whose ``sliders`` maps names to
    controls) with its static twin: ``draw`` at every combination of ``values`` (a
    :class:`Grid` labelled with the live sliders' descriptions; :func:`render_frames`).
    Displayed, it is the live widget in Jupyter and the static explorer in the HTML book.
    ``alt`` describes a frame whose figure carries no alt text of its own (:func:`set_alt`:
    the explorers' ``draw_*`` attach one from the values they computed)."""
    labels = {n: getattr(live.sliders[n], "description", n) or n for n in values}
    grid = Grid(values, labels, {n: defaults[n] for n in values})
    alts: list[str] = []
    frames = tuple(render_frames(draw, grid, progress=progress, alt=alt, alts=alts))
    both = _Both(live, StaticExplorer(name, grid, frames, tuple(alts)))
    both.sliders = getattr(live, "sliders", None)
    return both


def twin(func: Callable, live, values: Mapping[str, Sequence], defaults: Mapping[str, object],
         alt: str, progress: bool = True):
    """:func:`explorer` for the registered explorer function ``func``
    (:func:`attnclust.book.widgets.register`): the static twin carries the name it was
    registered under, and its frames are drawn by the registered ``frames`` function."""
    from attnclust.book.widgets._registry import spec_of

    spec = spec_of(func)
    return explorer(spec.name, live, spec.frames, values, defaults, alt, progress=progress)

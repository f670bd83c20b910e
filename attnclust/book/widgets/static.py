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

__all__ = ["Grid", "StaticExplorer", "explorer", "twin", "frame_png", "render_frames"]

DPI = 64
"""Resolution of the frames (the live explorers draw at the notebook's default)."""

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
    """The figure as PNG bytes (what one frame of a static explorer shows), reduced to an
    adaptive palette of ``colours`` colours (``COLOURS`` by default; 0: full colour).
    Deterministic: the same figure gives the same bytes."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        # matplotlib's hint when placing a legend (loc="best") took over a second: a matter
        # of the machine's load and of a garbage collection falling in that second, not of
        # the figure (an explorer's frames are drawn by the hundred; the book build failed
        # once on it, under load, as a cell's stderr)
        warnings.filterwarnings("ignore", message='Creating legend with loc="best" can be slow')
        fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    if not colours:
        return buf.getvalue()
    from PIL import Image

    image = Image.open(buf).convert("RGB").quantize(colors=colours, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def render_frames(draw: Callable[..., matplotlib.figure.Figure], grid: Grid,
                  dpi: int = DPI, progress: bool = False) -> list[bytes]:
    """``draw(**point)`` at every point of the grid, as PNG bytes, in :meth:`Grid.points`
    order. A figure that ``draw`` returns is closed once saved (also when pyplot made it)."""
    points = grid.points()
    if progress:
        from tqdm.auto import tqdm

        points = tqdm(points, desc="static explorer frames", leave=False)
    frames = []
    for point in points:
        fig = draw(**point)
        frames.append(frame_png(fig, dpi))
        plt.close(fig)
    return frames


_SCRIPT = """
(function () {
  const root = document.getElementById(%(id)s);
  if (!root) return;
  const spec = JSON.parse(root.querySelector('script[type="application/json"]').textContent);
  const img = root.querySelector('img');
  const inputs = Array.from(root.querySelectorAll('input[type="range"]'));
  function show() {
    let index = 0;
    inputs.forEach((input, i) => {
      const k = Number(input.value);
      index = index * spec.sizes[i] + k;
      input.nextElementSibling.textContent = spec.labels[i][k];
      input.setAttribute('aria-valuetext', spec.labels[i][k]);  // read aloud: the value, not the stop
    });
    img.src = 'data:image/png;base64,' + spec.frames[index];
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


@dataclass(frozen=True)
class StaticExplorer:
    """Frames of an explorer over a grid, and the HTML that shows them (``_repr_html_``)."""

    name: str
    grid: Grid
    frames: tuple[bytes, ...]
    alt: str

    def html(self) -> str:
        names = list(self.grid.values)
        id_ = f"ac-static-{self.name}"
        spec = {"names": names, "sizes": [len(self.grid.values[n]) for n in names],
                "labels": [[_label(v) for v in self.grid.values[n]] for n in names],
                "values": [list(self.grid.values[n]) for n in names],
                "frames": [base64.b64encode(f).decode() for f in self.frames]}
        rows, fixed = [], []
        for n in names:
            vals = list(self.grid.values[n])
            k = vals.index(self.grid.defaults[n])
            label = html.escape(self.grid.labels[n])
            if len(vals) == 1:  # a slider the grid keeps at one value: shown, not movable
                fixed.append(f"{self.grid.labels[n]} = {_label(vals[0])}")
            rows.append(
                f'<label class="ac-static-slider"><span class="ac-static-name">{label}</span>'
                f'<input type="range" min="0" max="{len(vals) - 1}" step="1" value="{k}" '
                f'data-slider="{html.escape(n)}" aria-label="{label}" '
                f'aria-valuetext="{html.escape(_label(vals[k]))}"'
                f'{" disabled" if len(vals) == 1 else ""}>'
                f'<output>{html.escape(_label(vals[k]))}</output></label>')
        held = (f" Held fixed in this page: {', '.join(fixed)}." if fixed else "")
        note = (f"Precomputed: {self.grid.size} figures drawn by the library when the book was "
                f"built, one for each combination of the slider values above.{held} Run the chapter "
                "in Jupyter for every value of every slider.")
        return (f'<div class="ac-static-explorer" id="{id_}" data-explorer="{html.escape(self.name)}">'
                f"<style>{_STYLE}</style>"
                f'<div class="ac-static-controls">{"".join(rows)}</div>'
                f'<img alt="{html.escape(self.alt)}">'
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
    ``alt`` describes the figure (every frame)."""
    labels = {n: getattr(live.sliders[n], "description", n) or n for n in values}
    grid = Grid(values, labels, {n: defaults[n] for n in values})
    frames = tuple(render_frames(draw, grid, progress=progress))
    both = _Both(live, StaticExplorer(name, grid, frames, alt))
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

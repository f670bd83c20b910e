"""The widget section of the benchmark (benchmarks/run.py, ``bench_widgets``): slider moves
are made on the explorer itself, and a move's time is its update callback less drawing the
PNG, which is timed apart. The mixture explorer is used: it has nothing to compile."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import matplotlib.backend_bases
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture()
def run(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    sys.modules.pop("run", None)
    import run

    yield run
    sys.modules.pop("run", None)


def test_moves_are_made_on_the_explorer_and_drawing_is_timed_apart(run, monkeypatch):
    monkeypatch.setattr(run, "widget_callbacks",
                        lambda: [("attnclust.book.widgets.mixture", "draw_mixture", "mixture_explorer", (("seed", (1, 2)), ("K", (3,))))])
    drawn = []
    canvas = matplotlib.backend_bases.FigureCanvasBase
    real_print = canvas.print_figure

    def slow_print(self, *args, **kwargs):  # a planted 0.3 s PNG: it must land in render_s only
        time.sleep(0.3)
        drawn.append((self.figure, kwargs.get("bbox_inches")))
        return real_print(self, *args, **kwargs)

    monkeypatch.setattr(canvas, "print_figure", slow_print)
    from attnclust.book.widgets import mixture

    calls = []
    real_draw = mixture.draw_mixture
    monkeypatch.setattr(mixture, "draw_mixture", lambda *a, **k: calls.append((a, k)) or real_draw(*a, **k))
    (row,) = run.bench_widgets()
    assert "error" not in row and row["move_errors"] == []
    assert row["moves"] == 3 and len(row["move_s"]) == len(row["render_s"]) == len(row["gc_s"]) == 3
    assert all(r >= 0.3 for r in row["render_s"]) and all(t < 0.3 for t in row["move_s"])
    assert row["wait_p95_s"] >= 0.3  # the reader waits for both
    # the explorer's own update drew into its one figure: opening it, three moves, and the
    # two sliders set back to their defaults; each PNG as the notebook draws it
    assert len(calls) == 6 and len({id(f) for f, _ in drawn}) == 1
    assert {b for _, b in drawn} == {"tight"}
    assert [c[0][4] for c in calls[1:3]] == [1, 2]  # the seed slider's values reached the callback


def test_a_failing_move_is_recorded_not_timed(run, monkeypatch):
    monkeypatch.setattr(run, "widget_callbacks",
                        lambda: [("attnclust.book.widgets.mixture", "draw_mixture", "mixture_explorer", (("seed", (1, 2)), ("nope", (1,))))])
    from attnclust.book.widgets import mixture

    real_draw = mixture.draw_mixture

    def draw(K, r_over_sigma, weight, d, seed, ax=None):
        if seed == 2:
            raise RuntimeError("planted")
        return real_draw(K, r_over_sigma, weight, d, seed, ax=ax)

    monkeypatch.setattr(mixture, "draw_mixture", draw)
    (row,) = run.bench_widgets()
    assert row["moves"] == 1
    assert any(e.startswith("seed=2") for e in row["move_errors"]) and "no slider 'nope'" in row["move_errors"]

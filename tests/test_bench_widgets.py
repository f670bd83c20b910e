"""The widget section of the benchmark (benchmarks/run.py, ``bench_widgets``): slider moves
are made on the explorer itself, and a move's time is its update callback less drawing the
PNG, which is timed apart. The mixture explorer is used: it has nothing to compile."""

from __future__ import annotations

import sys
import time
import types
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


class FakeClock:
    """A ``perf_counter`` that stands still until a test moves it: the benchmark's timings of
    what the test plants are then exact, whatever the load of the machine."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


@pytest.fixture()
def clock(run, monkeypatch):
    """The benchmark module's ``time`` with the fake clock as its ``perf_counter`` (the real
    ``time`` module, used by everything else in the process, is left alone)."""
    fake, fake_time = FakeClock(), types.ModuleType("time")
    fake_time.__dict__.update(vars(time))
    fake_time.perf_counter = fake
    monkeypatch.setattr(run, "time", fake_time)
    return fake


CALLBACK_S, PNG_S = 0.05, 0.3
"""What the planted callback and the planted PNG take on the fake clock."""


def test_moves_are_made_on_the_explorer_and_drawing_is_timed_apart(run, clock, monkeypatch):
    monkeypatch.setattr(run, "widget_callbacks",
                        lambda: [("attnclust.book.widgets.mixture", "draw_mixture", "mixture_explorer", (("seed", (1, 2)), ("K", (3,))))])
    drawn = []
    canvas = matplotlib.backend_bases.FigureCanvasBase
    real_print = canvas.print_figure

    def slow_print(self, *args, **kwargs):  # a planted PNG of PNG_S: it must land in render_s only
        clock.advance(PNG_S)
        drawn.append((self.figure, kwargs.get("bbox_inches")))
        return real_print(self, *args, **kwargs)

    monkeypatch.setattr(canvas, "print_figure", slow_print)
    from attnclust.book.widgets import mixture

    calls = []
    real_draw = mixture.draw_mixture

    def slow_draw(*a, **k):  # a planted callback of CALLBACK_S: it must land in move_s only
        calls.append((a, k))
        clock.advance(CALLBACK_S)
        return real_draw(*a, **k)

    monkeypatch.setattr(mixture, "draw_mixture", slow_draw)
    (row,) = run.bench_widgets()
    assert "error" not in row and row["move_errors"] == []
    assert row["moves"] == 3 and len(row["move_s"]) == len(row["render_s"]) == len(row["gc_s"]) == 3
    # each move's callback time less its PNG, and the PNG apart: the planted times, exactly
    assert row["move_s"] == pytest.approx([CALLBACK_S] * 3)
    assert row["render_s"] == pytest.approx([PNG_S] * 3)
    assert row["first_call_s"] == pytest.approx(CALLBACK_S)  # opening the explorer, its PNG less
    assert row["wait_p95_s"] == pytest.approx(CALLBACK_S + PNG_S)  # the reader waits for both
    # the explorer's own update drew into its one figure: opening it, three moves, and the
    # two sliders set back to their defaults; each PNG as the notebook draws it, once a draw
    assert len(calls) == 6 and len(drawn) == 6 and len({id(f) for f, _ in drawn}) == 1
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


def test_refresh_widgets_replaces_only_the_widget_section(run, monkeypatch, tmp_path):
    """``run.py --refresh-widgets`` measures the explorers alone and puts them into the
    committed results file: its widget rows and "Widget callbacks" metrics are replaced,
    everything else is kept, and the run's date and load are recorded apart."""
    import json

    from attnclust.book import perf

    committed = json.loads((BENCH / "results.json").read_text())
    out = tmp_path / "results.json"
    out.write_text(json.dumps(committed))
    row = {"module": "m", "callback": "draw_toy", "explorer": "toy_explorer", "first_call_s": 0.1,
           "move_s": [0.05], "render_s": [0.1], "gc_s": [0.0], "gc_max_s": 0.0, "p95_without_gc_s": 0.05,
           "render_p95_s": 0.1, "wait_p95_s": 0.15, "gc_objects": 1, "gc_frozen": 0, "p50_s": 0.05,
           "p95_s": 0.05, "max_s": 0.05, "moves": 1, "move_errors": [], "load": 0.5,
           "full_collection_s": 0.01, "full_collection_unfrozen_s": 0.1}
    monkeypatch.setattr(run, "bench_widgets", lambda: [row])
    assert run.refresh_widgets(out) == 0
    fresh = json.loads(out.read_text())
    perf.validate(fresh)
    assert fresh["widgets"] == [row] and "widgets_run" in fresh
    widget = [m for m in fresh["metrics"] if m["section"] == "Widget callbacks"]
    assert {m["id"] for m in widget} >= {"widget_draw_toy_wait_p95", "widget_wait_p95_max"}
    assert next(m for m in widget if m["id"] == "widget_wait_p95_max")["value"] == 0.15
    others = [m for m in committed["metrics"] if m["section"] != "Widget callbacks"]
    assert [m for m in fresh["metrics"] if m["section"] != "Widget callbacks"] == others
    assert {k: v for k, v in fresh.items() if k not in ("widgets", "metrics", "widgets_run")} == \
        {k: v for k, v in committed.items() if k not in ("widgets", "metrics", "widgets_run")}

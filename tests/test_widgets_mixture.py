"""The mixture explorer: every slider through every value of its grid, one slider at a time
from the defaults, as the explorer redraws (into its own axes); every move must change the
figure. (How fast a move is, against the 0.3 s goal, is measured by ``make bench``; the
callback's other tests are in tests/test_figures_theory_a.py.)"""

import numpy as np
import pytest

from attnclust.book.widgets import mixture as wm
from attnclust.book.widgets import slider_values, time_moves


def _data_of(fig):
    return np.concatenate([np.asarray(c.get_offsets(), float).ravel()
                           for ax in fig.axes for c in ax.collections])


@pytest.mark.slow
def test_every_slider_move_changes_the_figure():
    box = wm.mixture_explorer()  # draws the defaults into box.figure
    ax = box.figure.axes[0]
    base = _data_of(box.figure)
    assert not hasattr(wm, "prepare")  # nothing to compile: NumPy only

    def changed(_, name, value):
        moved = _data_of(box.figure)
        assert base.shape != moved.shape or not np.allclose(base, moved), (name, value)

    moves = time_moves(lambda **move: wm.draw_mixture(**{**wm.DEFAULTS, **move}, ax=ax),
                       box.sliders, wm.DEFAULTS, changed)
    assert len(moves) == sum(len(slider_values(c)) - 1 for c in box.sliders.values())

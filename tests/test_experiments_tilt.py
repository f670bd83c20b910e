"""attnclust.book.experiments.tilt_seeds: the tilt at every temperature with its own seeds, and the
committed results file's shape (chapter "Training dynamics", section "The measured tilt")."""

import numpy as np
import pytest

from attnclust.book import sweeps
from attnclust.metrics import alignment
from attnclust.mixture import orthogonal_mixture
from attnclust.book.experiments import tilt_seeds as ts
from attnclust.book.experiments import training as tr


def _toy(cos):
    cos = np.asarray(cos, np.float64)
    return ts.TiltSeeds(dict(L=50), (0.5, 2.0), cos, np.array([0.97, 0.99]))


def test_statistics_over_seeds():
    """The per-seed value is the mean of the two heads; the gap is the interval of the mean
    shifted by the minimiser's |cos|; the rise is paired by seed."""
    cos = np.array([[[0.96, 0.98], [0.97, 0.99], [0.98, 0.98]],
                    [[0.99, 0.99], [0.98, 1.00], [0.995, 0.995]]])
    t = _toy(cos)
    assert t.seeds == 3
    np.testing.assert_allclose(t.per_seed(), [[0.97, 0.98, 0.98], [0.99, 0.99, 0.995]])
    iv, gap = t.interval(0), t.gap(0)
    assert iv.estimate == pytest.approx(0.9766666, abs=1e-6) and iv.n == 3
    assert gap.estimate == pytest.approx(iv.estimate - 0.97) and gap.low == pytest.approx(iv.low - 0.97)
    rise = t.rise(0)
    assert rise.wins == 3 and rise.difference.estimate == pytest.approx(np.mean([0.02, 0.01, 0.015]))
    back = ts.TiltSeeds.from_data(t.as_data())
    np.testing.assert_array_equal(back.cos, t.cos)
    assert back.lams == t.lams


@pytest.mark.usefixtures("typecheck_off")
def test_tilt_seeds_needs_two_temperatures():
    with pytest.raises(ValueError, match="lams"):
        ts.tilt_seeds("test", 2, (1.0,))


@pytest.mark.integration
def test_small_size_runs_every_temperature_with_shared_keys():
    """The test size trains seeds x temperatures runs with the keys shared across temperatures
    (run i starts from the same heads at every temperature, the heads of a plain run_seeds
    call), and the temperature reaches the training."""
    cfg = ts.SIZES["test"]
    t = ts.TiltSeeds.from_data(ts.experiment("test"))
    assert t.cos.shape == (len(cfg["lams"]), cfg["seeds"], 2) and t.lams == cfg["lams"]
    np.testing.assert_allclose(t.theory, [tr.tilted_cos(lam, 2.0, 0.5) for lam in cfg["lams"]])
    n = len(cfg["lams"])
    both = sweeps.run_seeds(cfg["budget"], lam=tuple(lam for lam in cfg["lams"] for _ in range(cfg["seeds"])),
                            init="near", seeds=n * cfg["seeds"], repeat_keys=n)
    one = sweeps.run_seeds(cfg["budget"], lam=cfg["lams"][0], init="near", seeds=cfg["seeds"])
    blocks = both.theta0.reshape(n, cfg["seeds"], *both.theta0.shape[1:])
    np.testing.assert_array_equal(blocks[0], blocks[1])
    np.testing.assert_array_equal(blocks[0], one.theta0)
    # the experiment's runs are these: the keys shared across temperatures
    ends = alignment(sweeps.tail_average(both), orthogonal_mixture().centroids)
    np.testing.assert_allclose(t.cos, np.asarray(ends).reshape(t.cos.shape), rtol=1e-6)
    # the temperature reaches the training: the same start ends differently
    assert not np.allclose(both.thetas[: cfg["seeds"], -1], both.thetas[cfg["seeds"]:, -1])


def test_stored_tilt_has_the_chapters_shape():
    """results/training-tilt-seeds.json: at least 16 seeds at every temperature of the chapter's
    grid, at the small budget's length, started near the centroids, written at full size and
    fresh (its sources unchanged since)."""
    t, st = ts.stored()
    assert st.data["size"] == "full" and not st.stale
    assert t.lams == tr.LAMS_TILT and t.seeds >= 16
    assert t.cos.shape == (len(t.lams), t.seeds, 2) and t.theory.shape == (len(t.lams),)
    assert t.setting["L"] == sweeps.budget("small").L and t.setting["init"] == "near"
    assert np.all((t.cos > 0.9) & (t.cos <= 1.0))

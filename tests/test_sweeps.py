"""attnclust.book.sweeps: the training experiments' helpers (chapter "Training dynamics")."""

import numpy as np
import pytest

import attnclust as ac
from attnclust.book import sweeps


def test_scaled_lr_keeps_total_jitter():
    assert sweeps.scaled_lr(2e-2, 5) == pytest.approx(2e-2)
    # lr * sqrt(d) is the same at every d
    for d in (2, 10, 20, 50):
        assert sweeps.scaled_lr(2e-2, d) * np.sqrt(d) == pytest.approx(2e-2 * np.sqrt(5))
    with pytest.raises(ValueError, match="d"):
        sweeps.scaled_lr(1e-2, 0)


def test_classify_codes():
    mu = ac.orthogonal_mixture().centroids
    aligned = np.array([[0.93, -0.16, 0, 0, 0], [-0.16, 0.93, 0, 0, 0]])
    between = np.array([[0.65, 0.65, 0, 0, 0], [0.67, -0.67, 0, 0, 0]])
    off = np.array([[0.5, 0.1, 1.0, 0, 0], [0.1, 0.9, 0, 0, 0]])
    transit = np.array([[0.1, 0.99, 0, 0, 0], [0.9, 0.43, 0, 0, 0]])
    dead = np.array([[0.0, 0, 0, 0, 0], [0.1, 0.9, 0, 0, 0]])
    codes = sweeps.classify(np.stack([aligned, between, off, dead, transit]), mu)
    assert codes.tolist() == [sweeps.ALIGNED, sweeps.BETWEEN, sweeps.OTHER, sweeps.OTHER,
                              sweeps.OTHER]


def test_mean_band_and_tail_average_sign():
    v = np.arange(10.0)[:, None] * np.ones((1, 3))
    mean, lo, hi = sweeps.mean_band(v)
    assert np.allclose(mean, 4.5) and np.all(lo <= mean) and np.all(mean <= hi)
    thetas = np.ones((1, 8, 2, 3))
    thetas[0, 6, 0] *= -1  # one record with head 1 flipped: the same head
    res = ac.FitResult(thetas[:, -1], np.arange(8), np.zeros((1, 8)), thetas, thetas[:, 0])
    assert np.allclose(sweeps.tail_average(res, 0.5), 1.0)


def test_run_seeds_validation():
    with pytest.raises(ValueError, match="size"):
        sweeps.budget("medium")
    with pytest.raises(ValueError, match="init"):
        sweeps.run_seeds(init="huge")
    with pytest.raises(ValueError, match="one value per seed"):
        sweeps.run_seeds(lam=(1.0, 2.0))
    assert set(sweeps.BUDGETS) >= {"small", "long", "full", "test"}
    assert sweeps.budget("long").steps == 10 * sweeps.budget("small").steps


@pytest.mark.slow
def test_run_seeds_small_run():
    res = sweeps.run_seeds("small", init="near", steps=40, seeds=2)
    assert res.thetas.shape == (2, 10, 2, 5)
    al = res.final_alignment(ac.orthogonal_mixture().centroids)
    assert np.all((al >= 0) & (al <= 1 + 1e-9))
    assert sweeps.run_seeds("small", init="near", steps=40, seeds=2) is res  # cached


def test_head_distance_ignores_order_and_sign():
    ref = np.array([[1.0, 0, 0], [0, 2.0, 0]])
    moved = np.array([[0, -2.0, 0.1], [-1.0, 0, 0]])
    assert sweeps.head_distance(moved, ref) == pytest.approx(0.1)
    assert sweeps.head_distance(np.stack([ref, moved]), ref) == pytest.approx([0.0, 0.1])


def test_steps_to():
    mu = np.eye(2, 5)
    far = np.array([[0.6, 0.8, 0, 0, 0], [0.8, 0.6, 0, 0, 0]])
    thetas = np.stack([np.stack([far, far, np.eye(2, 5), np.eye(2, 5)]),
                       np.stack([far] * 4)])
    res = ac.FitResult(thetas[:, -1], np.array([10, 20, 30, 40]), np.zeros((2, 4)), thetas,
                       thetas[:, 0])
    out = sweeps.steps_to(res, mu, 0.9)
    assert out[0] == 30 and np.isnan(out[1])

"""attnclust.book.experiments.training and .landscape: the summaries of training runs, the finite-L
landscape's statistics, and the committed results files' shape (chapter "Training dynamics")."""

import numpy as np
import pytest

import attnclust as ac
from attnclust.book import sweeps
from attnclust.book.experiments import landscape as ls
from attnclust.book.experiments import training as tr


def _runs(codes, worst_final=None):
    S = len(codes)
    steps = np.array([10, 20, 30, 40])
    worst = np.tile(np.array([0.1, 0.5, 0.96, 0.97]), (S, 1))
    worst[1] = [0.1, 0.2, 0.3, 0.4]
    final = np.tile(np.eye(2, 5), (S, 1, 1))
    cos = np.full((S, 2), 0.98) if worst_final is None else np.repeat(np.asarray(worst_final)[:, None], 2, 1)
    setting = dict(K=2, d=5, r=2.0, sigma=0.5, lam=1.0, init="small", seeds=S)
    return tr.Runs(setting, steps, worst, final, cos, np.asarray(codes), np.zeros((S, 4)),
                   np.zeros((S, 2, 5)), np.zeros((S, 4, 2, 5)))


def test_runs_counts_rates_and_round_trip():
    r = _runs([sweeps.ALIGNED, sweeps.BETWEEN, sweeps.ALIGNED, sweeps.OTHER])
    assert (r.count("aligned"), r.count("between"), r.count("other")) == (2, 1, 1)
    iv = r.rate("between")
    assert iv.estimate == 0.25 and iv.low < 0.25 < iv.high and iv.method == "exact binomial"
    np.testing.assert_array_equal(r.steps_to(0.95), [30, np.nan, 30, 30])
    back = tr.Runs.from_data(r.as_data())
    np.testing.assert_array_equal(back.codes, r.codes)
    np.testing.assert_allclose(back.final, r.final)
    assert back.setting == r.setting and back.thetas.size == 0
    np.testing.assert_allclose(r.centroids, ac.orthogonal_mixture().centroids)
    with pytest.raises(ValueError, match="name"):
        r.count("stuck")


def test_summarise_classifies_like_sweeps():
    mu = np.asarray(ac.orthogonal_mixture().centroids)
    aligned = np.array([[0.93, -0.16, 0, 0, 0], [-0.16, 0.93, 0, 0, 0]])
    between = np.array([[0.65, 0.65, 0, 0, 0], [0.67, -0.67, 0, 0, 0]])
    thetas = np.stack([np.repeat(aligned[None], 8, 0), np.repeat(between[None], 8, 0)])
    res = ac.FitResult(thetas[:, -1], np.arange(1, 9) * 5, np.zeros((2, 8)), thetas, thetas[:, 0])
    r = tr.summarise(res, dict(K=2, d=5, r=2.0, sigma=0.5))
    assert r.codes.tolist() == [sweeps.ALIGNED, sweeps.BETWEEN]
    np.testing.assert_allclose(r.cos, ac.alignment(thetas[:, -1], mu))
    assert r.worst.shape == (2, 8)


def test_lam_per_seed_covers_grid():
    lams = tr.lam_per_seed("small")
    assert len(lams) == sweeps.budget("small").seeds and set(lams) == set(tr.LAMS_TILT)


def _landscape(means, limit=-0.2, spread=0.01, Ls=(25, 50, 100, 200), S=8):
    rng = np.random.default_rng(0)
    smallest = np.asarray(means)[:, None] + spread * rng.standard_normal((len(Ls), S))
    return ls.Landscape("split", ls.point_setting("split"), tuple(Ls), (8,) * len(Ls), 1000,
                        smallest, 4 + smallest, np.zeros_like(smallest), np.array([limit, 4.0]))


def test_landscape_sign_change_and_crossing():
    """Means following limit + a / L cross zero at L = -a / limit: the fit finds it, the
    bracket of the grid contains it, and the bootstrap interval covers it."""
    Ls = (25, 35, 50, 70, 100, 140, 200, 400)
    limit, a = -0.2, 14.0  # crossing at L = 70
    la = _landscape([limit + a / L for L in Ls], limit=limit, spread=0.002, Ls=Ls)
    assert la.sign_change() == (50, 100)  # 70 itself is undecided
    assert la.crossing() == pytest.approx(70, rel=0.05)
    iv = la.crossing_interval(n_boot=200)
    assert iv.low < 70 < iv.high
    lo, hi = la.prediction(50, tokens=1000)
    assert lo < la.smallest[2].mean() < hi
    wide = la.prediction(50, tokens=250)  # a quarter of the tokens: twice the spread of one sample
    assert wide[1] - wide[0] > 1.5 * (hi - lo)
    back = ls.Landscape.from_data(la.as_data())
    np.testing.assert_allclose(back.smallest, la.smallest)
    assert back.Ls == la.Ls and back.risk_difference.size == 0


def test_landscape_without_a_change():
    la = _landscape([0.3, 0.2, 0.15, 0.1], limit=0.05)
    assert la.sign_change() == (200, None) and np.isnan(la.crossing())


def test_family_directions_and_twist():
    D = ls.family_directions("split")
    assert D.shape == (2, 2, 5) and np.allclose(np.linalg.norm(D.reshape(2, -1), axis=1), 1)
    D3 = ls.family_directions("symmetric")
    assert D3.shape == (2, 3, 5) and np.allclose(D3[1, 0, :3], [0, 1, 1])
    sym = 0.94 * np.eye(3, 5) - 0.1 * (1 - np.eye(3, 5))
    sym[:, 3:] = 0
    turned = ls._turn(sym, np.radians(12.0))
    assert ls.twist_angle(turned, sym) == pytest.approx(12.0, abs=1e-6)
    assert ls.twist_angle(-turned[[2, 0, 1]], sym) == pytest.approx(12.0, abs=1e-6)  # order, signs
    with pytest.raises(ValueError, match="point"):
        ls.family_directions("saddle")


def test_stored_landscape_has_the_chapters_shape():
    """results/training-landscape.json: both points on their grids, a sample axis of at least
    two independent samples, R_inf's spectrum as the limit, the K = 3 points."""
    d = ls.stored()
    for la, K in ((d.split, 2), (d.symmetric, 3)):
        assert la.setting["K"] == K and 50 in la.Ls and la.samples >= 2
        assert la.smallest.shape == la.second.shape == la.moved.shape == (len(la.Ls), la.samples)
        assert la.limit.shape == (K * 5,) and np.all(np.diff(la.limit) >= 0)
        assert np.all(la.second >= la.smallest)
    assert d.symmetric.risk_difference.shape == d.symmetric.smallest.shape
    for key in ("symmetric", "rotated"):
        assert np.asarray(d.k3[key]["theta"]).shape == (3, 5)
    assert d.k3["rotated"]["risk"] < d.k3["symmetric"]["risk"]


def test_stored_long_budget_has_the_chapters_shape():
    long = tr.stored_long()
    b = sweeps.budget("long")
    assert set(long.inits) == set(ac.INITS)
    for r in long.inits.values():
        assert r.seeds == b.seeds and r.setting["steps"] == b.steps
        assert r.final.shape == (b.seeds, 2, 5) and r.worst.shape[0] == b.seeds
    assert long.k3.final.shape == (b.seeds, 3, 5)
    assert long.k3_against.to_symmetric.shape == (b.seeds,)
    assert long.stall.newton_eigenvalues.shape == (long.stall.n, 10)


_K3_POINT = """
from attnclust.book.experiments import landscape
p = landscape.k3_points(1000)
print(p.twist, p.rotated.kind, p.rotated.eigenvalues[0])
"""


@pytest.mark.integration
@pytest.mark.parametrize("xla_flags", ["--xla_backend_optimization_level=1", None], ids=["level-1", "xla-default"])
def test_k3_rotated_minimiser_does_not_depend_on_xla_rounding(xla_flags):
    """From the symmetric K = 3 point turned by 0.05 rad, BFGS then Newton reach the rotated
    local minimum of R_inf, about 18 degrees round the mixture-mean axis, with XLA's default
    settings (what ``python -m attnclust experiment`` runs with) as with the tests' LLVM
    level 1. Without BFGS's restarts after a float32 precision-loss stop, XLA's default
    returned to the symmetric saddle (twist 0, a negative eigenvalue)."""
    import os
    import subprocess
    import sys

    env = {key: value for key, value in os.environ.items() if key != "XLA_FLAGS"}
    env.update({"JAX_PLATFORMS": "cpu"} | ({"XLA_FLAGS": xla_flags} if xla_flags else {}))
    out = subprocess.run([sys.executable, "-c", _K3_POINT], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    twist, *kind, smallest = out.stdout.split()
    assert float(twist) == pytest.approx(18.09, abs=0.05)
    assert " ".join(kind) == "local minimum" and float(smallest) > 0.05

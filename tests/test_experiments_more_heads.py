"""attnclust.book.experiments.more_heads: H > K heads on the K = 2 mixture (chapter "Beyond the
paper", section "More heads than clusters"): the measures of the heads, the nested starts and
shared batches, the held-out risk, and the committed results file's shape."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attnclust as ac
from attnclust.book import sweeps
from attnclust.book.experiments import more_heads as mh

E = np.eye(5)
MU = 2.0 * E[:2]


def _runs(theta, budget="small", inf=False):
    theta = np.asarray(theta, np.float64)
    S, H, _ = theta.shape
    return mh.HeadRuns(H, budget, 8, theta, np.arange(S, dtype=float), np.zeros(3), np.ones(3),
                       theta.copy() if inf else np.zeros((0, H, 5)), np.zeros(S) if inf else np.zeros(0))


def test_outside_dimensions_counts_the_span_beyond_the_centroids():
    assert mh.outside_dimensions(np.stack([E[0], E[1], E[2]]), MU) == pytest.approx(1.0)
    assert mh.outside_dimensions(np.stack([E[3], E[4]]), MU) == pytest.approx(2.0)
    assert mh.outside_dimensions(np.stack([E[0], 3 * E[0]]), MU) == pytest.approx(0.0)  # rank one, inside
    # a head half in the plane, half out: the span reaches half a dimension outside
    half = np.stack([(E[0] + E[2]) / np.sqrt(2)])
    assert mh.outside_dimensions(half, MU) == pytest.approx(0.5)
    # a batch of two sets of heads
    np.testing.assert_allclose(mh.outside_dimensions(np.stack([np.stack([E[0], E[3]]), np.stack([E[3], E[4]])]), MU),
                               [1.0, 2.0], atol=1e-12)


@given(arrays(np.float64, (3, 5), elements=st.floats(-2, 2)), st.integers(0, 2), st.sampled_from([-1.0, 0.5, 3.0]))
def test_outside_dimensions_sees_the_span_only(theta, h, c):
    """It depends on the heads' span alone (not their order, signs or lengths), and lies
    between rank - K and rank."""
    s = np.linalg.svd(theta, compute_uv=False)
    if s[-1] < 1e-3 * s[0] or s[0] < 1e-3:
        return  # nearly rank-deficient: the span is not well defined
    base = mh.outside_dimensions(theta, MU)
    other = theta[::-1].copy()
    other[h] *= c
    assert mh.outside_dimensions(other, MU) == pytest.approx(base, abs=1e-8)
    assert 3 - 2 - 1e-9 <= base <= 3 + 1e-9


def test_head_measures_on_known_heads():
    """Seed 0: both centroids aligned and an extra head along the mixture mean; seed 1: one
    aligned head, one head between the centroids, and a tiny extra head out of the plane."""
    mean = (E[0] + E[1]) / np.sqrt(2)
    theta = np.stack([np.stack([E[0], -E[1], mean]),
                      np.stack([E[0], np.cos(0.6) * E[1] + np.sin(0.6) * E[2], 0.01 * E[4]])])
    r = _runs(theta)
    assert r.seeds == 2 and not r.has_inf
    np.testing.assert_array_equal(r.aligned_heads(), [2, 1])
    np.testing.assert_array_equal(r.covered(), [True, False])
    np.testing.assert_array_equal(r.extra(), [[False, False, True], [False, False, True]])
    np.testing.assert_allclose(r.norms(), [[1, 1, 1], [1, 1, 0.01]])
    np.testing.assert_allclose(r.mean_cos()[0], [2**-0.5, 2**-0.5, 1.0])
    np.testing.assert_allclose(r.in_plane()[1], [1.0, np.cos(0.6), 0.0], atol=1e-12)
    np.testing.assert_array_equal(r.shrunk(), [[False, False, False], [False, False, True]])
    np.testing.assert_array_equal(r.noise_heads(), [[False, False, False], [False, False, True]])
    np.testing.assert_allclose(r.coverage(), [1.0, np.cos(0.6)])
    # seed 1 spans e_1, e_5 and the tilted head: 3 dimensions, 1 + cos^2 of them in the plane
    np.testing.assert_allclose(r.outside(), [0.0, 1 + np.sin(0.6) ** 2], atol=1e-12)
    np.testing.assert_allclose(r.cos().shape, (2, 3, 2))
    with pytest.raises(ValueError, match="large-L"):
        r.nearest(large_L=True)


def test_head_runs_round_trip():
    theta = np.random.default_rng(0).normal(size=(2, 3, 5))
    r = _runs(theta, budget="long", inf=True)
    back = mh.HeadRuns.from_data(r.as_data())
    assert (back.H, back.budget, back.steps) == (3, "long", 8) and back.has_inf
    np.testing.assert_array_equal(back.theta, r.theta)
    np.testing.assert_array_equal(back.nearest(large_L=True), r.nearest())


def test_heldout_risk_is_the_empirical_risk_of_each_prompt(key, mixture):
    X, _ = ac.sample(key, mixture, 3, 20)
    theta = np.random.default_rng(1).normal(size=(2, 3, 5)) * 0.5
    per = mh.heldout_risk(theta, X, 1.0)
    assert per.shape == (2, 3)
    want = [[float(ac.empirical_risk(th, x[None], 1.0)) for x in X] for th in theta]
    np.testing.assert_allclose(per, want, rtol=1e-5)


@pytest.mark.usefixtures("typecheck_off")
def test_heldout_risk_refuses_bad_shapes():
    with pytest.raises(ValueError, match="theta must be"):
        mh.heldout_risk(np.zeros((2, 5)), np.zeros((1, 4, 5)))


@pytest.mark.slow
def test_nested_runs_share_their_start_and_batches(monkeypatch):
    """The H = 3 run starts from the H = 2 run's heads plus one; with that head at zero (its
    gradient vanishes there, so Adam leaves it) the two runs train on the same batches and
    end at the same heads."""
    init = mh.init_theta

    def third_at_zero(*args, **kw):
        return init(*args, **kw).at[2:].set(0.0)

    fits = mh.train_nested("test", 2, heads=(2, 3), steps=8)
    np.testing.assert_array_equal(fits[3].theta0[:, :2], fits[2].theta0)
    assert np.all(fits[3].theta0[:, 2] != 0)
    monkeypatch.setattr(mh, "init_theta", third_at_zero)
    zero = mh.train_nested("test", 2, heads=(2, 3), steps=8)
    np.testing.assert_array_equal(zero[3].theta[:, 2], 0.0)
    np.testing.assert_allclose(zero[3].theta[:, :2], fits[2].theta, rtol=1e-4, atol=1e-6)


@pytest.mark.integration
def test_experiment_at_test_size():
    data = mh.experiment("test")
    cfg = mh.SIZES["test"]
    assert set(data["budgets"]) == {"small", "long"} and data["seeds"] == cfg["seeds"]
    for budget, x in data["budgets"].items():
        runs = {int(H): mh.HeadRuns.from_data(r) for H, r in x["runs"].items()}
        assert sorted(runs) == list(mh.HEADS)
        for H, r in runs.items():
            assert r.theta.shape == (cfg["seeds"], H, 5) and r.steps == cfg["steps"][budget]
            assert r.prompt_risk_best.shape == (cfg["prompts"],)
            assert r.prompt_risk_best.mean() == pytest.approx(r.risk.min())
            assert r.prompt_risk_worst.mean() == pytest.approx(r.risk.max())
            np.testing.assert_array_equal(r.extra().sum(-1), H - 2)
            assert r.has_inf == (budget == "long")


def test_stored_runs_have_the_chapters_shape():
    """results/beyond-more-heads.json: at least 16 seeds of every H at the small and the long
    budget (their own steps), the large-L minimisers of the long runs, written at full size and
    fresh."""
    got = mh.stored()
    assert got.stored.data["size"] == "full" and not got.stored.stale
    assert set(got.runs) == {"small", "long"} and got.setting["seeds"] >= 16
    for budget, runs in got.runs.items():
        assert sorted(runs) == list(mh.HEADS)
        for H, r in runs.items():
            assert r.seeds == got.setting["seeds"] and r.theta.shape[1:] == (H, 5)
            assert r.steps == sweeps.budget(budget).steps
            assert r.has_inf == (budget == "long")
            assert np.all((r.nearest() >= 0) & (r.nearest() <= 1 + 1e-9))

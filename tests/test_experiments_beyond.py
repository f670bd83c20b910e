"""attnclust.book.experiments.beyond: the settings of the chapter "Beyond the paper", the summaries
of their training runs, and the committed results file's shape."""

import numpy as np
import pytest

import attnclust as ac
from attnclust.book.experiments import beyond as ex


def test_settings_and_span_coverage():
    sets = ex.settings()
    assert len(sets) == 7 and all(m.d == ex.D for m in sets.values())
    assert ex.PM in sets and set(ex.NEAR) <= set(sets)
    theta = np.array([[1.0, 0, 0], [0, 1, 0]])
    assert ex.span_coverage(theta, np.array([[3.0, 4, 0]])) == pytest.approx(1.0)
    assert ex.span_coverage(theta, np.array([[0.0, 0, 2]])) == pytest.approx(0.0)


def _runs(worst, inf=True):
    S = len(worst)
    cos = np.stack([np.asarray(worst), np.ones(S)], 1)
    return ex.SettingRuns("x", np.zeros((S, 2, 5)), cos, np.ones(S), np.zeros(S),
                          np.zeros((S, 2, 5)) if inf else np.zeros((0, 2, 5)),
                          cos if inf else np.zeros((0, 2)), np.zeros(S) if inf else np.zeros(0))


def test_setting_runs_alignment_and_round_trip():
    r = _runs([0.99, 0.96, 0.7, 0.94])
    np.testing.assert_allclose(r.worst(), [0.99, 0.96, 0.7, 0.94])
    iv = r.aligned(0.95)
    assert iv.estimate == 0.5 and iv.n == 4 and iv.low < 0.5 < iv.high
    back = ex.SettingRuns.from_data(r.as_data())
    np.testing.assert_allclose(back.cos, r.cos)
    assert back.has_inf and back.name == "x"
    assert not _runs([0.99, 0.9], inf=False).has_inf


@pytest.mark.usefixtures("typecheck_off")
def test_bad_size():
    with pytest.raises(ValueError, match="size"):
        ex.variances("medium")


def test_stored_training_has_the_chapters_shape():
    """results/beyond-training.json: every setting with its seeds, the large-L points of the
    isotropic ones only, and the near-start runs."""
    st = ex.stored_training()
    S = st.budget["seeds"]
    assert S >= 16 and list(st.runs) == list(ex.settings())
    for name, m in ex.settings().items():
        r = st.runs[name]
        assert r.theta.shape == (S, 2, ex.D) and r.cos.shape == (S, 2)
        assert r.has_inf == isinstance(m, ac.GaussianMixture)
        assert np.all((r.cos >= 0) & (r.cos <= 1 + 1e-9))
    for name in ex.NEAR:
        assert st.near.cos[name].shape == (S, 2) and st.near.cos_inf[name].shape == (2,)


def test_as_general_keeps_the_mixture():
    m = ex.settings()["default"]
    g = ex.as_general(m)
    np.testing.assert_allclose(g.centroids, m.centroids)
    np.testing.assert_allclose(g.weights, m.weights)
    # a general mixture passes through unchanged
    gv = ex.settings()["unequal variances (0.3, 0.7)"]
    assert ex.as_general(gv) is gv


@pytest.mark.slow

def test_off_manifold_gradient_vanishes_only_with_the_symmetry():
    """prop-beyond-symmetry: the derivative along the tilt direction is zero for the +- mixture
    (reflections map it to itself) and not for the default one, whose mean pulls the heads."""
    assert abs(ex.off_manifold_gradient(ex.PM)) < 1e-6
    assert abs(ex.off_manifold_gradient("default")) > 1e-3


def _with_heads(name, theta):
    r = _runs(np.ones(len(theta)))
    return ex.SettingRuns(name, np.asarray(theta, float), r.cos, r.coverage, r.risk, r.theta_inf, r.cos_inf, r.risk_inf)


@pytest.mark.slow
def test_scores_shapes_and_heads_at_the_centroids():
    """On the tiny test prompts: one row of ARIs per seed; heads on the default mixture's
    centroids assign like the oracle read-out, heads orthogonal to both centroids do not."""
    sets = ex.settings()
    S, n = 2, ex.SIZES["test"]["n"]
    on = np.broadcast_to(np.eye(2, ex.D), (S, 2, ex.D))
    off = np.broadcast_to(np.eye(ex.D)[3:5], (S, 2, ex.D))
    sc = ex.scores({name: _with_heads(name, on) for name in sets}, "test")
    assert set(sc) == set(sets)
    for s in sc.values():
        assert s.heads.shape == (S, n)
        assert s.kmeans.shape == s.identity_stack.shape == s.identity_oracle.shape == (n,)
    assert sc["default"].mean("heads") > 0.9 and sc["default"].mean("identity_oracle") > 0.9
    sc_off = ex.scores({name: _with_heads(name, off) for name in sets}, "test")
    assert sc_off["default"].mean("heads") < 0.5
    # the baselines do not depend on the heads
    np.testing.assert_array_equal(sc_off["default"].kmeans, sc["default"].kmeans)


@pytest.mark.slow
def test_variances_at_test_size():
    """The unequal-variance experiment: one finite, non-negative value per temperature, and
    capture fractions in [0, 1]."""
    var = ex.variances("test")
    k = ex.SIZES["test"]["n_lam"]
    assert var.lams.shape == (k,) and var.L_long == ex.SIZES["test"]["L_long"]
    for a in (var.D_general, var.D_isotropic, var.D_long, var.capture_general, var.capture_long):
        assert a.shape == (k,) and np.all(np.isfinite(a)) and np.all(a >= 0)
    assert np.all((var.capture_general <= 1) & (var.capture_long <= 1))
    assert np.all(np.diff(var.lams) > 0)

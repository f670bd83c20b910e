"""attnclust.general_mixture: mixtures whose components have their own covariance, their sampler,
and the stacked arrays that fit_mixtures trains on (chapters/beyond.md)."""

import numpy as np
import pytest

import attnclust as ac
from attnclust import general_mixture as G


@pytest.mark.usefixtures("typecheck_off")
def test_general_mixture_validation():
    with pytest.raises(ValueError, match="weights"):
        G.GeneralMixture([0.5, 0.6], np.eye(2, 3), np.stack([np.eye(3)] * 2))
    with pytest.raises(ValueError, match="scales"):
        G.GeneralMixture([0.5, 0.5], np.eye(2, 3), np.eye(3))
    with pytest.raises(ValueError, match="centroids"):
        G.GeneralMixture([1.0], np.zeros(3), np.eye(3)[None])
    with pytest.raises(ValueError):
        G.GeneralMixture([0.5, 0.5], [[np.nan, 0, 0], [0, 1, 0]], np.stack([np.eye(3)] * 2))
    with pytest.raises(ValueError, match="sigmas"):
        G.per_component_sigma_mixture([0.3, -1.0])
    with pytest.raises(ValueError, match="direction"):
        G.anisotropic_mixture(direction="sideways")
    with pytest.raises(ValueError, match="angle"):
        ac.angled_mixture(4.0)
    with pytest.raises(ValueError, match="K must be <= d"):
        G.per_component_sigma_mixture([0.3] * 4, d=3)


def test_from_gaussian_and_noise_floor(mixture):
    g = G.GeneralMixture.from_gaussian(mixture)
    assert g.K == mixture.K and g.d == mixture.d
    assert g.noise_floor() == pytest.approx(ac.noise_floor(mixture))
    np.testing.assert_allclose(g.mean, np.asarray(mixture.mean), atol=1e-6)


@pytest.mark.slow
def test_sample_general_moments(key):
    g = G.anisotropic_mixture(r=2.0, d=3, K=2, along=0.8, across=0.3, weights=[0.3, 0.7])
    X, lab = G.sample_general(key, g, 4, 5000)
    X, lab = np.asarray(X).reshape(-1, 3), np.asarray(lab).reshape(-1)
    assert abs(np.mean(lab == 0) - 0.3) < 0.02
    for c in range(2):
        Xc = X[lab == c]
        np.testing.assert_allclose(Xc.mean(0), g.centroids[c], atol=0.05)
        np.testing.assert_allclose(np.cov(Xc.T), g.covariances[c], atol=0.05)
    # the radial cloud c is stretched along its own centroid
    assert g.covariances[0][0, 0] == pytest.approx(0.64) and g.covariances[0][1, 1] == pytest.approx(0.09)


@pytest.mark.slow
def test_sample_general_matches_isotropic_law(key, mixture):
    X, lab = G.sample_general(key, G.GeneralMixture.from_gaussian(mixture), 8, 500)
    resid = np.asarray(X) - np.asarray(mixture.centroids)[np.asarray(lab)]
    assert abs(resid.std() - 0.5) < 0.02


def test_stack_mixtures_pads_with_zero_weights(mixture):
    """(Training on the stacked mixtures: tests/test_train.py, test_fit_mixtures.)"""
    mixes = [mixture, ac.plusminus_mixture(), G.per_component_sigma_mixture([0.3, 0.7])]
    W, M, A = G.stack_mixtures(mixes)
    assert W.shape == (3, 4) and M.shape == (3, 4, 5) and A.shape == (3, 4, 5, 5)
    np.testing.assert_allclose(W.sum(1), 1.0)
    assert np.all(W[0, 2:] == 0)
    with pytest.raises(ValueError, match="same d"):
        G.stack_mixtures([mixture, ac.orthogonal_mixture(d=3)])

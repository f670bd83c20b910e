"""attnclust.digits: scikit-learn's bundled digits on a few principal directions, and prompts
drawn from their rows (chapters/beyond.md)."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnclust import digits as D


def test_load_digits_pca():
    X, y, means = D.load_digits_pca(classes=(3, 8), n_components=4)
    assert X.shape[1] == 4 and X.shape[0] == y.shape[0] and means.shape == (2, 4)
    assert set(np.unique(y)) == {0, 1}
    np.testing.assert_allclose(means[1], X[y == 1].mean(0), rtol=1e-5)
    Xc, _, _ = D.load_digits_pca(classes=(3, 8), n_components=4, centre=True)
    np.testing.assert_allclose(Xc.mean(0), 0, atol=1e-5)
    for bad in [(1, 1), (10,), ()]:
        with pytest.raises(ValueError, match="classes"):
            D.load_digits_pca(classes=bad)


def test_sample_rows(key):
    data = jnp.arange(12.0).reshape(6, 2)
    X, lab = D.sample_rows(key, data, 3, 7, labels=jnp.arange(6))
    assert X.shape == (3, 7, 2)
    np.testing.assert_array_equal(np.asarray(X)[..., 0], 2 * np.asarray(lab))


def test_split_digits_centres_and_keeps_the_rows():
    s = D.split_digits((3, 8), 4, seed=1)
    assert s.train_X.shape[1] == s.test_X.shape[1] == 4 and s.test_means.shape == (2, 4)
    n = s.train_X.shape[0] + s.test_X.shape[0]
    assert abs(s.train_X.shape[0] - n / 2) <= 1
    np.testing.assert_allclose(s.train_X.mean(0), 0, atol=1e-5)  # centred at the training mean
    np.testing.assert_allclose(s.test_means[1], s.test_X[s.test_y == 1].mean(0), rtol=1e-5)
    u = D.split_digits((3, 8), 4, seed=1, centre=False)
    # the same rows and directions, shifted by the training mean's projection
    np.testing.assert_allclose(u.test_X - s.test_X, np.broadcast_to(u.train_X.mean(0), s.test_X.shape), atol=1e-4)
    np.testing.assert_array_equal(u.test_y, s.test_y)
    with pytest.raises(ValueError, match="train_fraction"):
        D.split_digits((3, 8), 4, train_fraction=1.0)

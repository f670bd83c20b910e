"""Per-prompt k-means and EM: shapes, recovery of well-separated clusters, validation."""

import jax
import numpy as np
import pytest

import attnclust as ac
from attnclust import baselines
from attnclust.baselines import em_per_prompt, kmeans_per_prompt

FUNCS = [kmeans_per_prompt, em_per_prompt]
KEY = jax.random.PRNGKey(0)


@pytest.fixture
def prompts(key):
    X, labels = ac.sample(key, ac.orthogonal_mixture(K=2, d=5, r=2.0, sigma=0.5), 4, 50)
    return np.asarray(X), np.asarray(labels)


@pytest.mark.parametrize("func", FUNCS)
def test_shapes_and_label_range(func, prompts):
    X, _ = prompts
    labels, centres = func(KEY, X, 2)
    assert labels.shape == (4, 50) and centres.shape == (4, 2, 5)
    assert labels.min() >= 0 and labels.max() <= 1
    assert np.all(np.isfinite(centres))


@pytest.mark.parametrize("func", FUNCS)
def test_recovers_separated_clusters(func, prompts):
    # Separation |mu_1 - mu_2| = 2 sqrt(2) r = 5.7 sigma-units x 2: clusters are almost
    # disjoint, so both algorithms recover the labels (ARI near 1) and the centroids.
    X, true = prompts
    labels, centres = func(KEY, X, 2)
    ari = np.asarray(ac.adjusted_rand(true, labels))
    assert np.all(ari > 0.9)
    mix = ac.orthogonal_mixture(K=2, d=5, r=2.0, sigma=0.5)
    cos = np.asarray(ac.alignment(centres, np.asarray(mix.centroids)))
    assert np.all(cos > 0.95)


@pytest.mark.parametrize("func", FUNCS)
def test_centres_are_cluster_means(func, prompts):
    X, _ = prompts
    labels, centres = func(KEY, X, 2)
    if func is kmeans_per_prompt:  # k-means centres are exactly the means of their clusters
        for i in range(X.shape[0]):
            for k in range(2):
                np.testing.assert_allclose(centres[i, k], X[i][labels[i] == k].astype(np.float64).mean(0), atol=1e-6)


@pytest.mark.parametrize("func", FUNCS)
def test_deterministic(func, prompts):
    X, _ = prompts
    a = func(jax.random.PRNGKey(3), X, 2)
    b = func(jax.random.PRNGKey(3), X, 2)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_allclose(a[1], b[1])


@pytest.mark.parametrize("func", FUNCS)
def test_accepts_jax_arrays(func, key):
    X, _ = ac.sample(key, ac.orthogonal_mixture(K=3, d=4, r=2.0, sigma=0.3), 2, 30)
    labels, centres = func(KEY, X, 3)
    assert labels.shape == (2, 30) and centres.shape == (2, 3, 4)


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize(
    "X, K, match, error",
    [
        (np.zeros((3, 10)), 2, "shape", ValueError),
        (np.zeros((2, 10, 3)), 0, "K", ValueError),
        (np.zeros((2, 10, 3)), 2.0, "K must be an integer", TypeError),
        (np.zeros((2, 10, 3)), True, "K must be an integer", TypeError),
        (np.zeros((2, 3, 3)), 4, "tokens", ValueError),
        (np.full((2, 10, 3), np.nan), 2, "finite", ValueError),
        (np.zeros((0, 10, 3)), 2, "at least one prompt", ValueError),
    ],
)
@pytest.mark.usefixtures("typecheck_off")
def test_validation(func, X, K, match, error):
    with pytest.raises(error, match=match):
        func(KEY, X, K)


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize("n_init, error", [(0, ValueError), (1.5, TypeError), (True, TypeError)])
@pytest.mark.usefixtures("typecheck_off")
def test_n_init_validation(func, n_init, error):
    with pytest.raises(error, match="n_init"):
        func(KEY, np.zeros((1, 10, 2)), 2, n_init=n_init)


@pytest.mark.parametrize("func", FUNCS)
def test_single_restart(func, prompts):
    X, true = prompts
    labels, _ = func(KEY, X, 2, n_init=1)
    assert np.all(np.asarray(ac.adjusted_rand(true, labels)) > 0.9)


@pytest.mark.parametrize("func", FUNCS)
def test_prompt_results_do_not_depend_on_the_batch(func, prompts):
    """Prompt i draws from fold_in(key, i): its labels are the same alone or in a batch."""
    X, _ = prompts
    whole, _ = func(KEY, X, 2)
    first, _ = func(KEY, X[:1], 2)
    np.testing.assert_array_equal(whole[:1], first)


@pytest.mark.usefixtures("typecheck_off")  # ends with a wrong shape, for the ValueError
@pytest.mark.slow
def test_jax_baselines_agree_with_scikit_learn(key):
    X, lab, _ = ac.sample_in_context(key, 2, 5, 2.0, 0.6, 6, 40)
    ari_jax = ac.adjusted_rand(lab, baselines.kmeans_per_prompt_jax(key, X, 2)[0])
    ari_sk = ac.adjusted_rand(lab, baselines.kmeans_per_prompt(key, X, 2)[0])
    assert abs(ari_jax.mean() - ari_sk.mean()) < 0.05
    lab_em, mu_em = baselines.em_per_prompt_jax(key, X, 2)
    assert lab_em.shape == (6, 40) and mu_em.shape == (6, 2, 5)
    assert ac.adjusted_rand(lab, lab_em).mean() > 0.9
    with pytest.raises(ValueError, match="K=41"):
        baselines.kmeans_per_prompt_jax(key, X, 41)
    with pytest.raises(ValueError, match="shape"):
        baselines.kmeans_per_prompt_jax(key, X[0], 2)


def test_output_clusters_read_collapsed_points(key):
    Z = np.zeros((1, 10, 2))
    Z[0, 5:] = 3.0
    lab = baselines.output_clusters(key, Z, 2)
    assert ac.adjusted_rand(np.array([[0] * 5 + [1] * 5]), lab)[0] == pytest.approx(1.0)

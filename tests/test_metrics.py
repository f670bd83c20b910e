"""Measures of chapters/mixtures.md (def-distortion): alignment, assignments, distortion, ARI."""

import os

import jax
import jax.numpy as jnp
import jaxtyping
import numpy as np
import pytest

import attnclust as ac


def test_alignment_is_invariant_to_head_order_and_sign():
    mu = 2.0 * jnp.eye(2, 4)
    theta = jnp.array([[0.1, -0.9, 0.0, 0.1], [-1.2, 0.2, 0.1, 0.0]])  # heads swapped, signs flipped
    a = ac.alignment(theta, mu)
    expected = [0.9 / np.linalg.norm(theta[0]), 1.2 / np.linalg.norm(theta[1])]
    np.testing.assert_allclose(a, expected, rtol=1e-6)
    np.testing.assert_allclose(ac.alignment(theta[::-1], mu), a[::-1], rtol=1e-6)
    np.testing.assert_array_equal(ac.matching(theta, mu), [1, 0])


def test_alignment_uses_best_matching_not_greedy():
    """Greedy matching would give head 0 centroid 0 (cos 0.8) and leave head 1 with 0.0;
    the best matching over permutations pairs head 0 with centroid 1 and head 1 with 0."""
    mu = jnp.eye(2)
    theta = jnp.array([[0.8, 0.6], [1.0, 0.0]])
    np.testing.assert_allclose(ac.alignment(theta, mu), [0.6, 1.0], rtol=1e-6)


def test_alignment_batches_and_more_heads_than_centroids(key):
    mu = jnp.eye(2, 3)
    thetas = jax.random.normal(key, (4, 5, 3, 3))  # (seeds, records, H=3, d)
    a = ac.alignment(thetas, mu)
    assert a.shape == (4, 5, 3)
    assert np.all((a >= 0) & (a <= 1 + 1e-9))
    np.testing.assert_allclose(a[2, 3], ac.alignment(thetas[2, 3], mu))


@pytest.mark.slow
@pytest.mark.usefixtures("typecheck_off")  # ends with labels of different shapes, for the ValueError
def test_head_assignments_and_adjusted_rand(key, mixture):
    X, labels = ac.sample(key, mixture, 3, 200)
    perfect = ac.head_assignments(mixture.centroids[::-1], X)  # names swapped on purpose
    ari = ac.adjusted_rand(labels, perfect)
    assert ari.shape == (3,)
    assert np.all(ari > 0.95)  # separation r/sigma = 4: misassignment ~ Phi(-2.8) = 0.2%
    random = jax.random.randint(key, labels.shape, 0, 2)
    assert np.all(np.abs(ac.adjusted_rand(labels, random)) < 0.05)
    with pytest.raises(ValueError, match="same shape"):
        ac.adjusted_rand(labels, labels[:, :10])


@pytest.mark.slow
def test_distortion_of_raw_tokens_is_the_noise_floor(key, mixture):
    """E||x - mu_c(x)||^2 = d sigma^2; with 100,000 tokens the relative s.e. is
    sqrt(2/(d n)) = 0.2%, so 1% is 5 s.e."""
    X, labels = ac.sample(key, mixture, 100, 1000)
    d = ac.distortion(X, mixture.centroids[labels])
    assert float(d) == pytest.approx(ac.noise_floor(mixture), rel=0.01)


def test_distortion_mask_averages_the_masked_tokens_only():
    out = np.array([[[0.0, 0.0], [1.0, 0.0], [9.0, 9.0]]])
    tgt = np.zeros_like(out)
    mask = np.array([[True, True, False]])
    assert float(ac.distortion(out, tgt, mask)) == pytest.approx(0.5)
    assert float(ac.distortion(out[:, :2], tgt[:, :2])) == pytest.approx(0.5)


def test_centroid_helpers():
    mus = np.array([[[0.0, 0], [10, 0]], [[0, 0], [0, 10]]])
    lab = np.array([[0, 1, 1], [1, 0, 1]])
    own = np.asarray(ac.own_centroids(mus, lab))
    np.testing.assert_array_equal(own[0, 1], [10, 0])
    np.testing.assert_array_equal(own[1, 0], [0, 10])
    Z = np.array([[[1.0, 0], [9, 1], [6, 0]], [[0, 8], [1, 1], [0, 6]]])
    np.testing.assert_array_equal(np.asarray(ac.nearest_centroid(Z, mus)), [[0, 1, 1], [1, 0, 1]])
    np.testing.assert_array_equal(np.asarray(ac.nearest_centroid(Z, mus[0])), [[0, 1, 1], [0, 0, 0]])


def test_within_spread():
    Z = np.array([[[0.0], [2.0], [10.0], [10.0]]])  # cluster 0: {0, 2} spread 1; cluster 1: 0
    lab = np.array([[0, 0, 1, 1]])
    assert ac.within_spread(Z, lab, 2) == pytest.approx(0.5)
    stacked = np.stack([Z, 0 * Z])
    np.testing.assert_allclose(ac.within_spread(stacked, lab, 2), [0.5, 0.0])


@pytest.mark.skipif(os.environ.get("ATTNCLUST_TYPECHECK", "1") == "0", reason="run without the type checker")
def test_annotated_shapes_are_checked_in_the_tests():
    """The test suite runs the library under jaxtyping's checker (tests/conftest.py): a call
    whose shapes disagree with the annotations (theta's d against the centroids' d) fails
    in the checker, before the library's own ValueError could."""
    with pytest.raises(jaxtyping.TypeCheckError):
        ac.abs_cosines(np.ones((2, 3)), np.ones((2, 4)))


_MU = np.array([[2.0, 0.0], [0.0, 2.0]])


@pytest.mark.usefixtures("typecheck_off")
@pytest.mark.parametrize("labels", [[[0, 7]], [[-1, 1]], [[0, 2]]])
def test_own_centroids_refuses_labels_outside_the_components(labels):
    """Labels index the K centroids: 7 or -1 picked a wrong centroid (-1 the last, 7 clipped)."""
    with pytest.raises(ValueError, match="labels must lie in 0..K-1"):
        ac.own_centroids(_MU, labels)
    with pytest.raises(ValueError, match="labels must lie in 0..K-1"):
        ac.own_centroids(np.broadcast_to(_MU, (1, 2, 2)), labels)


def test_own_centroids_picks_each_tokens_centroid():
    np.testing.assert_array_equal(ac.own_centroids(_MU, np.array([[1, 0]])), [[[0.0, 2.0], [2.0, 0.0]]])
    per_prompt = np.stack([_MU, -_MU])
    np.testing.assert_array_equal(ac.own_centroids(per_prompt, np.array([[1], [0]])), [[[0.0, 2.0]], [[-2.0, 0.0]]])


@pytest.mark.usefixtures("typecheck_off")
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_nearest_centroid_refuses_non_finite_tokens(value):
    """A NaN token has no nearest centroid (argmin of NaN distances answered 0)."""
    Z = np.zeros((1, 3, 2))
    Z[0, 1, 0] = value
    with pytest.raises(ValueError, match="Z must be finite"):
        ac.nearest_centroid(Z, _MU)
    np.testing.assert_array_equal(ac.nearest_centroid(np.array([[[2.0, 0.1], [0.1, 2.0]]]), _MU), [[0, 1]])


@pytest.mark.usefixtures("typecheck_off")
def test_within_spread_refuses_labels_beyond_K():
    """Labels >= K fell outside every cluster (the spread came out NaN or without them)."""
    Z = np.random.default_rng(0).normal(size=(2, 4, 2))
    with pytest.raises(ValueError, match="labels must lie in 0..K-1 = 0..1"):
        ac.within_spread(Z, [[0, 1, 2, 3], [0, 0, 1, 1]], 2)
    with pytest.raises(ValueError, match="labels' shape"):
        ac.within_spread(Z, [[0, 1, 1], [0, 0, 1]], 2)
    assert np.isfinite(ac.within_spread(Z, [[0, 1, 1, 0], [0, 0, 1, 1]], 2))


# ---------------------------------------------------------------- bad and extreme input of the metrics
# Each call of these tables either raises a clear error or returns a correct finite result
# (tests/bad_input.py's ``check_case``).

from bad_input import check_case, close, collector, has_nan, INF, MIX, MU, NAN, nan_at, TH, X  # noqa: E402

_BAD: list = []
case = collector(_BAD)

NAN_HEAD = jnp.asarray(MU).at[0].set(NAN)
case("alignment NaN head", lambda: ac.alignment(NAN_HEAD, MU), check=lambda r: np.isnan(r[0]) and np.isclose(r[1], 1.0))
case("alignment inf head", lambda: ac.alignment(jnp.asarray(MU).at[0, 0].set(INF), MU), check=lambda r: np.isnan(r[0]))
case("alignment all-NaN batch", lambda: ac.alignment(jnp.full((3, 2, 5), NAN), MU), check=lambda r: r.shape == (3, 2) and np.isnan(r).all())
case("alignment NaN centroids", lambda: ac.alignment(MU, nan_at(MU)), ["centroids"], check=lambda r: has_nan(r))
case("alignment H=0", lambda: ac.alignment(np.zeros((0, 5)), MU), ["theta", "H"], error=True)
case("alignment K=0", lambda: ac.alignment(MU, np.zeros((0, 5))), ["centroids", "K"], error=True)
case("alignment wrong d", lambda: ac.alignment(MU[:, :4], MU), [("theta", "centroids")], error=True)
case("alignment theta 1-D", lambda: ac.alignment(MU[0], MU), ["theta"], error=True)
case("alignment complex", lambda: ac.alignment(MU + 1j, MU), ["theta"], error=True)
case("alignment lists", lambda: ac.alignment(MU.tolist(), MU.tolist()), check=close([1.0, 1.0]))
case("alignment strings", lambda: ac.alignment(np.full((2, 5), "a"), MU), ["theta"], error=True)
case("matching NaN head", lambda: ac.matching(NAN_HEAD, MU), check=lambda r: r[0] == -1 and r[1] == 1)
case("matching H=0", lambda: ac.matching(np.zeros((0, 5)), MU), ["theta", "H"], error=True)
case("matching wrong d", lambda: ac.matching(MU[:, :4], MU), [("theta", "centroids")], error=True)
case("matching batched theta", lambda: ac.matching(MU[None], MU), ["theta"], error=True)
case("matching lists", lambda: ac.matching(MU.tolist(), MU.tolist()), check=lambda r: list(r) == [0, 1])
case("abs_cosines NaN head", lambda: ac.abs_cosines(NAN_HEAD, MU), check=lambda r: np.isnan(r[0]).all() and np.allclose(r[1], [0, 1]))
case("abs_cosines wrong d", lambda: ac.abs_cosines(MU[:, :4], MU), [("theta", "centroids")], error=True)
case("abs_cosines complex", lambda: ac.abs_cosines(MU, MU + 1j), ["centroids"], error=True)
case("abs_cosines lists", lambda: ac.abs_cosines(MU.tolist(), MU.tolist()), check=close(np.eye(2)))
case("abs_cosines centroids 3-D", lambda: ac.abs_cosines(MU, MU[None]), ["centroids"], error=True)

XT = X[0]  # (8, 5) tokens
case("head_assignments NaN token", lambda: ac.head_assignments(TH, nan_at(XT)), check=lambda r: r[0] == -1 and (np.asarray(r[1:]) >= 0).all())
case("head_assignments inf token", lambda: ac.head_assignments(TH, nan_at(XT, INF)), check=lambda r: r[0] == -1)
case("head_assignments NaN head", lambda: ac.head_assignments(NAN_HEAD, XT), check=lambda r: (np.asarray(r) == -1).all())
case("head_assignments H=0", lambda: ac.head_assignments(TH[:0], XT), ["theta", "H"], error=True)
case("head_assignments wrong d", lambda: ac.head_assignments(TH, XT[:, :4]), [("theta", "X")], error=True)
case("head_assignments theta 1-D", lambda: ac.head_assignments(TH[0], XT), ["theta"], error=True)
case("head_assignments lists", lambda: ac.head_assignments(TH.tolist(), XT.tolist()), check=lambda r: np.array_equal(r, ac.head_assignments(TH, XT)))
case("head_assignments complex", lambda: ac.head_assignments(TH, XT + 1j), ["X"], error=True)

O = jnp.zeros((2, 4, 5))
T = O.at[..., 0].set(jnp.sqrt(5.0))  # every token at squared distance 5
case("distortion int mask of 2s", lambda: ac.distortion(O, T, 2 * jnp.ones((2, 4), int)), ["mask"], check=lambda r: np.isclose(r, 5.0))
case("distortion int 0/1 mask", lambda: ac.distortion(O, T, jnp.ones((2, 4), int)), ["mask"], check=lambda r: np.isclose(r, 5.0))
case("distortion float mask", lambda: ac.distortion(O, T, 0.5 * jnp.ones((2, 4))), ["mask"], check=lambda r: np.isclose(r, 5.0))
case("distortion all-False mask", lambda: ac.distortion(O, T, jnp.zeros((2, 4), bool)), ["mask"], error=True)
case("distortion mask wrong shape", lambda: ac.distortion(O, T, jnp.ones((2, 3), bool)), ["mask"], error=True)
case("distortion bool mask", lambda: ac.distortion(O, T, jnp.arange(4) < 2), check=lambda r: np.isclose(r, 5.0))
case("distortion NaN output", lambda: ac.distortion(nan_at(O), T), check=has_nan)
case("distortion inf target", lambda: ac.distortion(O, nan_at(T, INF)), check=lambda r: not np.isfinite(r))
case("distortion shape mismatch", lambda: ac.distortion(O, T[:, :3]), [("outputs", "targets")], error=True)
case("distortion d mismatch", lambda: ac.distortion(O, T[..., :4]), [("outputs", "targets")], error=True)
case("distortion lists", lambda: ac.distortion(O.tolist(), T.tolist()), check=lambda r: np.isclose(r, 5.0))
case("distortion complex", lambda: ac.distortion(O + 1j, T), ["outputs"], error=True)
case("distortion strings", lambda: ac.distortion(np.full((2, 5), "a"), T[0, :2]), ["outputs"], error=True)
case("distortion empty", lambda: ac.distortion(O[:, :0], T[:, :0]), ["outputs", "targets"], error=True)

case("noise_floor mixture=None", lambda: ac.noise_floor(None), ["mixture"], error=True)
case("noise_floor", lambda: ac.noise_floor(MIX), check=lambda r: np.isclose(r, 5 * 0.25))

LT = np.array([[0, 0, 1, 1], [0, 1, 0, 1]])
ar = ac.adjusted_rand
case("adjusted_rand empty", lambda: ar(np.zeros(0, int), np.zeros(0, int)), ["labels_true", "labels"], error=True)
case("adjusted_rand empty batch rows", lambda: ar(np.zeros((2, 0), int), np.zeros((2, 0), int)), ["labels_true", "labels"], error=True)
case("adjusted_rand shape mismatch", lambda: ar(LT, LT[:, :3]), [("labels_true", "labels_pred")], error=True)
case("adjusted_rand 0-d", lambda: ar(np.int64(1), np.int64(1)), ["labels_true", "labels"], error=True)
case("adjusted_rand NaN labels", lambda: ar(np.array([0.0, NAN]), np.array([0.0, 1.0])), ["labels_true"], error=True)
case("adjusted_rand float labels", lambda: ar(np.array([0.5, 1.5]), np.array([0, 1])), ["labels_true"], error=True)
case("adjusted_rand lists", lambda: ar(LT.tolist(), (1 - LT).tolist()), check=close([1.0, 1.0]))
case("adjusted_rand -1 labels", lambda: ar(LT, LT - 1), check=close([1.0, 1.0]))
case("adjusted_rand jax arrays", lambda: ar(jnp.asarray(LT), jnp.asarray(LT)), check=close([1.0, 1.0]))


@pytest.mark.usefixtures("typecheck_off")
@pytest.mark.parametrize("c", _BAD)
def test_bad_input_to_the_metrics(c):
    """Metrics: a clear error or a correct result for every case."""
    check_case(c)

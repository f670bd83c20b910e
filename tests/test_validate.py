"""Bad input at the public boundary: every call gives a correct finite result or a ValueError /
TypeError whose message names the argument. Property tests draw the bad values
(NaN and inf at any position, bad temperatures, wrong shapes and dtypes) per public function
of mixture, attention, limits, risk and metrics; extreme but valid inputs give finite
outputs. Shapes are fixed and small so that each function compiles once."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attnclust as ac

pytestmark = pytest.mark.usefixtures("typecheck_off")  # every test passes bad input on purpose: the checker is off

NAN, INF = float("nan"), float("inf")
MIX = ac.orthogonal_mixture(K=2, d=3, r=2.0, sigma=0.5)
KEY = jax.random.PRNGKey(7)
X = ac.sample(KEY, MIX, 2, 4)[0]  # (2, 4, 3)
Z = X[:, :2]  # (2, 2, 3)
TH = MIX.centroids + 0.1  # (2, 3)
z = X[0]  # (4, 3)
P = z @ TH.T  # (4, 2)
MASK = jnp.array([True, True, True, False])


def named(message: str, name: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message) is not None


def assert_names(call, *names, error=(ValueError, TypeError)):
    with pytest.raises(error) as info:
        call()
    assert all(named(str(info.value), n) for n in names), str(info.value)


def finite(tree) -> bool:
    return all(bool(np.all(np.isfinite(np.asarray(leaf)))) for leaf in jax.tree_util.tree_leaves(tree))


# Every public function of the core modules with its array arguments, as f(**arrays).
ARRAY_CALLS = {
    "two_head_layer": (lambda theta=TH, X=X: ac.two_head_layer(theta, X, 1.0), dict(theta=TH, X=X)),
    "two_head_attend": (lambda theta=TH, Z=Z, X=X: ac.two_head_attend(theta, Z, X, 1.0), dict(theta=TH, Z=Z, X=X)),
    "identity_attention": (lambda X=X: ac.identity_attention(X, 1.0), dict(X=X)),
    "identity_attention_blocked": (lambda X=X: ac.identity_attention(X, 1.0, block=3), dict(X=X)),
    "identity_attend": (lambda Z=Z, X=X: ac.identity_attend(Z, X, 1.0), dict(Z=Z, X=X)),
    "head_coefficients": (lambda P=P, theta=TH: ac.head_coefficients(P, theta, MIX, 1.0), dict(P=P, theta=TH)),
    "head_output_limit": (lambda theta=TH, z=z: ac.head_output_limit(theta, z, MIX, 1.0), dict(theta=TH, z=z)),
    "identity_limit": (lambda z=z: ac.identity_limit(z, MIX, 1.0), dict(z=z)),
    "empirical_risk": (lambda theta=TH, X=X: ac.empirical_risk(theta, X, 1.0), dict(theta=TH, X=X)),
    "population_risk": (lambda theta=TH: ac.population_risk(theta, MIX, 1.0, n_nodes=8), dict(theta=TH)),
    "population_risk_mc": (lambda theta=TH: ac.population_risk_mc(KEY, theta, MIX, 1.0, 16), dict(theta=TH)),
    "GaussianMixture": (lambda weights=MIX.weights, centroids=MIX.centroids: ac.GaussianMixture(weights, centroids, 0.5),
                        dict(weights=MIX.weights, centroids=MIX.centroids)),
}
ARGS = [(f, a) for f, (_, arrays) in ARRAY_CALLS.items() for a in arrays]

# Every function that takes a temperature, called with lam.
LAM_CALLS = {
    "two_head_layer": lambda lam: ac.two_head_layer(TH, X, lam),
    "two_head_attend": lambda lam: ac.two_head_attend(TH, Z, X, lam),
    "identity_attention": lambda lam: ac.identity_attention(X, lam),
    "identity_attention_blocked": lambda lam: ac.identity_attention(X, lam, block=3),
    "identity_attend": lambda lam: ac.identity_attend(Z, X, lam),
    "identity_attend_masked": lambda lam: ac.identity_attend(Z, X, lam, key_mask=MASK),
    "head_coefficients": lambda lam: ac.head_coefficients(P, TH, MIX, lam),
    "head_output_limit": lambda lam: ac.head_output_limit(TH, z, MIX, lam),
    "identity_limit": lambda lam: ac.identity_limit(z, MIX, lam),
    "empirical_risk": lambda lam: ac.empirical_risk(TH, X, lam),
    "population_risk": lambda lam: ac.population_risk(TH, MIX, lam, n_nodes=8),
    "population_risk_mc": lambda lam: ac.population_risk_mc(KEY, TH, MIX, lam, 16),
}

bad_lams = st.one_of(
    st.floats(max_value=0.0, allow_nan=False),  # non-positive, including -inf
    st.sampled_from([NAN, INF]),
    st.floats(min_value=3.5e38, allow_infinity=False),  # finite in float64, inf in float32
)
not_numbers = st.sampled_from(["1.0", None, 1 + 0j, [1.0], np.ones(2), True])
non_finite = st.sampled_from([NAN, INF, -INF])


@given(st.sampled_from(ARGS), st.integers(0, 2**16), non_finite)
def test_a_non_finite_entry_is_named(arg, position, value):
    fn, name = arg
    call, arrays = ARRAY_CALLS[fn]
    bad = np.array(arrays[name], dtype=np.float32)
    bad.flat[position % bad.size] = value
    assert_names(lambda: call(**{name: bad}), name, error=ValueError)


@given(st.sampled_from(ARGS), st.sampled_from(["complex", "strings", "objects"]))
def test_a_non_real_array_is_named(arg, kind):
    fn, name = arg
    call, arrays = ARRAY_CALLS[fn]
    a = np.asarray(arrays[name])
    bad = {"complex": a + 1j, "strings": np.full(a.shape, "a"), "objects": np.full(a.shape, None)}[kind]
    assert_names(lambda: call(**{name: bad}), name, error=TypeError)


@pytest.mark.parametrize("fn, name", ARGS)
def test_lists_are_accepted_as_arrays(fn, name):
    call, arrays = ARRAY_CALLS[fn]
    expected = call()
    got = call(**{name: np.asarray(arrays[name]).tolist()})
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected)):
        np.testing.assert_array_equal(a, b)  # the same float32 numbers: the list is converted exactly


@given(st.sampled_from(sorted(LAM_CALLS)), st.one_of(bad_lams, not_numbers))
def test_a_bad_temperature_is_named(fn, lam):
    assert_names(lambda: LAM_CALLS[fn](lam), "lam")


LAYERS = ["two_head_layer", "two_head_attend", "identity_attention", "identity_attention_blocked",
          "identity_attend", "identity_attend_masked", "empirical_risk"]
LIMITS = ["head_coefficients", "head_output_limit", "identity_limit"]


@given(st.sampled_from(LAYERS), st.sampled_from([1e4, 1e9, 1e30, 3e38]) | st.floats(1e-3, 3e38))
def test_layers_are_finite_at_every_temperature(fn, lam):
    """Every layer (and the empirical risk, a mean of their errors) is finite up to
    float32's largest temperature: its outputs are convex combinations of the tokens."""
    assert finite(LAM_CALLS[fn](lam))


@given(st.sampled_from(LIMITS), st.sampled_from([1e4, 1e9, 1e30]) | st.floats(1e-3, 1e30))
def test_limits_are_finite_up_to_1e30(fn, lam):
    """The limits grow like lam sigma^2 <theta, z> (about 1e31 here), so they are finite."""
    assert finite(LAM_CALLS[fn](lam))


@given(st.sampled_from(["population_risk", "population_risk_mc"]), st.sampled_from([1e4, 1e30, 3e38]) | st.floats(1e-3, 3e38))
def test_risks_are_finite_or_name_lam(fn, lam):
    """R_inf grows like lam^2 (the limit's lam sigma^2 z term): beyond about 1e17 it is
    past float32, and the answer is then an error naming lam, never NaN."""
    try:
        risk = LAM_CALLS[fn](lam)
    except ValueError as e:
        assert named(str(e), "lam") and lam > 1e10, str(e)
    else:
        assert finite(risk)


@pytest.mark.parametrize("lam", [1e4, 1e9, 1e30])
@pytest.mark.parametrize("block", [None, 3])
def test_identity_attention_at_huge_temperature_is_the_hard_argmax(lam, block):
    """At lam >= 1e4 on these tokens (score gaps >= 1e-2) the softmax is one-hot on the key
    of largest <x_l, x_k>: the output is that key, to float32 rounding (atol 1e-5)."""
    Xn = np.asarray(X, np.float64)
    hard = np.take_along_axis(Xn, np.argmax(Xn @ np.swapaxes(Xn, -1, -2), -1)[..., None], axis=-2)
    gaps = np.sort(Xn @ np.swapaxes(Xn, -1, -2), -1)
    assert np.min(gaps[..., -1] - gaps[..., -2]) * lam > 100  # weights beyond the top one < e^-100
    np.testing.assert_allclose(ac.identity_attention(X, lam, block=block), hard, atol=1e-5)
    np.testing.assert_allclose(ac.identity_attention(X * 1e20, lam, block=block), hard * 1e20, rtol=1e-5)


def test_low_precision_and_huge_tokens_are_promoted_and_finite():
    half = X.astype(jnp.float16)
    for out in (ac.identity_attention(half, 1e4), ac.identity_attention(half, 1e4, block=3),
                ac.identity_attend(half, half, 1e4), ac.two_head_layer(TH, half, 1e4)):
        assert out.dtype == jnp.float32 and finite(out)
    assert finite(ac.two_head_layer(TH, X * 1e20, 1.0))
    assert finite(ac.population_risk(TH * 1e3, MIX, 1.0))


def test_overflowing_results_are_refused_naming_the_inputs():
    """theta * 1e10 makes R_inf about 1e80, beyond float32: a clear error, not NaN."""
    assert_names(lambda: ac.population_risk(TH * 1e10, MIX, 1.0), "theta", error=ValueError)
    assert_names(lambda: ac.head_output_limit(TH * 1e10, z, MIX, 1.0), "theta", error=ValueError)
    assert_names(lambda: ac.empirical_risk(TH, X * 1e20, 1.0), "X", error=ValueError)


# ---------------------------------------------------------------- shapes

@given(st.integers(1, 6).filter(lambda d: d != 3))
def test_a_wrong_dimension_is_named(d):
    other = np.ones((2, 4, d), np.float32)  # NumPy: a new shape compiles nothing
    assert_names(lambda: ac.two_head_layer(TH, other, 1.0), "theta", "X")
    assert_names(lambda: ac.two_head_attend(TH, other[:, :2], X, 1.0), "Z")
    assert_names(lambda: ac.identity_attend(other[:, :2], X, 1.0), "Z", "X")
    assert_names(lambda: ac.head_output_limit(TH, other[0], MIX, 1.0), "z", "mixture")
    assert_names(lambda: ac.identity_limit(other[0], MIX, 1.0), "z", "mixture")
    assert_names(lambda: ac.population_risk(other[0, :2], MIX, 1.0), "theta", "mixture")
    assert_names(lambda: ac.alignment(other[0, :2], MIX.centroids), "theta", "centroids")
    assert_names(lambda: ac.head_assignments(other[0, :2], z), "theta", "X")
    assert_names(lambda: ac.distortion(z, other[0]), "outputs", "targets")


@given(st.integers(3, 6))  # batch 1 would broadcast against 2
def test_a_batch_mismatch_names_both_arguments(n):
    assert_names(lambda: ac.two_head_attend(TH, np.ones((n, 2, 3)), X, 1.0), "Z", "X")
    assert_names(lambda: ac.identity_attend(np.ones((n, 2, 3)), X, 1.0), "Z", "X")
    assert_names(lambda: ac.identity_attend(Z, X, 1.0, key_mask=np.ones((n, 4), bool)), "key_mask", "X")
    assert_names(lambda: ac.distortion(X, np.ones((n, 4, 3))), "outputs", "targets")


@pytest.mark.parametrize("call, names", [
    (lambda: ac.two_head_layer(TH, X[0, 0], 1.0), ["X"]),
    (lambda: ac.two_head_layer(TH, X[:, :0], 1.0), ["X"]),
    (lambda: ac.two_head_layer(TH[0], X, 1.0), ["theta"]),
    (lambda: ac.two_head_layer(TH[:0], X, 1.0), ["theta"]),
    (lambda: ac.identity_attention(jnp.zeros((1, 0, 3)), 1.0), ["X"]),
    (lambda: ac.identity_attention(X, 1.0, block=0), ["block"]),
    (lambda: ac.identity_limit(1.0, MIX, 1.0), ["z"]),
    (lambda: ac.head_coefficients(P[:, :1], TH, MIX, 1.0), ["P"]),
    (lambda: ac.population_risk(TH, MIX, 1.0, n_nodes=1), ["n_nodes"]),
    (lambda: ac.population_risk_mc(KEY, TH, MIX, 1.0, 0), ["n_samples"]),
    (lambda: ac.alignment(np.zeros((0, 3)), MIX.centroids), ["theta"]),
    (lambda: ac.alignment(TH, np.zeros((0, 3))), ["centroids"]),
    (lambda: ac.matching(TH[None], MIX.centroids), ["theta"]),
    (lambda: ac.head_assignments(TH[:0], z), ["theta"]),
    (lambda: ac.adjusted_rand(np.zeros(0, int), np.zeros(0, int)), ["labels_true"]),
    (lambda: ac.adjusted_rand(np.zeros((2, 3), int), np.zeros((2, 4), int)), ["labels_true", "labels_pred"]),
    (lambda: ac.adjusted_rand(np.array([0.0, NAN]), np.array([0, 1])), ["labels_true"]),
    (lambda: ac.distortion(X[:, :0], X[:, :0]), ["outputs"]),
])
def test_bad_shapes_are_named(call, names):
    assert_names(call, *names)


@pytest.mark.parametrize("arg", [None, "mixture", {"weights": [1.0]}])
def test_a_non_mixture_is_named(arg):
    for call in (lambda: ac.sample(KEY, arg, 2, 4), lambda: ac.identity_limit(z, arg, 1.0),
                 lambda: ac.head_output_limit(TH, z, arg, 1.0), lambda: ac.population_risk(TH, arg, 1.0),
                 lambda: ac.noise_floor(arg)):
        assert_names(call, "mixture", error=TypeError)


# ---------------------------------------------------------------- mixtures and sampling

GOOD_MU = jnp.eye(2, 3)


@pytest.mark.parametrize("kwargs, name, error", [
    (dict(weights=jnp.array([0.5, 0.5]), centroids=jnp.zeros((0, 3)), sigma=1.0), "centroids", ValueError),
    (dict(weights=jnp.array([1.5, -0.5]), centroids=GOOD_MU, sigma=1.0), "weights", ValueError),
    (dict(weights=jnp.array([0.5, 0.6]), centroids=GOOD_MU, sigma=1.0), "weights", ValueError),
    (dict(weights=jnp.array([1 / 3] * 3), centroids=GOOD_MU, sigma=1.0), "weights", ValueError),
    (dict(weights=jnp.array([0.5, 0.5]), centroids=GOOD_MU, sigma=0.0), "sigma", ValueError),
    (dict(weights=jnp.array([0.5, 0.5]), centroids=GOOD_MU, sigma=-1.0), "sigma", ValueError),
    (dict(weights=jnp.array([0.5, 0.5]), centroids=GOOD_MU, sigma=1e39), "sigma", ValueError),
    (dict(weights=jnp.array([0.5, 0.5]), centroids=GOOD_MU, sigma="0.5"), "sigma", TypeError),
    (dict(weights=jnp.array([0.5, 0.5]), centroids=GOOD_MU, sigma=[0.5]), "sigma", ValueError),
    (dict(weights=jnp.array([0.5, 0.5]), centroids=np.eye(2, 3) * 1e39, sigma=1.0), "centroids", ValueError),
    (dict(weights=jnp.array([0.5, 0.5]), centroids=jnp.ones(3), sigma=1.0), "centroids", ValueError),
])
def test_mixture_rejects(kwargs, name, error):
    assert_names(lambda: ac.GaussianMixture(**kwargs), name, error=error)


@given(st.lists(st.floats(-2.0, 2.0), min_size=2, max_size=2).filter(lambda w: min(w) < 0 or abs(sum(w) - 1) > 1e-4))
def test_bad_weights_are_refused(w):
    assert_names(lambda: ac.GaussianMixture(w, GOOD_MU, 0.5), "weights", error=ValueError)


def test_mixture_fields_are_stored_as_float32_and_float():
    m = ac.GaussianMixture([0.5, 0.5], GOOD_MU.astype(jnp.float16), np.float32(0.5))
    assert m.weights.dtype == m.centroids.dtype == jnp.float32
    assert type(m.sigma) is float
    np.testing.assert_allclose(m.log_weights, np.log([0.5, 0.5]), rtol=1e-6)
    assert np.isfinite(ac.GaussianMixture([1.0, 0.0], GOOD_MU, 0.5).log_weights).all()  # floored


def test_mixture_is_a_pytree_under_jit_vmap_and_eval_shape():
    assert float(jax.jit(lambda m: m.centroids.sum())(MIX)) == pytest.approx(4.0)
    stacked = jax.tree.map(lambda *a: jnp.stack(a), MIX, MIX.centred())
    np.testing.assert_allclose(jax.vmap(lambda m: m.mean.sum())(stacked), [2.0, 0.0], atol=1e-6)
    shapes = jax.eval_shape(lambda m: m, MIX)
    assert shapes.centroids.shape == (2, 3)
    assert jax.jit(lambda m: m)(MIX).sigma == 0.5


@pytest.mark.parametrize("kwargs, name", [
    (dict(K=0), "K"), (dict(K=6, d=5), "K"), (dict(r=-1.0), "r"), (dict(r=1e39), "r"),
    (dict(sigma=NAN), "sigma"), (dict(weights=[0.2, 0.2]), "weights"),
])
def test_orthogonal_mixture_rejects(kwargs, name):
    assert_names(lambda: ac.orthogonal_mixture(**kwargs), name)


@pytest.mark.parametrize("args, name", [
    ((-1, 2, 5, 2.0), "n_prompts"), ((2, 6, 5, 2.0), "K"), ((2, 0, 5, 2.0), "K"), ((2, 2, 5, NAN), "r"),
    ((2, 2, 5, 1e39), "r"), ((2, 2, 5, "2"), "r"),
])
def test_random_orthogonal_centroids_rejects(args, name):
    assert_names(lambda: ac.random_orthogonal_centroids(KEY, *args), name)


def test_samplers_reject_and_take_both_kinds_of_key():
    assert_names(lambda: ac.sample(KEY, MIX, 2, 0), "L")
    assert_names(lambda: ac.sample(KEY, MIX, 0, 5), "n_prompts")
    assert_names(lambda: ac.sample(None, MIX, 2, 5), "key")
    assert_names(lambda: ac.sample_in_context(KEY, 2, 5, 2.0, 0.5, 0, 5), "n_prompts")
    assert_names(lambda: ac.sample_in_context(KEY, 2, 5, 2.0, 0.5, 1, 5, kind="uniform"), "kind")
    assert_names(lambda: ac.sample_in_context(KEY, 2, 5, 2.0, 0.0, 1, 5), "sigma")
    assert_names(lambda: ac.sample_in_context(KEY, 2, 5, 2.0, "0.5", 1, 5), "sigma")
    np.testing.assert_array_equal(ac.sample(jax.random.key(3), MIX, 2, 4)[0], ac.sample(jax.random.PRNGKey(3), MIX, 2, 4)[0])
    C = ac.random_orthogonal_centroids(jax.random.key(0), 3, 2, 5, 2.0)
    np.testing.assert_allclose(C @ np.swapaxes(C, -1, -2), np.broadcast_to(4 * np.eye(2), (3, 2, 2)), atol=1e-5)


# ---------------------------------------------------------------- metrics

@given(st.integers(0, 1), st.integers(0, 2), non_finite)
def test_metrics_of_a_non_finite_head_are_nan_not_zero(head, coordinate, value):
    theta = np.asarray(MIX.centroids).copy()
    theta[head, coordinate] = value
    a = ac.alignment(theta, MIX.centroids)
    assert np.isnan(a[head]) and a[1 - head] == pytest.approx(1.0)
    assert np.isnan(ac.abs_cosines(theta, MIX.centroids)[head]).all()
    assert ac.matching(theta, MIX.centroids)[head] == -1
    assert (np.asarray(ac.head_assignments(theta, z)) == -1).all()


@given(st.integers(0, 3), st.integers(0, 2), non_finite)
def test_a_non_finite_token_is_assigned_minus_one_and_poisons_the_distortion(token, coordinate, value):
    bad = np.asarray(z).copy()
    bad[token, coordinate] = value
    labels = np.asarray(ac.head_assignments(TH, bad))
    assert labels[token] == -1 and (np.delete(labels, token) >= 0).all()
    assert not np.isfinite(ac.distortion(bad, z))


def test_distortion_masks():
    out = jnp.zeros((2, 4, 5))
    target = out.at[..., 0].set(jnp.sqrt(5.0))  # every token at squared distance 5
    assert float(ac.distortion(out, target, jnp.arange(4) < 2)) == pytest.approx(5.0)  # broadcast over prompts
    assert_names(lambda: ac.distortion(out, target, 2 * jnp.ones((2, 4), int)), "mask", error=TypeError)
    assert_names(lambda: ac.distortion(out, target, jnp.zeros((2, 4), bool)), "mask", error=ValueError)
    assert_names(lambda: ac.distortion(out, target, jnp.ones((2, 3), bool)), "mask", error=ValueError)


def test_adjusted_rand_accepts_lists_and_renamed_labels():
    t = [[0, 0, 1, 1], [0, 1, 0, 1]]
    np.testing.assert_allclose(ac.adjusted_rand(t, (1 - np.asarray(t)).tolist()), [1.0, 1.0])


# ---------------------------------------------------------------- key_mask

def test_key_mask_gives_masked_keys_weight_exactly_zero():
    ref = ac.identity_attend(Z, X[:, :3], 1e4)
    moved = X.at[:, 3].set(100.0)  # a masked key that would win every softmax
    np.testing.assert_array_equal(ac.identity_attend(Z, moved, 1e4, key_mask=MASK), ac.identity_attend(Z, X, 1e4, key_mask=MASK))
    np.testing.assert_allclose(ac.identity_attend(Z, X, 1e4, key_mask=MASK), ref, rtol=1e-6, atol=1e-6)
    assert_names(lambda: ac.identity_attend(Z, X, 1.0, key_mask=jnp.zeros(4, bool)), "key_mask", error=ValueError)
    assert_names(lambda: ac.identity_attend(Z, X, 1.0, key_mask=jnp.ones(4, int)), "key_mask", error=TypeError)
    assert_names(lambda: ac.identity_attend(Z, X, 1.0, key_mask=jnp.ones(3, bool)), "key_mask", error=ValueError)


# ---------------------------------------------------------------- under a user's jit

def test_under_jit_shapes_are_checked_and_values_are_not():
    """The documented contract: shape checks run under jit, value checks are skipped."""
    with pytest.raises(ValueError, match="X"):
        jax.jit(lambda x: ac.identity_attention(x, 1.0))(X[0, 0])
    with pytest.raises(ValueError, match="theta"):
        jax.jit(lambda t: ac.two_head_layer(t, X, 1.0))(TH[:, :2])
    out = jax.jit(lambda lam: ac.two_head_layer(TH, X, lam))(-1.0)  # a traced lam is not checked
    assert out.shape == X.shape



# ---------------------------------------------------------------- the one policy
# attnclust._validate answers each kind of bad value once: a wrong type is a TypeError, a
# wrong value a ValueError, both naming the parameter. Its primitives, called as the
# public functions call them.

from attnclust import _validate as v  # noqa: E402


@pytest.mark.parametrize("call, error, text", [
    (lambda: v.positive_int("n", "2"), TypeError, "n must be an integer, got str"),
    (lambda: v.positive_int("n", 2.0), TypeError, "n must be an integer, got float"),
    (lambda: v.positive_int("n", True), TypeError, "n must be an integer, got bool"),
    (lambda: v.positive_int("n", None), TypeError, "n must be an integer"),
    (lambda: v.positive_int("n", 0), ValueError, "n must be an integer >= 1, got n=0"),
    (lambda: v.positive_int("n", 9, maximum=8), ValueError, r"n must be an integer in 1\.\.8, got n=9"),
    (lambda: v.positive_finite("lam", "1"), TypeError, "lam must be a real number, got str"),
    (lambda: v.positive_finite("lam", None), TypeError, "lam must be a real number"),
    (lambda: v.positive_finite("lam", 1j), TypeError, "lam must be a real number"),
    (lambda: v.positive_finite("lam", True), TypeError, "lam must be a real number, got bool"),
    (lambda: v.positive_finite("lam", np.array(["a"])[0]), TypeError, "lam must be a real number"),
    (lambda: v.positive_finite("lam", -1.0), ValueError, r"lam must be > 0, got lam=-1\.0"),
    (lambda: v.positive_finite("lam", NAN), ValueError, "lam must be finite, got lam=nan"),
    (lambda: v.positive_finite("lam", 1e39), ValueError, "float32's range"),
    (lambda: v.positive_finite("lam", np.ones(2)), ValueError, r"lam must be a number, got an array of shape \(2,\)"),
    (lambda: v.number_in("q", 1.5, 0.0, 1.0), ValueError, r"q must lie in \(0, 1\], got q=1\.5"),
    (lambda: v.real_array("X", [["a"]]), TypeError, "X must hold real numbers"),
    (lambda: v.real_array("X", [1j]), TypeError, "X must hold real numbers"),
    (lambda: v.real_array("X", np.array([True])), TypeError, "X must hold real numbers .* got a boolean array"),
    (lambda: v.real_array("X", None), TypeError, "X must be an array of real numbers, got NoneType"),
    (lambda: v.real_array("X", [1.0, NAN]), ValueError, "X must be finite"),
    (lambda: v.real_array("X", [[1.0], [1.0, 2.0]]), ValueError, "X must be a rectangular array"),
    (lambda: v.labels("labels", ["a"]), TypeError, "labels must hold integer labels"),
    (lambda: v.labels("labels", [0.5]), ValueError, "labels must hold integer labels, got non-integer values"),
    (lambda: v.labels("labels", [0, 2], K=2), ValueError, r"labels must lie in 0\.\.K-1 = 0\.\.1"),
    (lambda: v.bool_mask("mask", [1, 0], "tokens"), TypeError, "mask must be a boolean array"),
    (lambda: v.allocation("the sample", 2**70, n=2**70), ValueError, "n=.*too large.*memory"),
])
def test_each_kind_of_bad_value_gets_one_answer(call, error, text):
    with pytest.raises(error, match=text):
        call()


def test_real_numbers_of_every_real_dtype_are_accepted():
    """Integers, float16, bfloat16 and float64 (in float32's range) arrays and 0-d arrays are
    real numbers; NumPy scalars and 0-d arrays are numbers."""
    for dtype in (np.int8, np.uint16, np.int64, np.float16, jnp.bfloat16, np.float64):
        a = v.real_array("X", np.ones(3, dtype))
        assert a.dtype == jnp.float32 and float(a.sum()) == 3.0
    assert v.positive_finite("lam", np.float32(0.5)) == 0.5
    assert v.positive_finite("lam", jnp.asarray(2, jnp.bfloat16)) == 2.0
    assert v.positive_int("n", np.int32(3)) == 3


# ---------------------------------------------------------------- the audit of the public API
# Bad input that was accepted silently, gave a wrong result or failed cryptically (an
# MLIRError, a MemoryError, XLA ending the process): each gets the validators' answer now.


class _ArrayLike:
    """What pandas hands over: an object with ``__array__`` and nothing else."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)


def _run_seeds(**kwargs):
    from attnclust.book import sweeps

    return sweeps.run_seeds("test", **kwargs)


def _nan_tokens():
    bad = np.array(X)
    bad[0, 1, 2] = NAN
    return bad


_BOOL_X = np.ones((2, 4, 3), bool)
_BOOLEAN = r"X must hold real numbers \(integer or floating .* got a boolean array"
_LABELS = r"labels must lie in 0\.\.K-1 = 0\.\.1"


@pytest.mark.parametrize("call, error, text", [
    # GaussianMixture fields given as __array__ objects or memoryviews are checked as arrays
    (lambda: ac.GaussianMixture(_ArrayLike([2.0, -1.0]), GOOD_MU, -1.0), ValueError, "weights must be >= 0"),
    (lambda: ac.GaussianMixture(_ArrayLike([0.5, 0.5]), _ArrayLike(GOOD_MU), -1.0), ValueError, "sigma must be > 0"),
    (lambda: ac.GaussianMixture([0.5, 0.5], GOOD_MU, _ArrayLike(NAN)), ValueError, "sigma must be finite"),
    (lambda: ac.GaussianMixture([0.5, 0.5], GOOD_MU, _ArrayLike(-1.0)), ValueError, "sigma must be > 0"),
    (lambda: ac.GaussianMixture(memoryview(np.array([2.0, -1.0])), GOOD_MU, 0.5), ValueError, "weights must be >= 0"),
    (lambda: ac.GaussianMixture([0.5, 0.5], GOOD_MU, memoryview(np.array(NAN))), ValueError, "sigma must be finite"),
    # boolean tokens are not real numbers
    (lambda: ac.identity_attention(_BOOL_X, 1.0), TypeError, _BOOLEAN),
    (lambda: ac.empirical_risk(TH, _BOOL_X, 1.0), TypeError, _BOOLEAN),
    (lambda: ac.two_head_layer(TH, _BOOL_X, 1.0), TypeError, _BOOLEAN),
    # a count of seeds is an integer >= 1 (2.5 was truncated to 2, -2 an MLIRError)
    (lambda: _run_seeds(seeds=2.5), TypeError, "seeds must be an integer, got float: seeds=2.5"),
    (lambda: _run_seeds(seeds=-2), ValueError, "seeds must be an integer >= 1, got seeds=-2"),
    # labels index the K centroids (7 or -1 picked another centroid)
    (lambda: ac.own_centroids(MIX.centroids, [[0, 7]]), ValueError, _LABELS + ", got labels from 0 to 7"),
    (lambda: ac.own_centroids(MIX.centroids, [[0, -1]]), ValueError, _LABELS + ", got labels from -1 to 0"),
    (lambda: ac.within_spread(X, [[0, 1, 2, 3], [0, 0, 1, 1]], 2), ValueError, _LABELS),
    (lambda: ac.within_spread(X[:0], np.zeros((0, 4), int), 2), ValueError, r"labels must have shape \(n, L\) with n >= 1"),
    # a NaN token has no nearest centroid
    (lambda: ac.nearest_centroid(_nan_tokens(), MIX.centroids), ValueError, "Z must be finite; it contains NaN or inf"),
    # an empty batch has no mean (it was reported as a float32 overflow)
    (lambda: ac.empirical_risk(TH, np.zeros((0, 4, 3)), 1.0), ValueError, r"X must hold at least one prompt, got shape \(0, 4, 3\)"),
    # sizes beyond what the quadrature rule or the device holds (a MemoryError, XLA ending the process)
    (lambda: ac.population_risk(TH, MIX, 1.0, n_nodes=20_000), ValueError, r"n_nodes must be an integer in 2\.\.256, got n_nodes=20000"),
    (lambda: ac.sample(KEY, MIX, 10**10, 4), ValueError, r"n_prompts=10000000000, L=4: too large, .* more than the device's memory"),
    (lambda: ac.fit(KEY, MIX, steps=10**9, record_every=1, progress=False), ValueError,
     r"steps=1000000000, record_every=1: too large, the records .* more than the device's memory"),
])
def test_the_audited_bad_inputs_are_refused(call, error, text):
    with pytest.raises(error, match=text):
        call()


def test_the_audited_bfloat16_arrays_are_accepted_as_float32():
    """bfloat16 arrays are real numbers ("not real numbers" was the answer): converted to
    float32, they give what their float32 values give, wherever an array is taken."""
    half = X.astype(jnp.bfloat16)
    up = half.astype(jnp.float32)
    for call in (lambda A: ac.identity_attention(A, 1.0), lambda A: ac.empirical_risk(TH, A, 1.0),
                 lambda A: ac.nearest_centroid(A, MIX.centroids), lambda A: ac.within_spread(A, np.zeros((2, 4), int), 2),
                 lambda A: ac.GaussianMixture([0.5, 0.5], A[0, :2], 0.5).centroids):
        for given_ in (half, np.asarray(half)):
            np.testing.assert_array_equal(call(given_), call(up))

"""The kernels of attnclust/_kernels.py: the rank-one head pooling and its hand-written gradient,
and (at the end) every public path to a layer against the one kernel it is built on.

The reference is the formula differentiated by JAX: out_q = sum_k softmax_k(lam Pq_q Pk_k)
Pk_k with ``jax.nn.softmax``, in float64 (``jax.enable_x64``), where it is accurate for the
logits drawn here (|logit| <= about 60). The library's float32 gradient is compared with it
at a relative 2e-4 of the largest entry: float32 rounding of sums over at most 40 terms is
about 1e-6 relative, and an error in any of the three derivative formulas is O(1).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnclust as ac
from attnclust._kernels import rank_one_softmax_pool


def _reference(lam, Pq, Pk):
    p = jax.nn.softmax(lam * Pq[..., :, None] * Pk[..., None, :], axis=-1)
    return jnp.sum(p * Pk[..., None, :], axis=-1)


def _weighted(pool, w):
    return lambda lam, Pq, Pk: jnp.sum(w * pool(lam, Pq, Pk))


def _loss(pool):
    """sum(w * pool(lam, Pq, Pk)) with w an argument, so that one jitted program serves
    every example of a shape (a closure over w would be traced and compiled anew)."""
    return lambda lam, Pq, Pk, w: jnp.sum(w * pool(lam, Pq, Pk))


_REF_OUT = jax.jit(_reference)
_REF_GRAD = jax.jit(jax.grad(_loss(_reference), argnums=(0, 1, 2)))
_LIB_OUT = jax.jit(rank_one_softmax_pool)
_LIB_GRAD = jax.jit(jax.grad(_loss(rank_one_softmax_pool), argnums=(0, 1, 2)))


def _inputs(seed, Q, K, scale):
    rng = np.random.default_rng(seed)
    return (scale * rng.normal(size=(3, Q)), scale * rng.normal(size=(3, K)), rng.normal(size=(3, Q)))


def _assert_close(got, want, rel=2e-4):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=rel * max(1.0, np.abs(want).max()))


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([(1, 1), (5, 5), (7, 40), (40, 3)]),
       st.floats(0.01, 20.0), st.floats(0.1, 1.7))
def test_gradient_matches_autodiff_of_the_formula(seed, shape, lam, scale):
    Pq, Pk, w = _inputs(seed, *shape, scale)
    with jax.enable_x64(True):
        want_out = _REF_OUT(np.float64(lam), Pq, Pk)
        want = _REF_GRAD(np.float64(lam), Pq, Pk, w)
    f32 = [jnp.asarray(a, jnp.float32) for a in (Pq, Pk, w)]
    got_out = _LIB_OUT(jnp.float32(lam), f32[0], f32[1])
    got = _LIB_GRAD(jnp.float32(lam), *f32)
    _assert_close(got_out, want_out)
    for g, r in zip(got, want):
        _assert_close(g, r)


def test_gradient_is_finite_and_exact_at_huge_temperature():
    """lam = 1e4: the formula's logits reach 1e5, so the reference is the float64 value of
    the same expression; the library in float32 must stay finite and agree."""
    Pq, Pk, w = _inputs(3, 6, 9, 1.0)
    lam = 1e4
    with jax.enable_x64(True):
        want = _LIB_GRAD(np.float64(lam), Pq, Pk, w)[1:]
        # the float64 library gradient itself agrees with finite differences of the output
        eps = 1e-7
        e = np.zeros_like(Pk)
        e[0, 4] = eps
        loss = jax.jit(_loss(rank_one_softmax_pool))
        fd = (loss(np.float64(lam), Pq, Pk + e, w) - loss(np.float64(lam), Pq, Pk - e, w)) / (2 * eps)
        assert abs(float(fd) - float(want[1][0, 4])) <= 1e-5 * max(1.0, abs(float(fd)))
    f32 = [jnp.asarray(a, jnp.float32) for a in (Pq, Pk, w)]
    got = _LIB_GRAD(jnp.float32(lam), *f32)[1:]
    for g, r in zip(got, want):
        assert np.all(np.isfinite(g))
        _assert_close(g, r, rel=1e-3)


@pytest.mark.slow
def test_second_derivatives_and_vmap_over_lam():
    """jax.hessian (forward over reverse) of a loss through the layer equals the reference's;
    vmap over a batch of temperatures gives each temperature's gradient."""
    Pq, _, w = _inputs(5, 6, 6, 1.0)
    with jax.enable_x64(True):
        # jitted: one compilation each instead of one per primitive of the eager hessian
        H = jax.jit(jax.hessian(lambda P: _weighted(rank_one_softmax_pool, w)(0.7, P, P)))(Pq)
        H_ref = jax.jit(jax.hessian(lambda P: _weighted(_reference, w)(0.7, P, P)))(Pq)
        np.testing.assert_allclose(H, H_ref, rtol=1e-9, atol=1e-9)
    lams = jnp.array([0.3, 1.0, 4.0], jnp.float32)
    P32, w32 = jnp.asarray(Pq, jnp.float32), jnp.asarray(w, jnp.float32)
    grad_lam = jax.grad(lambda lam: _weighted(rank_one_softmax_pool, w32)(lam, P32, P32))
    g = jax.vmap(grad_lam)(lams)
    one_lam = jax.jit(grad_lam)
    for i, lam in enumerate(lams):
        np.testing.assert_allclose(g[i], one_lam(lam), rtol=1e-5)


@pytest.mark.slow
def test_training_loss_gradient_matches_reference_layer(key):
    """The gradient fit follows (the empirical risk through the two-head layer) equals the
    one through the formula, at the default mixture."""
    m = ac.orthogonal_mixture()
    X, _ = ac.sample(key, m, 4, 20)
    theta = ac.init_theta(jax.random.fold_in(key, 1), m, init="near")

    def risk(pool, theta, X):
        P = jnp.swapaxes(X @ theta.T, -1, -2)
        out = jnp.swapaxes(pool(1.0, P, P), -1, -2) @ theta
        return jnp.mean(jnp.sum((X - out) ** 2, axis=-1))

    got = jax.jit(jax.grad(ac.empirical_risk))(theta, X, 1.0)
    with jax.enable_x64(True):
        want = jax.jit(jax.grad(lambda t: risk(_reference, t, np.asarray(X, np.float64))))(
            np.asarray(theta, np.float64))
    _assert_close(got, want)
    with pytest.raises(TypeError, match="forward-mode"):
        jax.jvp(lambda t: ac.empirical_risk(t, X, 1.0), (theta,), (theta,))


# --------------------------------------------------------------------------- tiles
# The forward pass computes the weights tile by tile (all pairs at once, a few whole pairs a
# tile with the last tile padded, or blocks of queries of one pair with the last block
# padded). Small ``tile_bytes`` force each path at small sizes, so the same float64
# reference checks all of them.

def _tiled(tile_bytes):
    pool = lambda lam, Pq, Pk: rank_one_softmax_pool(lam, Pq, Pk, tile_bytes=tile_bytes)
    return jax.jit(pool), jax.jit(jax.grad(_loss(pool), argnums=(0, 1, 2)))


# tile_bytes as a number of float32 rows of K = 40 keys (160 bytes a row), for the 3 pairs of
# _inputs: 10**6 holds every pair at once; 80 rows two pairs of 40 queries a tile (the second
# tile padded); 40 rows one pair of 40 queries a tile, or two of 17 (padded); 7 rows blocks
# of 7 queries (the last one padded), or two pairs of 3 queries; 1 row one query at a time
_TILES = {rows: _tiled(rows * 160) for rows in (10**6, 80, 40, 7, 1)}


@pytest.mark.slow
@settings(max_examples=16, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(sorted(_TILES)), st.sampled_from([(3, 40), (40, 40), (17, 40)]),
       st.sampled_from([0.05, 1.0, 30.0, 1e4]), st.floats(0.1, 1.7))
def test_every_tiling_matches_autodiff_of_the_formula(seed, rows, shape, lam, scale):
    """Values and gradients through every tiling path, at temperatures up to 1e4, against
    autodiff of the formula in float64 (at lam = 1e4 the softmax of the reference, computed
    with the maximum subtracted in float64, is exact to ~1e-12 here: |logit| <= 1e4 * 3)."""
    Pq, Pk, w = _inputs(seed, *shape, scale)
    out, grad = _TILES[rows]
    with jax.enable_x64(True):
        want_out = _REF_OUT(np.float64(lam), Pq, Pk)
        want = _REF_GRAD(np.float64(lam), Pq, Pk, w)
    f32 = [jnp.asarray(a, jnp.float32) for a in (Pq, Pk, w)]
    _assert_close(out(jnp.float32(lam), f32[0], f32[1]), want_out)
    got = grad(jnp.float32(lam), *f32)
    # d/d lam at lam = 1e4 is Pq Var, with Var ~ 1/(lam Pq)^2: relative to the largest entry
    for g, r in zip(got, want):
        _assert_close(g, r, rel=2e-4 if lam < 1e3 else 1e-3)


@pytest.mark.slow
def test_tiles_give_the_same_numbers_in_float32():
    """Every tiling gives the same float32 outputs and gradients to rounding (the sums are
    the same, in another order)."""
    Pq, Pk, w = (jnp.asarray(a, jnp.float32) for a in _inputs(11, 17, 40, 1.0))
    lam = jnp.float32(2.0)
    ref_out, ref_grad = _TILES[10**6]
    for rows, (out, grad) in _TILES.items():
        np.testing.assert_allclose(out(lam, Pq, Pk), ref_out(lam, Pq, Pk), rtol=0, atol=1e-6)
        for g, r in zip(grad(lam, Pq, Pk, w), ref_grad(lam, Pq, Pk, w)):
            np.testing.assert_allclose(g, r, rtol=0, atol=1e-5 * max(1.0, float(jnp.abs(r).max())))


def test_broadcast_batch_shapes():
    """Queries and keys with broadcastable batch shapes (two_head_attend's Z and X): the same
    as the pooling of the explicitly broadcast arrays, and the keys' gradient summed over
    the broadcast axis."""
    rng = np.random.default_rng(2)
    Pq = jnp.asarray(rng.normal(size=(3, 1, 5)), jnp.float32)
    Pk = jnp.asarray(rng.normal(size=(1, 2, 8)), jnp.float32)
    got = _LIB_OUT(1.5, Pq, Pk)  # jitted: one compilation, not one per operation
    assert got.shape == (3, 2, 5)
    want = _REF_OUT(1.5, jnp.broadcast_to(Pq, (3, 2, 5)), jnp.broadcast_to(Pk, (3, 2, 8)))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    g = jax.jit(jax.grad(lambda k: jnp.sum(jnp.sin(rank_one_softmax_pool(1.5, Pq, k)))))(Pk)
    g_ref = jax.jit(jax.grad(lambda k: jnp.sum(jnp.sin(_reference(1.5, Pq, k)))))(Pk)
    assert g.shape == Pk.shape
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("L", [256, 1024])
def test_training_step_keeps_no_score_matrix(L):
    """The compiled training step (forward, backward and Adam on 32 prompts, 2 heads) holds
    no L x L array: its temporary memory stays within two tiles, where one float32 L x L
    array per prompt and head is 2 * 32 * 4 L^2 bytes (17 MB at L = 256, 268 MB at
    L = 1024; the pooling that stored its weights held several of those)."""
    import optax

    from attnclust._kernels import TILE_BYTES

    m = ac.orthogonal_mixture()
    X = jax.ShapeDtypeStruct((32, L, m.d), jnp.float32)
    theta = jax.ShapeDtypeStruct((2, m.d), jnp.float32)
    opt = optax.adam(1e-2)
    step = ac.make_step(opt, 1.0)
    compiled = jax.jit(lambda th, X: step((th, opt.init(th)), X)).lower(theta, X).compile()
    temp = compiled.memory_analysis().temp_size_in_bytes
    score_matrix = 2 * 32 * 4 * L * L  # one float32 L x L per prompt and head
    assert temp <= 2 * TILE_BYTES < score_matrix, (temp, score_matrix)


# --------------------------------------------------------------------------- callers
# Every public path to a layer is built on one kernel of attnclust._kernels: where two paths
# compute the same numbers (the same prompts, temperature and mask), they must agree to
# float32 rounding. Each property draws the prompts with NumPy from a seed, on shapes from
# short lists so that compiled programs are reused across examples.

from attnclust import _kernels as kernels  # noqa: E402
from attnclust import stationary, temperature  # noqa: E402
from attnclust.general_mixture import GeneralMixture  # noqa: E402
from attnclust.symbolic import identity_attention_float64  # noqa: E402

_paths = settings(max_examples=10, deadline=None)
_ATOL = 2e-5  # float32 rounding of sums of at most 30 tokens of size ~3, in another order


def _prompts(seed, n, L, d, scale=1.5):
    rng = np.random.default_rng(seed)
    return jnp.asarray(scale * rng.normal(size=(n, L, d)), jnp.float32)


def _masked_reference(X, lam, mask):
    """Identity attention in float64 NumPy with a (..., Q, K) mask: masked keys weigh 0."""
    X = np.asarray(X, np.float64)
    s = np.where(mask, lam * X @ np.swapaxes(X, -1, -2), -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ X


@_paths
@given(st.integers(0, 2**31 - 1), st.sampled_from([(2, 6, 3), (3, 11, 2)]), st.floats(0.05, 5.0))
def test_identity_attention_paths_agree(seed, shape, lam):
    """identity_attention (full and blocked), identity_attend of the prompt against itself,
    temperature.identity_layer (one lam and one per prompt) and identity_weights @ X, and the
    kernel itself: the same Q(X)."""
    X = _prompts(seed, *shape)
    ref = np.asarray(kernels.identity_rows(X, X, lam))
    lams = np.full(shape[0], lam, np.float32)
    for got in (ac.identity_attention(X, lam), ac.identity_attention(X, lam, block=4),
                ac.identity_attend(X, X, lam), temperature.identity_layer(X, lam),
                temperature.identity_layer(X, lams), temperature.identity_weights(X, lam) @ X,
                ac.identity_stack(X, lam, 1)[1]):
        np.testing.assert_allclose(got, ref, rtol=0, atol=_ATOL)
    np.testing.assert_allclose(ref, identity_attention_float64(np.asarray(X), lam), rtol=0, atol=1e-4)


@_paths
@given(st.integers(0, 2**31 - 1), st.sampled_from([(2, 6, 3), (3, 11, 2)]), st.floats(0.05, 5.0))
def test_self_masked_paths_agree(seed, shape, lam):
    """The self-masked layer three ways (masked_identity_attention, identity_layer with
    mask_self, identity_weights with mask_self @ X) and identity_attend of every token alone
    against its prompt with its own key masked: the float64 softmax over k != l."""
    X = _prompts(seed, *shape)
    L = shape[1]
    ref = _masked_reference(X, lam, ~np.eye(L, dtype=bool))
    one_by_one = ac.identity_attend(X[:, :, None, :], X[:, None, :, :], lam, key_mask=~jnp.eye(L, dtype=bool))[:, :, 0]
    for got in (temperature.masked_identity_attention(X, lam), temperature.identity_layer(X, lam, mask_self=True),
                temperature.identity_weights(X, lam, mask_self=True) @ X, one_by_one):
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-4)
    np.testing.assert_array_equal(np.diagonal(temperature.identity_weights(X, lam, mask_self=True), 0, 1, 2), 0.0)


@_paths
@given(st.integers(0, 2**31 - 1), st.integers(1, 6), st.floats(0.05, 5.0))
def test_key_mask_equals_dropping_the_keys(seed, kept, lam):
    """identity_attend with a key mask that keeps the first ``kept`` keys is the attention over
    those keys alone."""
    X = _prompts(seed, 2, 6, 3)
    Z = X[:, :2]
    got = ac.identity_attend(Z, X, lam, key_mask=jnp.arange(6) < kept)
    np.testing.assert_allclose(got, kernels.identity_rows(Z, X[:, :kept], lam), rtol=0, atol=_ATOL)


@_paths
@given(st.integers(0, 2**31 - 1), st.floats(0.05, 2.0))
def test_sure_and_stack_paths_use_the_layer(seed, lam):
    """identity_sure's residual term is that of identity_layer's outputs (its divergence
    term is checked against autodiff in test_temperature), and the stack rule's stack is
    identity_stack's last layer, at the same temperature per prompt."""
    X = _prompts(seed, 3, 8, 2)
    Q, res, _ = kernels.sure_terms(X, jnp.full(3, lam, jnp.float32), False)
    np.testing.assert_allclose(Q, temperature.identity_layer(X, lam), rtol=0, atol=_ATOL)
    np.testing.assert_allclose(res, np.sum((np.asarray(Q) - np.asarray(X)) ** 2, -1), rtol=1e-5, atol=1e-6)
    deep = kernels.identity_stack(X, jnp.full(3, lam, jnp.float32), 3, False)
    np.testing.assert_allclose(deep, ac.identity_stack(X, lam, 3)[-1], rtol=0, atol=1e-4)


@_paths
@given(st.integers(0, 2**31 - 1), st.sampled_from([1, 2, 3]), st.floats(0.05, 5.0))
def test_two_head_paths_agree(seed, H, lam):
    """two_head_layer, two_head_attend of the prompt against itself, the kernel, the
    empirical risk (a mean of the layer's errors), and stationary's risk on a fixed sample."""
    X = _prompts(seed, 2, 7, 3)
    theta = jnp.asarray(np.random.default_rng(seed + 1).normal(size=(H, 3)), jnp.float32)
    ref = np.asarray(kernels.two_head(theta, X, lam))
    for got in (ac.two_head_layer(theta, X, lam), ac.two_head_attend(theta, X, X, lam)):
        np.testing.assert_allclose(got, ref, rtol=0, atol=_ATOL)
    risk = float(np.mean(np.sum((np.asarray(X) - ref) ** 2, -1)))
    assert float(ac.empirical_risk(theta, X, lam)) == pytest.approx(risk, rel=1e-5, abs=1e-6)
    value, _, _ = stationary.empirical_value_grad_hess(theta, X, lam)
    assert value == pytest.approx(risk, rel=1e-5, abs=1e-6)


@_paths
@given(st.integers(0, 2**31 - 1), st.floats(0.05, 5.0))
def test_limit_paths_agree(seed, lam):
    """head_output_limit is the head coefficients times theta; general_identity_limit of the
    same isotropic mixture is identity_limit; population_risk_mc averages head_output_limit's
    errors."""
    m = ac.orthogonal_mixture(K=2, d=3, r=2.0, sigma=0.5)
    rng = np.random.default_rng(seed)
    theta = jnp.asarray(rng.normal(size=(2, 3)), jnp.float32)
    z = jnp.asarray(1.5 * rng.normal(size=(5, 3)), jnp.float32)
    np.testing.assert_allclose(ac.head_output_limit(theta, z, m, lam),
                               ac.head_coefficients(z @ theta.T, theta, m, lam) @ theta, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ac.limits.general_identity_limit(z, GeneralMixture.from_gaussian(m), lam),
                               ac.identity_limit(z, m, lam), rtol=1e-5, atol=1e-5)
    key = jax.random.PRNGKey(seed % 1000)
    draws = ac.sample(key, m, 64, 1)[0][:, 0]
    mc = float(np.mean(np.sum((np.asarray(draws) - np.asarray(ac.head_output_limit(theta, draws, m, lam))) ** 2, -1)))
    assert float(ac.population_risk_mc(key, theta, m, lam, 64)) == pytest.approx(mc, rel=1e-5)


def test_temperature_layers_are_finite_at_the_largest_temperature():
    """The rules' layers use the library's overflow-safe identity kernel: at lam = 3e38 (the
    softmax of lam <x, x'> overflows float32 for these tokens, |<x, x'>| up to about 20,
    which made jax.nn.softmax NaN) they are finite and each output is its hard-argmax key."""
    X = _prompts(3, 2, 9, 3)
    for out in (temperature.identity_layer(X, 3e38), temperature.identity_layer(X, 3e38, mask_self=True),
                temperature.identity_sure(X, 3e38, 0.25), temperature.identity_weights(X, 3e38)):
        assert np.all(np.isfinite(np.asarray(out)))
    Xn = np.asarray(X, np.float64)
    hard = np.take_along_axis(Xn, np.argmax(Xn @ np.swapaxes(Xn, -1, -2), -1)[..., None], axis=-2)
    np.testing.assert_allclose(temperature.identity_layer(X, 3e38), hard, rtol=0, atol=1e-5)

"""Invariants of the two attention layers, as property tests (chapters/attention.md,
def-two-head-layer; chapters/quantization.md, def-identity-attention)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import attnclust as ac
from attnclust import _kernels as kernels

# Every new shape compiles anew, so each property runs on 12 derandomised examples.
few = settings(max_examples=12)

# Inputs of moderate size: float32 outputs are compared with rtol 1e-4 / atol 1e-4, which is
# about 1e3 ulps at the magnitudes drawn here, far above rounding and far below any bug.
seeds = st.integers(0, 2**31 - 1)
lams = st.floats(0.05, 5.0)
# Shapes come from short lists so that compiled functions are reused across examples.
lengths = st.sampled_from([1, 4, 9])
dims = st.sampled_from([1, 3, 5])
heads = st.sampled_from([1, 2, 4])


def _draw(seed, L, d, H=None):
    """Drawn with NumPy: no JAX program to compile for each new shape."""
    rng = np.random.default_rng(seed)
    X = jnp.asarray(rng.normal(size=(2, L, d)), jnp.float32)
    theta = jnp.asarray(rng.normal(size=(H or 1, d)), jnp.float32)
    perm = rng.permutation(L)
    return X, theta, perm


@pytest.mark.slow
@few
@given(seeds, lengths, dims, heads, lams)
def test_two_head_is_permutation_equivariant(seed, L, d, H, lam):
    X, theta, perm = _draw(seed, L, d, H)
    out = np.asarray(ac.two_head_layer(theta, X, lam))
    out_perm = ac.two_head_layer(theta, np.asarray(X)[:, perm], lam)
    np.testing.assert_allclose(out_perm, out[:, perm], rtol=1e-4, atol=1e-4)


@pytest.mark.slow
@few
@given(seeds, lengths, dims, lams)
def test_identity_is_permutation_equivariant(seed, L, d, lam):
    X, _, perm = _draw(seed, L, d)
    np.testing.assert_allclose(
        ac.identity_attention(np.asarray(X)[:, perm], lam), np.asarray(ac.identity_attention(X, lam))[:, perm],
        rtol=1e-4, atol=1e-4,
    )


@few
@given(seeds, lengths, st.sampled_from([3, 5]), st.sampled_from([1, 2]), lams)
def test_two_head_outputs_lie_in_span_of_theta(seed, L, d, H, lam):
    """The residual after projecting on span(theta) is zero (d > H, so the span is proper)."""
    X, theta, _ = _draw(seed, L, d, H)
    out = np.asarray(ac.two_head_layer(theta, X, lam), dtype=np.float64)
    Q, _ = np.linalg.qr(np.asarray(theta, dtype=np.float64).T)  # (d, H) orthonormal basis
    residual = out - out @ Q @ Q.T
    assert np.abs(residual).max() <= 1e-4 * max(1.0, np.abs(out).max())


@few
@given(seeds, lengths, dims, lams)
def test_identity_outputs_lie_in_convex_hull(seed, L, d, lam):
    """Each output is a convex combination of its prompt's tokens: the linear program
    'find w >= 0, sum w = 1, X^T w = y' is feasible (up to float32 rounding, absorbed by
    a slack of 1e-4)."""
    X, _, _ = _draw(seed, L, d)
    out = np.asarray(ac.identity_attention(X, lam), dtype=np.float64)
    Xn = np.asarray(X, dtype=np.float64)
    for p in range(Xn.shape[0]):
        for y in out[p]:
            A_ub = np.vstack([Xn[p].T, -Xn[p].T])
            b_ub = np.concatenate([y + 1e-4, -(y - 1e-4)])
            res = linprog(np.zeros(L), A_ub=A_ub, b_ub=b_ub, A_eq=np.ones((1, L)), b_eq=[1.0],
                          bounds=[(0, None)] * L)
            assert res.status == 0, (y, Xn[p])


@pytest.mark.slow
@few
@given(seeds, st.sampled_from([1, 7, 30]), dims, st.sampled_from([1, 4, 7, 50]), lams)
def test_blocked_identity_matches_unblocked(seed, L, d, block, lam):
    X, _, _ = _draw(seed, L, d)
    np.testing.assert_allclose(
        ac.identity_attention(X, lam, block=block), ac.identity_attention(X, lam),
        rtol=1e-5, atol=1e-5,
    )


@pytest.mark.slow
@few
@given(seeds, st.sampled_from([1, 7, 30]), st.sampled_from([1, 4, 7, 50]), st.sampled_from([1, 3, 8]))
def test_key_tiles_match_unblocked(seed, L, block, key_block):
    """Several key tiles, with padding in the last: the online softmax's rescaling and the
    masked padded keys (KEY_BLOCK is larger than any L here, so the public call has one)."""
    X, _, _ = _draw(seed, L, 3)
    np.testing.assert_allclose(
        kernels.identity_blocked(X, 2.0, min(block, L), key_block), ac.identity_attention(X, 2.0),
        rtol=1e-5, atol=1e-5,
    )


def test_blocked_identity_is_finite_at_huge_temperature(key):
    """lam = 1e4 with logits near 1e5: each output is (up to rounding) its nearest-in-score
    token, for the tiled and the unblocked evaluations alike."""
    X = 10.0 * jax.random.normal(key, (1, 20, 3))
    for out in (kernels.identity_blocked(X, 1e4, 4, 6), ac.identity_attention(X, 1e4)):
        assert np.all(np.isfinite(out))
        best = jnp.argmax(X[0] @ X[0].T, axis=-1)
        np.testing.assert_allclose(out[0], X[0][best], rtol=1e-5, atol=1e-4)


def test_two_head_layer_is_sign_invariant(key):
    """Flipping the sign of a head leaves the layer unchanged (chapters/attention.md,
    def-two-head-layer)."""
    X = jax.random.normal(key, (3, 9, 4))
    theta = jax.random.normal(jax.random.fold_in(key, 1), (2, 4))
    flipped = theta.at[1].multiply(-1.0)
    np.testing.assert_allclose(ac.two_head_layer(flipped, X, 0.7), ac.two_head_layer(theta, X, 0.7), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_two_head_matches_naive_definition(key):
    """Against a direct transcription of the formula, with jax.nn.softmax on small logits."""
    X = jax.random.normal(key, (2, 7, 3))
    theta = jax.random.normal(jax.random.fold_in(key, 1), (3, 3))
    lam = 0.8
    P = X @ theta.T  # (n, L, H)
    expected = jnp.zeros_like(X)
    for h in range(3):
        A = jax.nn.softmax(lam * P[..., :, None, h] * P[..., None, :, h], axis=-1)
        expected += jnp.einsum("nqk,nk->nq", A, P[..., h])[..., None] * theta[h]
    np.testing.assert_allclose(ac.two_head_layer(theta, X, lam), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_identity_stack(key):
    X, _, _ = ac.sample_in_context(key, 2, 5, 2.0, 0.5, 3, 20)
    st = ac.identity_stack(X, 0.7, 3)
    assert st.shape == (4, 3, 20, 5)
    np.testing.assert_allclose(st[1], ac.identity_attention(X, 0.7), atol=1e-6)
    np.testing.assert_allclose(st[2], ac.identity_attention(st[1], 0.7), atol=1e-6)
    assert ac.identity_stack(X, 0.7, 0).shape == (1, 3, 20, 5)


@pytest.mark.usefixtures("typecheck_off")
def test_boolean_tokens_are_refused_and_bfloat16_accepted(key):
    """A boolean array is not tokens (a mask passed by mistake): TypeError naming X and the
    dtypes allowed. bfloat16 tokens are real numbers: converted to float32 like float16."""
    X = jax.random.normal(key, (2, 6, 3))
    theta = jnp.eye(2, 3)
    for call in (lambda A: ac.two_head_layer(theta, A, 1.0), lambda A: ac.identity_attention(A, 1.0)):
        with pytest.raises(TypeError, match=r"X must hold real numbers \(integer or floating"):
            call(X > 0)
        half = X.astype(jnp.bfloat16)
        for given_ in (half, np.asarray(half)):
            out = call(given_)
            assert out.dtype == jnp.float32
            np.testing.assert_allclose(out, call(half.astype(jnp.float32)), rtol=0, atol=0)


def test_identity_attention_tiles_on_its_own_above_the_memory_bound(monkeypatch, key):
    """Without ``block``, a batch whose scores exceed FULL_SCORES_BYTES is computed tile by
    tile (AUTO_BLOCK queries a tile) instead of as one L x L array: the same numbers."""
    from attnclust import attention

    X = jax.random.normal(key, (2, 40, 3))
    full = ac.identity_attention(X, 0.7)
    monkeypatch.setattr(attention, "FULL_SCORES_BYTES", 4 * 2 * 40 * 40 - 1)
    monkeypatch.setattr(kernels, "identity_full", None)  # the full path may not run
    np.testing.assert_allclose(ac.identity_attention(X, 0.7), full, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_identity_attention_of_a_long_prompt_without_block():
    """L = 60,000: one 14 GB array of scores failed in XLA ("YNNPACK operation failed"); the
    automatic tiles keep it finite, each output a convex combination of the tokens."""
    X = jnp.asarray(np.random.default_rng(0).normal(size=(1, 60_000, 2)), jnp.float32)
    out = np.asarray(ac.identity_attention(X, 0.5))
    assert out.shape == X.shape and np.all(np.isfinite(out))
    assert np.all(out.max(axis=1) <= np.asarray(X).max(axis=1)) and np.all(out.min(axis=1) >= np.asarray(X).min(axis=1))


# ---------------------------------------------------------------- bad and extreme input of the layers
# Each call of these tables either raises a clear error or returns a correct finite result
# (tests/bad_input.py's ``check_case``).

from bad_input import (  # noqa: E402
    BAD_ARRAYS as bad_arrays,
    BAD_LAMS,
    check_case,
    close,
    collector,
    finite,
    hard_identity,
    HUGE_LAMS,
    NAN,
    nan_at,
    TH,
    X,
    Z,
)

_BAD: list = []
case = collector(_BAD)

th = ac.two_head_layer
for lam in BAD_LAMS:
    case(f"two_head_layer lam={lam}", lambda lam=lam: th(TH, X, lam), ["lam"], error=True)
case("two_head_layer lam='1'", lambda: th(TH, X, "1"), ["lam"], error=True)
case("two_head_layer lam=(2,)", lambda: th(TH, X, jnp.ones(2)), ["lam"], error=True)
for lam in HUGE_LAMS:
    case(f"two_head_layer lam={lam:g}", lambda lam=lam: th(TH, X, lam))
for label, f in bad_arrays:
    case(f"two_head_layer X {label}", lambda f=f: th(TH, f(X), 1.0), ["X"], error=True)
    case(f"two_head_layer theta {label}", lambda f=f: th(f(TH), X, 1.0), ["theta"], error=True)
case("two_head_layer X float16 lam=1e4", lambda: th(TH, X.astype(jnp.float16), 1e4))
case("two_head_layer X*1e20", lambda: th(TH, X * 1e20, 1.0), ["X"])
case("two_head_layer theta*1e10", lambda: th(TH * 1e10, X, 1.0), ["theta"])
case("two_head_layer X list", lambda: th(TH, X.tolist(), 1.0), check=close(th(TH, X, 1.0)))
case("two_head_layer theta list", lambda: th(TH.tolist(), X, 1.0), check=close(th(TH, X, 1.0)))
case("two_head_layer X 1-D", lambda: th(TH, X[0, 0], 1.0), ["X"], error=True)
case("two_head_layer X L=0", lambda: th(TH, X[:, :0], 1.0), ["X", "L"], error=True)
case("two_head_layer theta wrong d", lambda: th(TH[:, :4], X, 1.0), ["theta"], error=True)
case("two_head_layer theta 1-D", lambda: th(TH[0], X, 1.0), ["theta"], error=True)
case("two_head_layer theta 3-D", lambda: th(TH[None], X, 1.0), ["theta"], error=True)
case("two_head_layer H=0", lambda: th(TH[:0], X, 1.0), ["theta", "H"], error=True)
case("two_head_layer X int", lambda: th(TH, jnp.round(X).astype(int), 1.0))

ta = ac.two_head_attend
for lam in BAD_LAMS:
    case(f"two_head_attend lam={lam}", lambda lam=lam: ta(TH, Z, X, lam), ["lam"], error=True)
for lam in HUGE_LAMS:
    case(f"two_head_attend lam={lam:g}", lambda lam=lam: ta(TH, Z, X, lam))
for label, f in bad_arrays[:3]:
    case(f"two_head_attend Z {label}", lambda f=f: ta(TH, f(Z), X, 1.0), ["Z"], error=True)
    case(f"two_head_attend X {label}", lambda f=f: ta(TH, Z, f(X), 1.0), ["X"], error=True)
case("two_head_attend theta nan", lambda: ta(nan_at(TH), Z, X, 1.0), ["theta"], error=True)
case("two_head_attend Z wrong d", lambda: ta(TH, Z[..., :4], X, 1.0), ["Z"], error=True)
case("two_head_attend batch mismatch", lambda: ta(TH, jnp.concatenate([Z, Z[:1]]), X, 1.0), [("Z", "X")], error=True)
case("two_head_attend Z 1-D", lambda: ta(TH, Z[0, 0], X, 1.0), ["Z"], error=True)
case("two_head_attend X*1e20", lambda: ta(TH, Z, X * 1e20, 1.0), ["X"])
case("two_head_attend lists", lambda: ta(TH.tolist(), Z.tolist(), X.tolist(), 1.0), check=close(ta(TH, Z, X, 1.0)))
case("two_head_attend float16", lambda: ta(TH, Z.astype(jnp.float16), X.astype(jnp.float16), 1e4))

ia = ac.identity_attention
for block in (None, 4):
    for lam in BAD_LAMS:
        case(f"identity_attention block={block} lam={lam}", lambda lam=lam, b=block: ia(X, lam, block=b), ["lam"], error=True)
    case(f"identity_attention block={block} lam=1", lambda b=block: ia(X, 1.0, block=b), check=close(ia(X, 1.0)))
    for lam in HUGE_LAMS:
        # at lam >= 1e9 the softmax is a hard argmax on the default mixture's tokens
        chk = close(hard_identity(X, X)) if lam >= 1e9 else None
        case(f"identity_attention block={block} lam={lam:g}", lambda lam=lam, b=block: ia(X, lam, block=b), check=chk)
    case(f"identity_attention block={block} X float16 lam=1e4", lambda b=block: ia(X.astype(jnp.float16), 1e4, block=b),
         check=lambda r: finite(r) and r.dtype == jnp.float32)
    case(f"identity_attention block={block} X*1e20", lambda b=block: ia(X * 1e20, 1.0, block=b),
         ["X"], check=close(hard_identity(X, X) * 1e20, rtol=1e-4, atol=1e16))
    for label, f in bad_arrays:
        case(f"identity_attention block={block} X {label}", lambda f=f, b=block: ia(f(X), 1.0, block=b), ["X"], error=True)
    case(f"identity_attention block={block} X list", lambda b=block: ia(X.tolist(), 1.0, block=b), check=close(ia(X, 1.0)))
    case(f"identity_attention block={block} X 1-D", lambda b=block: ia(X[0, 0], 1.0, block=b), ["X"], error=True)
    case(f"identity_attention block={block} L=0", lambda b=block: ia(X[:, :0], 1.0, block=b), ["X", "L"], error=True)
for b in [0, -1, 2.5, "4"]:
    case(f"identity_attention block={b!r}", lambda b=b: ia(X, 1.0, block=b), ["block"], error=True)

iat = ac.identity_attend
for lam in BAD_LAMS:
    case(f"identity_attend lam={lam}", lambda lam=lam: iat(Z, X, lam), ["lam"], error=True)
for lam in HUGE_LAMS:
    chk = close(hard_identity(Z, X)) if lam >= 1e9 else None
    case(f"identity_attend lam={lam:g}", lambda lam=lam: iat(Z, X, lam), check=chk)
for label, f in bad_arrays[:3]:
    case(f"identity_attend Z {label}", lambda f=f: iat(f(Z), X, 1.0), ["Z"], error=True)
    case(f"identity_attend X {label}", lambda f=f: iat(Z, f(X), 1.0), ["X"], error=True)
case("identity_attend Z wrong d", lambda: iat(Z[..., :4], X, 1.0), ["Z"], error=True)
case("identity_attend batch mismatch", lambda: iat(jnp.concatenate([Z, Z[:1]]), X, 1.0), [("Z", "X")], error=True)
case("identity_attend X*1e20", lambda: iat(Z * 1e20, X * 1e20, 1.0), ["X", "Z"])
case("identity_attend float16", lambda: iat(Z.astype(jnp.float16), X.astype(jnp.float16), 1e4))
case("identity_attend lists", lambda: iat(Z.tolist(), X.tolist(), 1.0), check=close(iat(Z, X, 1.0)))

MASK = jnp.arange(8) < 5
ref = lambda lam: iat(Z, X[:, :5], lam)  # noqa: E731
case("identity_attend key_mask", lambda: iat(Z, X, 1.0, key_mask=MASK), check=close(ref(1.0)))
case("identity_attend key_mask lam=1e30", lambda: iat(Z, X, 1e30, key_mask=MASK), check=close(ref(1e30)))
case("identity_attend key_mask batched", lambda: iat(Z, X, 1.0, key_mask=jnp.stack([MASK, MASK])), check=close(ref(1.0)))
case("identity_attend key_mask all False", lambda: iat(Z, X, 1.0, key_mask=jnp.zeros(8, bool)), ["key_mask"], error=True)
case("identity_attend key_mask int", lambda: iat(Z, X, 1.0, key_mask=jnp.ones(8, int)), ["key_mask"])
case("identity_attend key_mask wrong L", lambda: iat(Z, X, 1.0, key_mask=jnp.ones(7, bool)), ["key_mask"], error=True)
case("identity_attend key_mask NaN in masked X", lambda: iat(Z, X.at[:, 7].set(NAN), 1.0, key_mask=MASK), ["X"], check=close(ref(1.0)))


@pytest.mark.usefixtures("typecheck_off")
@pytest.mark.parametrize("c", _BAD)
def test_bad_input_to_the_layers(c):
    """The two layers: a clear error or a correct result for every case."""
    check_case(c)

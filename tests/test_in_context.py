"""attnclust.in_context: the attention layer trained in context (chapters/icq_experiments.md,
section "A layer trained in context"). Its special cases (identity attention, the prompt's
mean), its equivariance, that training lowers the loss, and its errors; and the committed
experiment icq-trained-in-context, stored and at test size."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnclust as ac
from attnclust import in_context as ic
from attnclust.book import benchmark as B
from attnclust.book.experiments import icq_trained as T

few = settings(max_examples=12, deadline=None)
seeds = st.integers(0, 2**31 - 1)
lams = st.floats(0.05, 5.0)
lengths = st.sampled_from([1, 4, 9])
dims = st.sampled_from([1, 3, 5])


def _draw(seed, L, d):
    rng = np.random.default_rng(seed)
    return jnp.asarray(rng.normal(size=(2, L, d)), jnp.float32), rng


@few
@given(seeds, lengths, dims, lams)
def test_scaled_identity_is_identity_attention(seed, L, d, lam):
    X, _ = _draw(seed, L, d)
    np.testing.assert_allclose(ic.in_context_layer(ic.init_params(d, lam=lam), X), ac.identity_attention(X, lam),
                               rtol=1e-4, atol=1e-4)


@few
@given(seeds, lengths, dims, st.floats(-2.0, 2.0))
def test_zero_query_key_gives_the_prompt_mean_plus_the_residual(seed, L, d, c):
    X, _ = _draw(seed, L, d)
    out = ic.in_context_layer(ic.init_params(d, lam=0.0, c=c), X)
    np.testing.assert_allclose(out, np.asarray(X).mean(1, keepdims=True) + c * np.asarray(X), rtol=1e-4, atol=1e-4)


@few
@given(seeds, lengths, st.sampled_from([2, 4]))
def test_rotating_the_prompt_and_the_parameters_rotates_the_outputs(seed, L, d):
    """With A' = U A U^T and B' = U B U^T, the layer maps X U^T to out U^T: a layer whose A and
    B are multiples of the identity is rotation equivariant, as identity attention."""
    X, rng = _draw(seed, L, d)
    A, Bv = rng.normal(size=(d, d)) * 0.5, rng.normal(size=(d, d))
    U = np.linalg.qr(rng.normal(size=(d, d)))[0]
    p = ic.InContextParams(jnp.asarray(A, jnp.float32), jnp.asarray(Bv, jnp.float32), jnp.asarray(0.3))
    q = ic.InContextParams(jnp.asarray(U @ A @ U.T, jnp.float32), jnp.asarray(U @ Bv @ U.T, jnp.float32),
                           jnp.asarray(0.3))
    np.testing.assert_allclose(ic.in_context_layer(q, np.asarray(X) @ U.T), np.asarray(ic.in_context_layer(p, X)) @ U.T,
                               rtol=1e-3, atol=1e-4)


def test_shapes_and_the_loss():
    X, _ = _draw(0, 6, 3)
    p = ic.init_params(3)
    assert ic.in_context_layer(p, X).shape == (2, 6, 3)
    assert ic.in_context_layer(p, X[0]).shape == (6, 3)
    assert ic.in_context_layer(p, X[None]).shape == (1, 2, 6, 3)
    assert ic.in_context_loss(p, X, X).shape == ()
    # the loss is the library's distortion of the outputs
    targets = jnp.zeros_like(X)
    assert float(ic.in_context_loss(p, X, targets)) == pytest.approx(
        float(ac.distortion(ic.in_context_layer(p, X), targets)), rel=1e-5)


def test_isotropic_part():
    m, gap = ic.isotropic_part(3.0 * np.eye(4))
    assert m == pytest.approx(3.0) and gap == pytest.approx(0.0)
    M = np.diag([1.0, 3.0])  # m = 2, M - 2I = diag(-1, 1)
    m, gap = ic.isotropic_part(np.stack([M, 2 * M]))
    np.testing.assert_allclose(m, [2.0, 4.0])
    np.testing.assert_allclose(gap, [np.sqrt(2) / (2 * np.sqrt(2))] * 2)
    assert np.isinf(ic.isotropic_part(np.array([[1.0, 0.0], [0.0, -1.0]]))[1])


def _tiny_fit(keys, **kw):
    return ic.fit_in_context(keys, K=2, d=3, r=2.0, sigma=0.5, steps=150, batch=8, L=12, lr=3e-2, record_every=50, **kw)


def test_training_lowers_the_loss_and_is_reproducible():
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    fit = _tiny_fit(keys)
    assert fit.loss.shape == fit.temperature.shape == fit.residual.shape == (2, 3) and fit.S == 2
    np.testing.assert_array_equal(fit.steps, [50, 100, 150])
    # every seed ends with a lower training loss than it started with
    start = np.array([float(ic.in_context_loss(ic.init_params(3), *_batch(k))) for k in range(2)])
    assert np.all(fit.loss[:, -1] < start)
    assert np.all(fit.loss[:, -1] < fit.loss[:, 0])
    np.testing.assert_array_equal(fit.params0.A[0], np.eye(3))
    assert fit.params.A.shape == (2, 3, 3) and fit.params.c.shape == (2,)
    again = _tiny_fit(keys)
    np.testing.assert_array_equal(again.params.A, fit.params.A)
    # a trained layer is a layer
    assert ic.in_context_layer(fit.layer(1), _batch(0)[0]).shape == (64, 12, 3)
    # without the residual, c stays exactly 0
    plain = _tiny_fit(keys, residual=False)
    assert np.all(plain.params.c == 0) and np.all(plain.residual == 0)
    assert not np.allclose(plain.params.A, fit.params.A)


def _batch(seed):
    X, labels, mus = ac.sample_in_context(jax.random.PRNGKey(100 + seed), 2, 3, 2.0, 0.5, 64, 12)
    return X, ac.own_centroids(mus, labels)


@pytest.mark.usefixtures("typecheck_off")
@pytest.mark.parametrize("call, match", [
    (lambda: ic.in_context_layer(ic.InContextParams(np.ones((2, 3)), np.eye(3), 0.0), np.ones((1, 4, 3))), "params.A"),
    (lambda: ic.in_context_layer(ic.InContextParams(np.eye(3), np.eye(2), 0.0), np.ones((1, 4, 3))), "params.A and params.B"),
    (lambda: ic.in_context_layer(ic.InContextParams(np.eye(3), np.eye(3), np.ones(2)), np.ones((1, 4, 3))), "params.c"),
    (lambda: ic.in_context_layer(ic.InContextParams(np.eye(3) * np.nan, np.eye(3), 0.0), np.ones((1, 4, 3))), "params.A"),
    (lambda: ic.in_context_layer(ic.init_params(3), np.ones((1, 4, 2))), "X"),
    (lambda: ic.in_context_layer(ic.init_params(3), np.full((1, 4, 3), np.inf)), "X"),
    (lambda: ic.in_context_layer(ic.init_params(3), np.ones(3)), "X"),
    (lambda: ic.in_context_layer(ic.init_params(2, lam=1e30), np.full((1, 3, 2), 1e10)), "too large"),
    (lambda: ic.init_params(0), "d"),
    (lambda: ic.init_params(3, lam=-1.0), "lam"),
    (lambda: ic.init_params(3, c=np.nan), "c"),
    (lambda: ic.isotropic_part(np.ones((2, 3))), "M"),
    (lambda: ic.fit_in_context(jax.random.split(jax.random.PRNGKey(0), 1), K=4, d=3, steps=2), "K"),
    (lambda: ic.fit_in_context(jax.random.split(jax.random.PRNGKey(0), 1), sigma=0.0, steps=2), "sigma"),
    (lambda: ic.fit_in_context(jax.random.split(jax.random.PRNGKey(0), 1), steps=3, record_every=2), "steps"),
    (lambda: ic.fit_in_context(jax.random.split(jax.random.PRNGKey(0), 1), d=5, init=ic.init_params(3), steps=2), "init"),
    (lambda: ic.fit_in_context(jax.random.split(jax.random.PRNGKey(0), 1), weights=(0.2, 0.2), steps=2), "weights"),
    (lambda: ic.fit_in_context(jax.random.PRNGKey(0)[None, None], steps=2), "keys"),
])
def test_bad_input_raises_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.usefixtures("typecheck_off")
def test_bad_types_raise_type_error():
    with pytest.raises(TypeError, match="params"):
        ic.in_context_layer((np.eye(3), np.eye(3), 0.0), np.ones((1, 4, 3)))
    with pytest.raises(TypeError, match="residual"):
        ic.fit_in_context(jax.random.split(jax.random.PRNGKey(0), 1), steps=2, residual="yes")
    with pytest.raises(ValueError, match="s"):
        _tiny_fit(jax.random.split(jax.random.PRNGKey(0), 1)).layer(1)


def test_stored_experiment_has_every_method_on_the_same_prompts():
    """results/icq-trained-in-context.json: written at full size, fresh, every compared method
    and every seed of both variants scored on the same held-out prompts; the trained layers
    are marked as oracles (trained with labels)."""
    st_ = T.stored()
    data = st_.data
    assert data["size"] == "full" and not st_.stale
    seeds = data["train"]["seeds"]
    names = list(T.COMPARED) + [f"{stem}, seed {i}" for stem in T.VARIANTS.values() for i in range(seeds)]
    assert sorted(data["scores"]) == sorted(names)
    for name in names:
        sc = {k: np.asarray(data["scores"][name][k]) for k in T.METRICS}
        assert all(x.shape == (data["n"],) for x in sc.values())
        np.testing.assert_allclose(sc["spread"] + sc["bias"], sc["distortion"], rtol=1e-4)
        m = data["summary"]["methods"][name]
        assert m["oracle"] == (name not in (B.KMEANS, B.EM, B.IDENTITY))
        assert m["distortion"]["low"] <= m["distortion"]["estimate"] <= m["distortion"]["high"]
    for variant in T.VARIANTS:
        assert T.seed_mean(data, variant).shape == (data["n"],)
        assert len(T.per_seed_paired(data, variant, B.KMEANS)) == seeds
        f = data["fits"][variant]
        assert np.asarray(f["A"]).shape == (seeds, data["setting"]["d"], data["setting"]["d"])
    assert np.all(np.asarray(data["fits"]["no_residual"]["c"]) == 0)
    pd = T.paired(data, "residual", "no_residual")
    assert pd.wins + pd.losses + pd.ties == data["n"]


def test_spread_and_bias_split_the_distortion():
    p = B.in_context_prompts(jax.random.PRNGKey(0), 2, 3, 2.0, 0.5, 3, 10)
    own = p.own_centroids()
    spread, bias = T.spread_and_bias(own, p)          # the centroids themselves: nothing to split
    assert np.all(spread == 0) and np.allclose(bias, 0)
    spread, bias = T.spread_and_bias(p.X, p)          # the raw tokens: mostly spread
    np.testing.assert_allclose(spread + bias, np.mean(np.sum((p.X - own) ** 2, -1), -1), rtol=1e-6)
    assert np.all(spread > bias)
    shifted = own + 1.0                                # every point moved by (1, 1, 1): all bias
    spread, bias = T.spread_and_bias(shifted, p)
    np.testing.assert_allclose(bias, 3.0, rtol=1e-6)
    np.testing.assert_allclose(spread, 0, atol=1e-10)


@pytest.mark.integration
def test_experiment_at_test_size():
    data = T.trained_in_context("test")
    s = T.SIZES["test"]
    assert data["n"] == s["n"] and len(data["scores"]) == len(T.COMPARED) + 2 * s["seeds"]
    # the trained layer on the held-out prompts is the one the fit returned
    fit = ic.fit_in_context(jax.random.split(jax.random.PRNGKey(3030), s["seeds"]), residual=True,
                            steps=s["steps"], batch=s["batch"], lr=T.LR, record_every=s["record_every"])
    np.testing.assert_allclose(data["fits"]["residual"]["A"], fit.params.A, rtol=1e-5)
    prompts = T.held_out_prompts("test")
    Z = np.asarray(ic.in_context_layer(fit.layer(0), prompts.X), np.float64)
    D = np.mean(np.sum((Z - prompts.own_centroids()) ** 2, -1), -1)
    np.testing.assert_allclose(data["scores"][f"{T.TRAINED}, seed 0"]["distortion"], D, rtol=1e-5)
    assert T.paired(data, "residual", B.IDENTITY).difference.n == s["n"]

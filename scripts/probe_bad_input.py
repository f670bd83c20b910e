"""Probe the public API with bad or extreme input, as a careless user would, and tally the
answers (issue 11, "Bad input, tried as a careless user would").

Every call runs outside any user ``jit``, with fixed keys and arrays, and is classified:

- clear:   a ValueError or TypeError whose message names the argument;
- correct: a finite result (checked against the known answer where there is one; a metric
           that returns NaN for non-finite input counts as correct);
- silent:  a non-finite result where a finite one or an error was due, or a wrong value;
- cryptic: any other exception, or an error that does not name the argument.

Usage: python scripts/probe_bad_input.py [--verbose]. It prints the tally line
``clear N, correct N, silent N, cryptic N (total N)``; with --verbose, every call that is not
clean. It calls ``fit`` and ``fit_many`` with keyword arguments only, so it runs on the
library before and after issue 11. Calls that need an argument the library lacks (the
``key_mask`` of ``identity_attend``) are tallied on a separate line.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import attnclust as ac

NAN, INF = float("nan"), float("inf")
BAD_LAMS = [-1.0, 0.0, NAN, INF, -INF, 1e39]  # 1e39 is finite in float64 only
HUGE_LAMS = [1e4, 1e9, 1e30, 1e38]  # valid: the result must be finite

CASES: list[dict] = []
EXTRA: list[dict] = []  # calls to arguments the library may lack


def case(label, call, names=(), error=False, check=None, extra=False):
    """Register a call. ``names``: an error must name one of them (a tuple inside means all
    of its names). ``error``: no result is correct, only an error. ``check``: a function
    of the result returning True when it is right (defaults to "every leaf is finite")."""
    (EXTRA if extra else CASES).append(dict(label=label, call=call, names=names, error=error, check=check))


# ---------------------------------------------------------------- fixtures (fixed seeds)
KEY = jax.random.PRNGKey(0)
MIX = ac.orthogonal_mixture(K=2, d=5, r=2.0, sigma=0.5)
W, MU = np.array([0.5, 0.5], np.float32), np.eye(2, 5, dtype=np.float32) * 2.0
X = ac.sample(KEY, MIX, 2, 8)[0]  # (2, 8, 5)
Z = X[:, :3]  # (2, 3, 5)
TH = jnp.asarray(MU) + 0.1  # (2, 5) heads near the centroids
z = X[0]  # (8, 5) queries for the limits
P = z @ TH.T  # (8, 2) projections


def nan_at(A, value=NAN):
    A = jnp.asarray(A, jnp.float32)
    return A.at[(0,) * A.ndim].set(value)


def leaves(result):
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return [getattr(result, f.name) for f in dataclasses.fields(result)]
    return jax.tree_util.tree_leaves(result)


def finite(result) -> bool:
    for leaf in leaves(result):
        if isinstance(leaf, str):
            return False
        a = np.asarray(leaf)
        if a.dtype.kind == "c" or a.dtype.kind not in "biuf":
            return False
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            return False
    return True


def has_nan(result) -> bool:
    a = np.asarray(result, dtype=np.float64)
    return bool(np.isnan(a).any())


def close(expected, rtol=1e-4, atol=1e-4):
    return lambda r: finite(r) and np.allclose(np.asarray(r, np.float64), np.asarray(expected, np.float64), rtol=rtol, atol=atol)


def hard_identity(Zq, Xk):
    """Identity attention as lam -> inf: each query gets the key of largest <z, x_k>."""
    Zq, Xk = np.asarray(Zq, np.float64), np.asarray(Xk, np.float64)
    idx = np.argmax(np.einsum("...qd,...kd->...qk", Zq, Xk), axis=-1)
    return np.take_along_axis(Xk, idx[..., None], axis=-2)


# ---------------------------------------------------------------- mixtures and sampling
G = ac.GaussianMixture
for s in [0.0, -1.0, NAN, INF, 1e39, "0.5", 0.5 + 0j, None, [0.5], np.ones(2)]:
    case(f"GaussianMixture sigma={s!r}", lambda s=s: G(W, MU, s), ["sigma"], error=True)
case("GaussianMixture sigma=1 (int)", lambda: G(W, MU, 1), check=lambda m: isinstance(m.sigma, float) and m.sigma == 1.0)
case("GaussianMixture sigma=np.float32", lambda: G(W, MU, np.float32(0.5)), check=lambda m: isinstance(m.sigma, float))
for w in [[NAN, 1.0], [1.5, -0.5], [1.5, 1.5], [0.45, 0.45], [1.0], [[0.5, 0.5]], [0.5 + 0j, 0.5], ["a", "b"], [INF, 0.0]]:
    case(f"GaussianMixture weights={w!r}", lambda w=w: G(w, MU, 0.5), ["weights"], error=True)
case("GaussianMixture weights list", lambda: G([0.5, 0.5], MU, 0.5), check=lambda m: np.allclose(m.weights, 0.5))
for label, mu in [("nan", nan_at(MU)), ("inf", nan_at(MU, INF)), ("1e39*eye", np.eye(2, 5) * 1e39),
                  ("1-D", np.ones(5)), ("3-D", np.ones((1, 2, 5))), ("complex", MU + 1j),
                  ("strings", np.array([["a"] * 5] * 2))]:
    case(f"GaussianMixture centroids {label}", lambda mu=mu: G(W, mu, 0.5), ["centroids"], error=True)
case("GaussianMixture centroids K=0", lambda: G(np.zeros(0), np.zeros((0, 5)), 0.5), ["centroids", "K", "weights"], error=True)
case("GaussianMixture centroids d=0", lambda: G(W, np.zeros((2, 0)), 0.5), ["centroids", "d"], error=True)
case("GaussianMixture centroids list", lambda: G(W, MU.tolist(), 0.5), check=lambda m: np.allclose(m.centroids, MU))
case("GaussianMixture centroids float16", lambda: G(W, MU.astype(np.float16), 0.5), check=lambda m: m.centroids.dtype == jnp.float32)
case("GaussianMixture centroids int", lambda: G(W, MU.astype(int), 0.5), check=lambda m: np.allclose(m.centroids, MU))

om = ac.orthogonal_mixture
for kw, names in [(dict(K=0), ["K"]), (dict(K=-1), ["K"]), (dict(K=6, d=5), ["K"]), (dict(K=2.5), ["K"]),
                  (dict(K="2"), ["K"]), (dict(d=0), ["d"]), (dict(r=0.0), ["r"]), (dict(r=-1.0), ["r"]),
                  (dict(r=NAN), ["r"]), (dict(r=INF), ["r"]), (dict(r=1e39), ["r"]), (dict(r="2"), ["r"]),
                  (dict(sigma=0.0), ["sigma"]), (dict(sigma=NAN), ["sigma"]), (dict(sigma="0.5"), ["sigma"]),
                  (dict(sigma=1e39), ["sigma"]), (dict(weights=[0.2, 0.2]), ["weights"]),
                  (dict(weights=[1.5, -0.5]), ["weights"]), (dict(weights=[1.0]), ["weights"]),
                  (dict(r=1e20), ["r", "centroids"])]:
    err = "r" not in kw or kw["r"] != 1e20
    case(f"orthogonal_mixture {kw}", lambda kw=kw: om(**kw), names, error=err)
case("orthogonal_mixture K=5 d=5", lambda: om(K=5, d=5), check=lambda m: m.K == 5)

roc = ac.random_orthogonal_centroids


def orthonormal(n, K, d, r):
    def check(C):
        C = np.asarray(C, np.float64)
        return C.shape == (n, K, d) and np.allclose(C @ np.swapaxes(C, -1, -2), r**2 * np.eye(K), atol=1e-4 * r**2)
    return check


N_SETS = ["n", "n_prompts"]  # the argument was renamed n -> n_prompts: either name is clear
for args, names in [((-1, 2, 5, 2.0), N_SETS), ((0, 2, 5, 2.0), N_SETS), ((2.5, 2, 5, 2.0), N_SETS),
                    ((2, 6, 5, 2.0), ["K"]), ((2, 0, 5, 2.0), ["K"]), ((2, 2, 0, 2.0), ["d", "K"]),
                    ((2, 2, 5, NAN), ["r"]), ((2, 2, 5, -1.0), ["r"]), ((2, 2, 5, INF), ["r"]),
                    ((2, 2, 5, 1e39), ["r"]), ((2, 2, 5, 0.0), ["r"]), ((2, 2, 5, "2"), ["r"])]:
    case(f"random_orthogonal_centroids{args}", lambda a=args: roc(KEY, *a), names, error=True)
case("random_orthogonal_centroids ok", lambda: roc(KEY, 3, 2, 5, 2.0), check=orthonormal(3, 2, 5, 2.0))
case("random_orthogonal_centroids new key", lambda: roc(jax.random.key(0), 3, 2, 5, 2.0), check=orthonormal(3, 2, 5, 2.0))
case("random_orthogonal_centroids K=d", lambda: roc(KEY, 2, 5, 5, 1.0), check=orthonormal(2, 5, 5, 1.0))

for args, names in [((0, 4), ["n_prompts"]), ((-1, 4), ["n_prompts"]), ((2, 0), ["L"]), ((2, 2.5), ["L"]),
                    ((2.0, 4), ["n_prompts"])]:
    case(f"sample n, L = {args}", lambda a=args: ac.sample(KEY, MIX, *a), names, error=True)
case("sample mixture=None", lambda: ac.sample(KEY, None, 2, 4), ["mixture"], error=True)
case("sample mixture=dict", lambda: ac.sample(KEY, {"weights": W}, 2, 4), ["mixture"], error=True)
case("sample key=None", lambda: ac.sample(None, MIX, 2, 4), ["key"], error=True)
case("sample key=0", lambda: ac.sample(0, MIX, 2, 4), ["key"], error=True)
case("sample new-style key", lambda: ac.sample(jax.random.key(0), MIX, 2, 4), check=lambda r: r[0].shape == (2, 4, 5))

sic = ac.sample_in_context
for kw, names in [(dict(K=6, d=5), ["K"]), (dict(r=NAN), ["r"]), (dict(r=-1.0), ["r"]), (dict(sigma=0.0), ["sigma"]),
                  (dict(sigma="0.5"), ["sigma"]), (dict(sigma=1e39), ["sigma"]), (dict(r=1e39), ["r"]),
                  (dict(weights=[0.5, 0.6]), ["weights"]), (dict(weights=[NAN, 1.0]), ["weights"]),
                  (dict(kind="uniform"), ["kind"]), (dict(n_prompts=0), ["n_prompts"]), (dict(L=0), ["L"]),
                  (dict(K=0), ["K"]), (dict(d=0), ["d"])]:
    base = dict(K=2, d=5, r=2.0, sigma=0.5, n_prompts=2, L=4)
    case(f"sample_in_context {kw}", lambda kw=kw, base=base: sic(KEY, **{**base, **kw}), names, error=True)
case("sample_in_context gaussian K>d", lambda: sic(KEY, 6, 5, 2.0, 0.5, 2, 4, kind="gaussian"),
     check=lambda r: r[2].shape == (2, 6, 5))
case("sample_in_context new key", lambda: sic(jax.random.key(0), 2, 5, 2.0, 0.5, 2, 4),
     check=lambda r: r[0].shape == (2, 4, 5))

# ---------------------------------------------------------------- layers
bad_arrays = [("nan", nan_at), ("inf", lambda A: nan_at(A, INF)), ("complex", lambda A: jnp.asarray(A) + 1j),
              ("strings", lambda A: np.full(np.shape(A), "a"))]
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

if "key_mask" in inspect.signature(iat).parameters:
    MASK = jnp.arange(8) < 5
    ref = lambda lam: iat(Z, X[:, :5], lam)  # noqa: E731
    case("identity_attend key_mask", lambda: iat(Z, X, 1.0, key_mask=MASK), check=close(ref(1.0)), extra=True)
    case("identity_attend key_mask lam=1e30", lambda: iat(Z, X, 1e30, key_mask=MASK), check=close(ref(1e30)), extra=True)
    case("identity_attend key_mask batched", lambda: iat(Z, X, 1.0, key_mask=jnp.stack([MASK, MASK])), check=close(ref(1.0)), extra=True)
    case("identity_attend key_mask all False", lambda: iat(Z, X, 1.0, key_mask=jnp.zeros(8, bool)), ["key_mask"], error=True, extra=True)
    case("identity_attend key_mask int", lambda: iat(Z, X, 1.0, key_mask=jnp.ones(8, int)), ["key_mask"], extra=True)
    case("identity_attend key_mask wrong L", lambda: iat(Z, X, 1.0, key_mask=jnp.ones(7, bool)), ["key_mask"], error=True, extra=True)
    case("identity_attend key_mask NaN in masked X", lambda: iat(Z, X.at[:, 7].set(NAN), 1.0, key_mask=MASK), ["X"], check=close(ref(1.0)), extra=True)

# ---------------------------------------------------------------- limits and risks
hc = ac.head_coefficients
for lam in BAD_LAMS:
    case(f"head_coefficients lam={lam}", lambda lam=lam: hc(P, TH, MIX, lam), ["lam"], error=True)
case("head_coefficients lam=1e30", lambda: hc(P, TH, MIX, 1e30))
case("head_coefficients P nan", lambda: hc(nan_at(P), TH, MIX, 1.0), ["P"], error=True)
case("head_coefficients theta nan", lambda: hc(P, nan_at(TH), MIX, 1.0), ["theta"], error=True)
case("head_coefficients P wrong H", lambda: hc(P[:, :1], TH, MIX, 1.0), ["P"], error=True)
case("head_coefficients theta wrong d", lambda: hc(P, TH[:, :4], MIX, 1.0), ["theta"], error=True)
case("head_coefficients mixture=None", lambda: hc(P, TH, None, 1.0), ["mixture"], error=True)
case("head_coefficients lists", lambda: hc(P.tolist(), TH.tolist(), MIX, 1.0), check=close(hc(P, TH, MIX, 1.0)))

hol = ac.head_output_limit
for lam in BAD_LAMS:
    case(f"head_output_limit lam={lam}", lambda lam=lam: hol(TH, z, MIX, lam), ["lam"], error=True)
for lam in HUGE_LAMS:
    case(f"head_output_limit lam={lam:g}", lambda lam=lam: hol(TH, z, MIX, lam), ["lam", "theta", "z"])
for label, f in bad_arrays[:3]:
    case(f"head_output_limit theta {label}", lambda f=f: hol(f(TH), z, MIX, 1.0), ["theta"], error=True)
    case(f"head_output_limit z {label}", lambda f=f: hol(TH, f(z), MIX, 1.0), ["z"], error=True)
case("head_output_limit theta*1e10", lambda: hol(TH * 1e10, z, MIX, 1.0), ["theta"])
case("head_output_limit z wrong d", lambda: hol(TH, z[:, :4], MIX, 1.0), ["z"], error=True)
case("head_output_limit theta 1-D", lambda: hol(TH[0], z, MIX, 1.0), ["theta"], error=True)
case("head_output_limit mixture=None", lambda: hol(TH, z, None, 1.0), ["mixture"], error=True)
case("head_output_limit z scalar", lambda: hol(TH, 1.0, MIX, 1.0), ["z"], error=True)
case("head_output_limit lists", lambda: hol(TH.tolist(), z.tolist(), MIX, 1.0), check=close(hol(TH, z, MIX, 1.0)))

il = ac.identity_limit
for lam in BAD_LAMS:
    case(f"identity_limit lam={lam}", lambda lam=lam: il(z, MIX, lam), ["lam"], error=True)
for lam in HUGE_LAMS:
    case(f"identity_limit lam={lam:g}", lambda lam=lam: il(z, MIX, lam), ["lam", "z"])
for label, f in bad_arrays:
    case(f"identity_limit z {label}", lambda f=f: il(f(z), MIX, 1.0), ["z"], error=True)
case("identity_limit z=1.0", lambda: il(1.0, MIX, 1.0), ["z"], error=True)
case("identity_limit z wrong d", lambda: il(z[:, :4], MIX, 1.0), ["z"], error=True)
case("identity_limit mixture=None", lambda: il(z, None, 1.0), ["mixture"], error=True)
case("identity_limit z list", lambda: il(z.tolist(), MIX, 1.0), check=close(il(z, MIX, 1.0)))
case("identity_limit z float16", lambda: il(z.astype(jnp.float16), MIX, 1e4))

er = ac.empirical_risk
for lam in BAD_LAMS:
    case(f"empirical_risk lam={lam}", lambda lam=lam: er(TH, X, lam), ["lam"], error=True)
for lam in HUGE_LAMS:
    case(f"empirical_risk lam={lam:g}", lambda lam=lam: er(TH, X, lam))
for label, f in bad_arrays:
    case(f"empirical_risk X {label}", lambda f=f: er(TH, f(X), 1.0), ["X"], error=True)
    case(f"empirical_risk theta {label}", lambda f=f: er(f(TH), X, 1.0), ["theta"], error=True)
case("empirical_risk X list", lambda: er(TH, X.tolist(), 1.0), check=close(er(TH, X, 1.0)))
case("empirical_risk theta list", lambda: er(TH.tolist(), X, 1.0), check=close(er(TH, X, 1.0)))
case("empirical_risk X*1e20", lambda: er(TH, X * 1e20, 1.0), ["X"])
case("empirical_risk theta wrong d", lambda: er(TH[:, :4], X, 1.0), ["theta"], error=True)
case("empirical_risk X 1-D", lambda: er(TH, X[0, 0], 1.0), ["X"], error=True)

pr = ac.population_risk
for lam in BAD_LAMS:
    case(f"population_risk lam={lam}", lambda lam=lam: pr(TH, MIX, lam), ["lam"], error=True)
for lam in HUGE_LAMS:
    case(f"population_risk lam={lam:g}", lambda lam=lam: pr(TH, MIX, lam), ["lam", "theta"])
for label, f in bad_arrays:
    case(f"population_risk theta {label}", lambda f=f: pr(f(TH), MIX, 1.0), ["theta"], error=True)
case("population_risk theta*1e10", lambda: pr(TH * 1e10, MIX, 1.0), ["theta"])
case("population_risk theta*1e3", lambda: pr(TH * 1e3, MIX, 1.0), ["theta"])
for n in [1, 0, 2.5, "40"]:
    case(f"population_risk n_nodes={n!r}", lambda n=n: pr(TH, MIX, 1.0, n_nodes=n), ["n_nodes"], error=True)
case("population_risk theta wrong d", lambda: pr(TH[:, :4], MIX, 1.0), ["theta"], error=True)
case("population_risk mixture=None", lambda: pr(TH, None, 1.0), ["mixture"], error=True)
case("population_risk theta list", lambda: pr(TH.tolist(), MIX, 1.0), check=close(pr(TH, MIX, 1.0)))

prm = ac.population_risk_mc
for lam in BAD_LAMS:
    case(f"population_risk_mc lam={lam}", lambda lam=lam: prm(KEY, TH, MIX, lam, 64), ["lam"], error=True)
for label, f in bad_arrays[:3]:
    case(f"population_risk_mc theta {label}", lambda f=f: prm(KEY, f(TH), MIX, 1.0, 64), ["theta"], error=True)
case("population_risk_mc theta*1e10", lambda: prm(KEY, TH * 1e10, MIX, 1.0, 64), ["theta"])
for n in [0, -1, 2.5]:
    case(f"population_risk_mc n={n}", lambda n=n: prm(KEY, TH, MIX, 1.0, n), ["n", "n_samples"], error=True)  # renamed n -> n_samples
case("population_risk_mc theta wrong d", lambda: prm(KEY, TH[:, :4], MIX, 1.0, 64), ["theta"], error=True)
case("population_risk_mc mixture=None", lambda: prm(KEY, TH, None, 1.0, 64), ["mixture"], error=True)
case("population_risk_mc new key", lambda: prm(jax.random.key(0), TH, MIX, 1.0, 64))

# ---------------------------------------------------------------- training (keywords only)
FIT = dict(steps=2, batch=2, L=4, progress=False)


def fit(key=KEY, mixture=MIX, **kw):
    return ac.fit(key, mixture, **{**FIT, **kw})


def fit_many(keys=None, mixture=MIX, **kw):
    keys = jax.random.split(KEY, 2) if keys is None else keys
    return ac.fit_many(keys, mixture, **{**FIT, **kw})


for lam in BAD_LAMS:
    case(f"fit lam={lam}", lambda lam=lam: fit(lam=lam), ["lam"], error=True)
case("fit lam=1e4", lambda: fit(lam=1e4))
for kw, names in [(dict(steps=0), ["steps"]), (dict(batch=0), ["batch"]), (dict(L=0), ["L"]),
                  (dict(steps=2.5), ["steps"]), (dict(init="huge"), ["init"]),
                  (dict(init=nan_at(TH)), ["init"]), (dict(init=TH[:, :4]), ["init"]), (dict(init=TH[0]), ["init"]),
                  (dict(optimizer="adam"), ["optimizer"]), (dict(lr=NAN), ["lr"]), (dict(lr=-1.0), ["lr"]),
                  (dict(lr=0.0), ["lr"]), (dict(H=0), ["H"]), (dict(record_every=3), ["record_every"])]:
    case(f"fit {kw if 'init' not in kw or isinstance(kw['init'], str) else 'init array'} {names}",
         lambda kw=kw: fit(**kw), names, error=True)
case("fit mixture=None", lambda: fit(mixture=None), ["mixture"], error=True)
case("fit key=None", lambda: fit(key=None), ["key"], error=True)
case("fit new-style key", lambda: fit(key=jax.random.key(0)), check=lambda r: finite(r))
case("fit init list", lambda: fit(init=TH.tolist()))
for lam in [-1.0, NAN, 1e39]:
    case(f"fit_many lam={lam}", lambda lam=lam: fit_many(lam=lam), ["lam"], error=True)
case("fit_many 0 seeds", lambda: fit_many(keys=jax.random.split(KEY, 2)[:0]), ["keys"], error=True)
case("fit_many one key", lambda: fit_many(keys=KEY), ["keys"], error=True)
case("fit_many new-style keys", lambda: fit_many(keys=jax.random.split(jax.random.key(0), 2)))
case("fit_many lam shape mismatch", lambda: fit_many(lam=jnp.ones(3)), ["lam"], error=True)
case("fit_many mixture=None", lambda: fit_many(mixture=None), ["mixture"], error=True)
case("fit_many init nan", lambda: fit_many(init=nan_at(TH)), ["init"], error=True)
case("fit_many lr=nan", lambda: fit_many(lr=NAN), ["lr"], error=True)
case("fit_many optimizer='adam'", lambda: fit_many(optimizer="adam"), ["optimizer"], error=True)

it = ac.init_theta
KIND = "kind" if "kind" in inspect.signature(it).parameters else "init"  # renamed by issue 11
for mixture, kw, names in [(MIX, dict(H=0), ["H"]), (MIX, dict(H=-1), ["H"]), (MIX, dict(H=2.5), ["H"]),
                           (MIX, {KIND: "huge"}, ["kind", "init"]), (MIX, dict(scale=NAN), ["scale"]),
                           (MIX, dict(scale=-1.0), ["scale"]), (MIX, dict(scale=0.0), ["scale"]),
                           (None, {}, ["mixture"])]:
    case(f"init_theta {kw}" + (" mixture=None" if mixture is None else ""), lambda m=mixture, kw=kw: it(KEY, m, **kw), names, error=True)
case("init_theta new key", lambda: it(jax.random.key(0), MIX), check=lambda r: r.shape == (2, 5))

# ---------------------------------------------------------------- metrics
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


# ---------------------------------------------------------------- classification
def names_in(message: str, names) -> bool:
    def named(n):
        return re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", message) is not None

    return any(all(named(n) for n in alt) if isinstance(alt, tuple) else named(alt) for alt in names)


def classify(c) -> tuple[str, str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning if hasattr(np, "exceptions") else np.ComplexWarning)
            result = c["call"]()
            jax.block_until_ready(jax.tree_util.tree_leaves(leaves(result)) if not isinstance(result, str) else result)
    except (ValueError, TypeError) as e:
        msg = f"{type(e).__name__}: {e}"
        if c["names"] and names_in(str(e), c["names"]):
            return "clear", msg
        return "cryptic", msg
    except Exception as e:  # noqa: BLE001 - every other failure is what the probe measures
        return "cryptic", f"{type(e).__name__}: {e}"
    if c["error"]:
        return "silent", f"accepted, returned {short(result)}"
    try:
        ok = c["check"](result) if c["check"] else finite(result)
    except Exception as e:  # noqa: BLE001
        return "silent", f"result fails its check ({type(e).__name__}: {e}): {short(result)}"
    return ("correct", "") if ok else ("silent", f"wrong or non-finite: {short(result)}")


def short(result) -> str:
    text = " ".join(repr(result).split())
    return text[:160] + ("..." if len(text) > 160 else "")


def tally(cases, verbose, title):
    counts = dict(clear=0, correct=0, silent=0, cryptic=0)
    for c in cases:
        kind, why = classify(c)
        counts[kind] += 1
        if verbose and kind in ("silent", "cryptic"):
            print(f"  {kind:8s} {c['label']}: {' '.join(why.split())[:240]}")
    print(f"{title}clear {counts['clear']}, correct {counts['correct']}, silent {counts['silent']}, "
          f"cryptic {counts['cryptic']} (total {len(cases)})")
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verbose", action="store_true", help="print every call that is not clean")
    args = parser.parse_args(argv)
    tally(CASES, args.verbose, "")
    if EXTRA:
        tally(EXTRA, args.verbose, "new API (key_mask): ")
    return 0


if __name__ == "__main__":
    sys.exit(main())

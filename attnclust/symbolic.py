"""SymPy derivations behind the book's closed forms, each with a check that can fail.

Every public ``derive_*`` / ``*_derivation`` function returns SymPy expressions (for
display with :func:`sympy.latex`) together with lambdified NumPy functions, and every
derivation has a ``check_*`` function that returns ``True`` only when SymPy simplifies the
difference between the derived and the claimed closed form to zero (or, where the object
is an expectation with no closed form, when quadrature agrees with an independent
evaluation at random parameter values).  The chapters call the checks; the tests call
them too and also hold the lambdified functions against the library's JAX numerics.

The chapters (and the labels of their results) that use each derivation:

* "Attention as soft pooling" (chapters/attention.md): the Gaussian tilting lemma
  (:func:`tilting_lemma`, lem-tilting) and the large-L head output
  (:func:`head_output_derivation`, prop-head-limit).
* "The two-head layer and its population risk" (chapters/population_risk.md): the
  reduction of the large-L risk to the aligned manifold (:func:`aligned_reduction`,
  prop-aligned), its fixed point (:func:`aligned_fixed_point`, :func:`aligned_branch`),
  and the gradient that leaves the manifold (:func:`tilt_derivation`,
  :func:`tilt_gradient`, :func:`tilted_minimiser`; prop-gradient).
* "In-context quantization with identity attention" (chapters/quantization.md): the
  identity-layer limit (:func:`identity_limit_derivation`, prop-identity-limit), the exact
  large-L distortion (:func:`distortion_exact`, prop-distortion-exact), its bound
  (:func:`distortion_bound`, thm-distortion-bound), the bound's best temperature
  (:func:`best_lambda_bound`) and its scaling (:func:`distortion_scaling`,
  prop-distortion-scaling).

Conventions: the mixture has K components with weights pi_c, centroids mu_c and common
isotropic noise sigma; ``lam`` is the attention temperature lambda.  Gauss-Hermite
quadrature (``numpy.polynomial.hermite.hermgauss``) evaluates the Gaussian expectations
that have no closed form; their integrands are smooth (logistic-type), so a few dozen
nodes give close to double precision at the default settings.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import sympy as sp
from jaxtyping import ArrayLike, Float, Int
from numpy.polynomial.hermite import hermgauss
from scipy import optimize
from scipy.special import expit

__all__ = [
    "logistic",
    "lambdify_expr",
    "TiltingLemma",
    "tilting_lemma",
    "check_tilting_lemma",
    "HeadOutputDerivation",
    "head_output_derivation",
    "check_head_output",
    "head_coefficient",
    "head_output",
    "IdentityLimitDerivation",
    "identity_limit_derivation",
    "check_identity_limit",
    "identity_limit_float64",
    "AlignedReduction",
    "aligned_reduction",
    "check_aligned_reduction",
    "aligned_risk",
    "aligned_risk_grad",
    "AlignedFixedPoint",
    "aligned_fixed_point",
    "aligned_branch",
    "TiltDerivation",
    "tilt_derivation",
    "check_tilt",
    "tilt_gradient",
    "inactive_leak",
    "TiltedMinimiser",
    "tilted_minimiser",
    "tilt_branch",
    "DistortionDerivation",
    "distortion_derivation",
    "check_distortion",
    "distortion_exact",
    "distortion_mc",
    "distortion_bound",
    "best_lambda_bound",
    "distortion_scaling",
    "check_all",
]


# ---------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------


class logistic(sp.Function):
    """The logistic function 1 / (1 + exp(-x)), kept unevaluated so that derivatives stay
    short (d/dx logistic(x) = logistic(x) (1 - logistic(x))) and lambdify can map it to a
    numerically stable implementation (``scipy.special.expit`` / ``jax.nn.sigmoid``)."""

    @classmethod
    def eval(cls, x: sp.Expr) -> sp.Expr | None:
        if x == 0:
            return sp.Rational(1, 2)
        return None

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        return self * (1 - self)

    def _eval_rewrite_as_exp(self, x: sp.Expr, **kwargs: object) -> sp.Expr:
        return 1 / (1 + sp.exp(-x))

    def _latex(self, printer: sp.printing.latex.LatexPrinter, exp: str | None = None) -> str:
        tex = r"\operatorname{logistic}\left(%s\right)" % printer._print(self.args[0])
        return tex if exp is None else r"%s^{%s}" % (tex, exp)


def _lambdify(args: Sequence[sp.Symbol], expr: sp.Expr | Sequence[sp.Expr], backend: str = "numpy") -> Callable:
    if backend == "numpy":
        return sp.lambdify(args, expr, modules=[{"logistic": expit}, "numpy"])
    if backend == "jax":
        import jax

        return sp.lambdify(args, expr, modules=[{"logistic": jax.nn.sigmoid}, "jax"])
    raise ValueError(f"backend must be 'numpy' or 'jax', got {backend!r}")


def lambdify_expr(
    args: Sequence[sp.Symbol], expr: sp.Expr | Sequence[sp.Expr], backend: Literal["numpy", "jax"] = "numpy"
) -> Callable:
    """Lambdify an expression of this module (``logistic`` included) for NumPy or JAX;
    with ``backend="jax"`` the function is jit-able and differentiable by jax.grad."""
    return _lambdify(args, expr, backend)


def _positive(name: str, value: float) -> float:
    v = float(value)
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite positive number, got {value!r}")
    return v


@functools.lru_cache(maxsize=None)
def _gh(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights for E g(Z), Z ~ N(0, 1): E g(Z) ~= sum_i w_i g(x_i)."""
    x, w = hermgauss(n)
    return np.sqrt(2.0) * x, w / np.sqrt(np.pi)


def _dot(a: Sequence[sp.Expr | float], b: Sequence[sp.Expr | float]) -> sp.Expr:
    return sp.Add(*[ai * bi for ai, bi in zip(a, b)])


def _softmax_exprs(logits: Sequence[sp.Expr]) -> list[sp.Expr]:
    """Softmax written with ``logistic`` for K = 2 (compact, stable), with exp otherwise."""
    if len(logits) == 2:
        d = sp.expand(logits[0] - logits[1])
        return [logistic(d), logistic(-d)]
    ex = [sp.exp(a) for a in logits]
    tot = sp.Add(*ex)
    return [e / tot for e in ex]


def _head_coef_expr(
    theta: Sequence[sp.Expr | float],
    z: Sequence[sp.Expr | float],
    mus: Sequence[Sequence[sp.Expr | float]],
    weights: Sequence[sp.Expr | float],
    lam: sp.Expr | float,
    sigma: sp.Expr | float,
) -> sp.Expr:
    """The head coefficient of prop-head-limit (chapters/attention.md):
    coef_h(z) = s sigma^2 ||theta||^2 + sum_c alpha_c(s) <theta, mu_c>, s = lam <theta, z>,
    alpha(s) = softmax_c(log pi_c + s <theta, mu_c>)."""
    s = lam * _dot(theta, z)
    m = [_dot(theta, mu) for mu in mus]
    alpha = _softmax_exprs([sp.log(w) + s * mc for w, mc in zip(weights, m)])
    return s * sigma**2 * _dot(theta, theta) + sp.Add(*[a * mc for a, mc in zip(alpha, m)])


# ---------------------------------------------------------------------------------------
# Section 4: Gaussian tilting lemma
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TiltingLemma:
    """Results of :func:`tilting_lemma` (lem-tilting, chapters/attention.md).

    ``mgf`` / ``tilted_mean`` are what ``sympy.integrate`` returns for E[e^{tu}] and
    E[u e^{tu}] / E[e^{tu}] with u ~ N(m, s^2); ``*_closed`` are the claimed closed forms.
    ``weight_derived`` is the tilted weight of component 1 of a two-component mixture
    pi_1 N(m_1, s^2) + pi_2 N(m_2, s^2), computed from the MGFs, and ``weight_closed`` is
    softmax_1(log pi_c + t m_c) = logistic(log(pi_1/pi_2) + t (m_1 - m_2)).
    """

    symbols: dict[str, sp.Symbol]
    mgf: sp.Expr
    mgf_closed: sp.Expr
    tilted_mean: sp.Expr
    tilted_mean_closed: sp.Expr
    weight_derived: sp.Expr
    weight_closed: sp.Expr
    mgf_fn: Callable  # (t, m, s) -> E e^{tu}
    tilted_mean_fn: Callable  # (t, m, s) -> m + t s^2
    weight_fn: Callable  # (t, m1, m2, s, pi1) -> tilted weight of component 1


@functools.lru_cache(maxsize=None)
def tilting_lemma() -> TiltingLemma:
    """Gaussian tilting lemma; chapter "Attention as soft pooling" (chapters/attention.md,
    lem-tilting).

    Derives with ``sympy.integrate`` that for u ~ N(m, s^2)

        E[e^{tu}] = exp(t m + t^2 s^2 / 2),   E[u e^{tu}] / E[e^{tu}] = m + t s^2,

    and, for a two-component mixture with shared s, that the tilted component weights
    pi_c E_c[e^{tu}] / sum_c' pi_c' E_c'[e^{tu}] equal softmax_c(log pi_c + t m_c), i.e. the
    logistic of log(pi_1/pi_2) + t (m_1 - m_2): the common factor exp(t^2 s^2/2) cancels.
    The chapter displays the integrals, their values and the tilted weight.
    """
    u, m, t = sp.symbols("u m t", real=True)
    m1, m2 = sp.symbols("m_1 m_2", real=True)
    s = sp.Symbol("s", positive=True)
    pi1 = sp.Symbol("pi_1", positive=True)
    pdf = sp.exp(-((u - m) ** 2) / (2 * s**2)) / sp.sqrt(2 * sp.pi * s**2)
    mgf = sp.simplify(sp.integrate(sp.exp(t * u) * pdf, (u, -sp.oo, sp.oo), conds="none"))
    first = sp.integrate(u * sp.exp(t * u) * pdf, (u, -sp.oo, sp.oo), conds="none")
    tilted_mean = sp.simplify(first / mgf)
    mgf_closed = sp.exp(t * m + t**2 * s**2 / 2)
    tilted_mean_closed = m + t * s**2
    pi2 = 1 - pi1
    M1, M2 = mgf.subs(m, m1), mgf.subs(m, m2)
    weight_derived = sp.simplify(pi1 * M1 / (pi1 * M1 + pi2 * M2))
    weight_closed = logistic(sp.log(pi1) - sp.log(pi2) + t * (m1 - m2))
    return TiltingLemma(
        symbols={"u": u, "m": m, "t": t, "s": s, "m_1": m1, "m_2": m2, "pi_1": pi1},
        mgf=mgf,
        mgf_closed=mgf_closed,
        tilted_mean=tilted_mean,
        tilted_mean_closed=tilted_mean_closed,
        weight_derived=weight_derived,
        weight_closed=weight_closed,
        mgf_fn=_lambdify((t, m, s), mgf_closed),
        tilted_mean_fn=_lambdify((t, m, s), tilted_mean_closed),
        weight_fn=_lambdify((t, m1, m2, s, pi1), weight_closed),
    )


def check_tilting_lemma() -> bool:
    """True iff SymPy simplifies (derived - closed) to 0 for the MGF, the tilted mean and
    the two-component tilted weight (lem-tilting, chapters/attention.md)."""
    L = tilting_lemma()
    ok_mgf = sp.simplify(L.mgf - L.mgf_closed) == 0
    ok_mean = sp.simplify(L.tilted_mean - L.tilted_mean_closed) == 0
    ok_w = sp.simplify(L.weight_derived - L.weight_closed.rewrite(sp.exp)) == 0
    return bool(ok_mgf and ok_mean and ok_w)


# ---------------------------------------------------------------------------------------
# Section 4: large-L head output
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeadOutputDerivation:
    """Results of :func:`head_output_derivation` (prop-head-limit, chapters/attention.md).

    For u = <theta_h, x_k>, x_k ~ sum_c pi_c N(mu_c, sigma^2 I): u is the mixture
    sum_c pi_c N(m_c, S^2) with m_c = <theta_h, mu_c>, S^2 = sigma^2 ||theta_h||^2 (symbol
    ``q``).  ``coef_derived`` = E[u e^{su}] / E[e^{su}] built from the lemma's MGFs (K = 2,
    weight pi_1), ``coef_closed`` = s q + sum_c softmax_c(log pi_c + s m_c) m_c.
    """

    symbols: dict[str, sp.Symbol]
    coef_derived: sp.Expr
    coef_closed: sp.Expr
    coef_fn: Callable  # (s, m1, m2, q, pi1) -> coefficient


@functools.lru_cache(maxsize=None)
def head_output_derivation() -> HeadOutputDerivation:
    """Large-L head output; chapter "Attention as soft pooling" (chapters/attention.md,
    prop-head-limit).

    Head h's output for query z is theta_h * sum_k softmax_k(s u_k) u_k with
    s = lam <theta_h, z>, u_k = <theta_h, x_k>.  As L -> infinity the softmax average tends
    to the tilted mean E[u e^{su}] / E[e^{su}].  Applying the lemma component by component
    (u | c ~ N(m_c, S^2), m_c = <theta_h, mu_c>, S^2 = sigma^2 ||theta_h||^2):

        E[u e^{su}] = sum_c pi_c e^{s m_c + s^2 S^2/2} (m_c + s S^2),

    so the coefficient of theta_h is coef_h(z) = s sigma^2 ||theta_h||^2
    + sum_c alpha_c(s) <theta_h, mu_c>, alpha(s) = softmax_c(log pi_c + s <theta_h, mu_c>).
    Derived here for K = 2 symbolically; :func:`head_coefficient` evaluates general K.
    """
    L = tilting_lemma()
    s, q = sp.Symbol("s", real=True), sp.Symbol("q", positive=True)
    m1, m2 = sp.symbols("m_1 m_2", real=True)
    pi1 = sp.Symbol("pi_1", positive=True)
    S = sp.sqrt(q)
    sym = L.symbols
    mgf = lambda mc: L.mgf.subs({sym["t"]: s, sym["m"]: mc, sym["s"]: S})  # noqa: E731
    tmean = lambda mc: L.tilted_mean.subs({sym["t"]: s, sym["m"]: mc, sym["s"]: S})  # noqa: E731
    num = pi1 * mgf(m1) * tmean(m1) + (1 - pi1) * mgf(m2) * tmean(m2)
    den = pi1 * mgf(m1) + (1 - pi1) * mgf(m2)
    coef_derived = num / den
    a1, a2 = _softmax_exprs([sp.log(pi1) + s * m1, sp.log(1 - pi1) + s * m2])
    coef_closed = s * q + a1 * m1 + a2 * m2
    return HeadOutputDerivation(
        symbols={"s": s, "q": q, "m_1": m1, "m_2": m2, "pi_1": pi1},
        coef_derived=coef_derived,
        coef_closed=coef_closed,
        coef_fn=_lambdify((s, m1, m2, q, pi1), coef_closed),
    )


def check_head_output() -> bool:
    """True iff the lemma-built coefficient minus the closed form simplifies to 0."""
    D = head_output_derivation()
    diff = sp.simplify((D.coef_derived - D.coef_closed.rewrite(sp.exp)))
    return bool(diff == 0)


def head_coefficient(
    theta: Float[ArrayLike, "H d"],
    z: Float[ArrayLike, "*b d"],
    centroids: Float[ArrayLike, "K d"],
    weights: Float[ArrayLike, "K"] | Sequence[float],
    sigma: float,
    lam: float,
) -> Float[np.ndarray, "*b H"]:
    """coef_h(z) for every head (prop-head-limit, chapters/attention.md), NumPy, general K.

    theta (H, d), z (..., d), centroids (K, d), weights (K,) -> (..., H):
    s sigma^2 ||theta_h||^2 + sum_c softmax_c(log pi_c + s <theta_h, mu_c>) <theta_h, mu_c>,
    s = lam <theta_h, z>.  Softmax via log-sum-exp, so large lam stays finite.
    """
    theta = np.asarray(theta, float)
    z = np.asarray(z, float)
    mu = np.asarray(centroids, float)
    logw = np.log(np.asarray(weights, float))
    s = lam * z @ theta.T  # (..., H)
    m = theta @ mu.T  # (H, K)
    logits = logw + s[..., None] * m  # (..., H, K)
    logits = logits - logits.max(axis=-1, keepdims=True)
    a = np.exp(logits)
    a /= a.sum(axis=-1, keepdims=True)
    return s * sigma**2 * np.sum(theta**2, axis=-1) + np.sum(a * m, axis=-1)


def head_output(
    theta: Float[ArrayLike, "H d"],
    z: Float[ArrayLike, "*b d"],
    centroids: Float[ArrayLike, "K d"],
    weights: Float[ArrayLike, "K"] | Sequence[float],
    sigma: float,
    lam: float,
) -> Float[np.ndarray, "*b d"]:
    """Large-L layer output sum_h theta_h coef_h(z), (..., d) (prop-head-limit,
    chapters/attention.md)."""
    return head_coefficient(theta, z, centroids, weights, sigma, lam) @ np.asarray(theta, float)


# ---------------------------------------------------------------------------------------
# Section 6 (limit derived with the section-4 lemma): identity attention
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IdentityLimitDerivation:
    """Results of :func:`identity_limit_derivation`: d = 2, K = 2, general weights and
    centroids.  ``Q_derived`` is the 2-vector E[x e^{lam <z,x>}] / E[e^{lam <z,x>}] built
    coordinate-wise from the 1-D lemma; ``Q_closed`` is
    lam sigma^2 z + sum_c softmax_c(log pi_c + lam <z, mu_c>) mu_c."""

    symbols: dict[str, sp.Symbol]
    Q_derived: sp.Matrix
    Q_closed: sp.Matrix
    Q_fn: Callable  # (z1, z2, mu11, mu12, mu21, mu22, sigma, lam, pi1) -> (..., 2)


@functools.lru_cache(maxsize=None)
def identity_limit_derivation() -> IdentityLimitDerivation:
    """Identity-layer limit; chapter "In-context quantization with identity attention"
    (chapters/quantization.md, prop-identity-limit; the derivation uses the tilting lemma,
    lem-tilting).

    Q(z) = sum_k softmax_k(lam <z, x_k>) x_k tends to E[x e^{<t,x>}] / E[e^{<t,x>}] with
    t = lam z.  For x ~ N(mu, sigma^2 I) the coordinates are independent, so the MGF
    factorises, E[x_i e^{<t,x>}] = E[x_i e^{t_i x_i}] prod_{j != i} E[e^{t_j x_j}], and each
    factor is the 1-D lemma.  Summed over the mixture, the common factor
    exp(sigma^2 ||t||^2 / 2) cancels:

        Q(z) = lam sigma^2 z + sum_c softmax_c(log pi_c + lam <z, mu_c>) mu_c.
    """
    L = tilting_lemma()
    sym = L.symbols
    z1, z2 = sp.symbols("z_1 z_2", real=True)
    mu = sp.Matrix(2, 2, sp.symbols("mu_11 mu_12 mu_21 mu_22", real=True))
    sigma, lam = sp.symbols("sigma lambda", positive=True)
    pi1 = sp.Symbol("pi_1", positive=True)
    t = [lam * z1, lam * z2]
    mgf1 = lambda ti, mi: L.mgf.subs({sym["t"]: ti, sym["m"]: mi, sym["s"]: sigma})  # noqa: E731
    first1 = lambda ti, mi: mgf1(ti, mi) * L.tilted_mean.subs(  # noqa: E731
        {sym["t"]: ti, sym["m"]: mi, sym["s"]: sigma}
    )
    weights = [pi1, 1 - pi1]
    num = [0, 0]
    den = 0
    for c in range(2):
        mc = [mu[c, 0], mu[c, 1]]
        M = mgf1(t[0], mc[0]) * mgf1(t[1], mc[1])
        den += weights[c] * M
        num[0] += weights[c] * first1(t[0], mc[0]) * mgf1(t[1], mc[1])
        num[1] += weights[c] * mgf1(t[0], mc[0]) * first1(t[1], mc[1])
    Q_derived = sp.Matrix([num[0] / den, num[1] / den])
    zz = [z1, z2]
    a = _softmax_exprs(
        [sp.log(w) + lam * _dot(zz, [mu[c, 0], mu[c, 1]]) for c, w in enumerate(weights)]
    )
    Q_closed = sp.Matrix(
        [lam * sigma**2 * zz[i] + a[0] * mu[0, i] + a[1] * mu[1, i] for i in range(2)]
    )
    args = (z1, z2, mu[0, 0], mu[0, 1], mu[1, 0], mu[1, 1], sigma, lam, pi1)
    raw = _lambdify(args, list(Q_closed))

    def Q_fn(*a: float | np.ndarray) -> np.ndarray:
        return np.stack(np.broadcast_arrays(*[np.asarray(q, float) for q in raw(*a)]), axis=-1)

    return IdentityLimitDerivation(
        symbols={"z_1": z1, "z_2": z2, "sigma": sigma, "lambda": lam, "pi_1": pi1, "mu": mu},
        Q_derived=Q_derived,
        Q_closed=Q_closed,
        Q_fn=Q_fn,
    )


def check_identity_limit() -> bool:
    """True iff both coordinates of (Q_derived - Q_closed) simplify to 0."""
    D = identity_limit_derivation()
    diff = (D.Q_derived - D.Q_closed.applyfunc(lambda e: e.rewrite(sp.exp))).applyfunc(
        sp.simplify
    )
    return all(e == 0 for e in diff)


def identity_limit_float64(
    z: Float[ArrayLike, "*b d"], centroids: Float[ArrayLike, "K d"], weights: Float[ArrayLike, "K"] | Sequence[float],
    sigma: float, lam: float,
) -> Float[np.ndarray, "*b d"]:
    """Large-L identity attention (prop-identity-limit, chapters/quantization.md) in NumPy
    float64, for checks against the float32 library (``attnclust.identity_limit``, which takes
    a ``GaussianMixture``); general K and d:
    z (..., d) -> lam sigma^2 z + sum_c softmax_c(log pi_c + lam <z, mu_c>) mu_c."""
    z = np.asarray(z, float)
    mu = np.asarray(centroids, float)
    logits = np.log(np.asarray(weights, float)) + lam * z @ mu.T
    logits = logits - logits.max(axis=-1, keepdims=True)
    a = np.exp(logits)
    a /= a.sum(axis=-1, keepdims=True)
    return lam * sigma**2 * z + a @ mu


# ---------------------------------------------------------------------------------------
# Section 5: the aligned manifold
# ---------------------------------------------------------------------------------------

Setting = Literal["default", "antipodal", "plusminus"]


@functools.lru_cache(maxsize=None)
def _setting_exprs(setting: Setting) -> dict[str, object]:
    """Symbolic 2-D risk integrand for a mixture setting, with the aligned manifold
    parametrised by (c1, c2) and off-manifold perturbations (e1, e2) inside span(e_1, e_2).

    * ``default``: K = 2, pi = (1/2, 1/2), mu_1 = r e_1, mu_2 = r e_2;
      theta_1 = (c1, e1), theta_2 = (e2, c2).
    * ``antipodal``: the default mixture centred by its mean (r/2)(e_1 + e_2) and rotated
      so that mu_1 = -mu_2 = rho e_1 with rho = r / sqrt(2) (same ||mu_1 - mu_2|| = r sqrt 2);
      both centroid directions are the line e_1: theta_1 = (c1, e1), theta_2 = (c2, e2).
    * ``plusminus``: K = 4, pi_c = 1/4, centroids +-r e_1, +-r e_2 (mean zero, H = 2 heads
      still with orthogonal targets): theta_1 = (c1, e1), theta_2 = (e2, c2).

    The remaining d - 2 coordinates of z are independent N(0, sigma^2) noise orthogonal to
    every theta_h and mu_c, so they add exactly (d - 2) sigma^2 to the risk.
    """
    z1, z2 = sp.symbols("z_1 z_2", real=True)
    c1, c2 = sp.symbols("c_1 c_2", real=True)
    e1, e2 = sp.symbols("epsilon_1 epsilon_2", real=True)
    lam, r, sigma = sp.symbols("lambda r sigma", positive=True)
    z = [z1, z2]
    if setting == "default":
        mus = [[r, 0], [0, r]]
        weights = [sp.Rational(1, 2)] * 2
        thetas = [[c1, e1], [e2, c2]]
    elif setting == "antipodal":
        rho = r / sp.sqrt(2)
        mus = [[rho, 0], [-rho, 0]]
        weights = [sp.Rational(1, 2)] * 2
        thetas = [[c1, e1], [c2, e2]]
    elif setting == "plusminus":
        mus = [[r, 0], [-r, 0], [0, r], [0, -r]]
        weights = [sp.Rational(1, 4)] * 4
        thetas = [[c1, e1], [e2, c2]]
    else:
        raise ValueError(f"setting must be 'default', 'antipodal' or 'plusminus', got {setting!r}")
    out = [0, 0]
    for th in thetas:
        coef = _head_coef_expr(th, z, mus, weights, lam, sigma)
        out = [o + th[i] * coef for i, o in enumerate(out)]
    integrand = sp.Add(*[(z[i] - out[i]) ** 2 for i in range(2)])
    c = sp.Symbol("c", real=True)
    on = {e1: 0, e2: 0}
    sym_pt = {c1: c, c2: c}
    d_c1 = sp.diff(integrand, c1).subs(on).subs(sym_pt)
    d_e1 = sp.diff(integrand, e1).subs(on).subs(sym_pt)
    risk_on = integrand.subs(on).subs(sym_pt)
    args = (z1, z2, c, lam, r, sigma)
    full_args = (z1, z2, c1, c2, e1, e2, lam, r, sigma)
    return {
        "symbols": {"z_1": z1, "z_2": z2, "c_1": c1, "c_2": c2, "epsilon_1": e1,
                    "epsilon_2": e2, "c": c, "lambda": lam, "r": r, "sigma": sigma},
        "mus": mus,
        "weights": weights,
        "thetas": thetas,
        "integrand": integrand,
        "d_c1": d_c1,
        "d_e1": d_e1,
        "integrand_fn": _lambdify(full_args, integrand),
        "grad_fn": _lambdify(full_args, [sp.diff(integrand, v) for v in (c1, c2, e1, e2)]),
        "risk_on_fn": _lambdify(args, risk_on),
        "d_c1_fn": _lambdify(args, d_c1),
        "d_e1_fn": _lambdify(args, d_e1),
    }


def _expect2(setting: Setting, fn: Callable, r: float, sigma: float, n: int, *params: float | np.ndarray):
    """sum_c pi_c E_{z ~ N(mu_c, sigma^2 I_2)} fn(z1, z2, *params) by tensor Gauss-Hermite;
    ``params`` are numbers or arrays that broadcast against the nodes (a grid of values)."""
    S = _setting_exprs(setting)
    x, w = _gh(n)
    X1, X2 = np.meshgrid(x, x, indexing="ij")
    W = np.outer(w, w)
    total = 0.0
    for mu, pi in zip(S["mus"], S["weights"]):
        m1 = float(sp.sympify(mu[0]).subs(S["symbols"]["r"], r))
        m2 = float(sp.sympify(mu[1]).subs(S["symbols"]["r"], r))
        val = fn(m1 + sigma * X1, m2 + sigma * X2, *params)
        total = total + float(pi) * np.tensordot(W, np.asarray(val, float), axes=([0, 1], [-2, -1]))
    return total


@dataclass(frozen=True)
class AlignedReduction:
    """Results of :func:`aligned_reduction` (prop-aligned, chapters/population_risk.md;
    default mixture).

    ``integrand`` is ||z - T_1(z) - T_2(z)||^2 restricted to span(e_1, e_2) at
    theta_h = c_h e_h, built from the general head formula; ``separated`` is
    (z_1 - f(z_1; c_1))^2 + (z_2 - f(z_2; c_2))^2 with the scalar head map
    ``f`` = lam sigma^2 c^4 u + r c^2 logistic(lam r c^2 u).  ``g_integrand`` is
    (u - f(u; c))^2, ``dg_integrand`` its symbolic c-derivative, ``d2g_integrand`` the
    second derivative; ``fixed_point_equation`` is the stationarity equation
    E[(u - f) df/dc] = 0 with E the mixture expectation over u (unevaluated ``E``).
    """

    symbols: dict[str, sp.Symbol]
    f: sp.Expr
    integrand: sp.Expr
    separated: sp.Expr
    g_integrand: sp.Expr
    dg_integrand: sp.Expr
    d2g_integrand: sp.Expr
    risk_formula: sp.Eq
    fixed_point_equation: sp.Eq
    f_fn: Callable  # (u, c, lam, r, sigma)
    g_fn: Callable
    dg_fn: Callable
    d2g_fn: Callable


@functools.lru_cache(maxsize=None)
def aligned_reduction() -> AlignedReduction:
    """Aligned-manifold reduction; chapter "The two-head layer and its population risk"
    (chapters/population_risk.md, prop-aligned).

    Default mixture: K = H = 2, pi = (1/2, 1/2), mu_c = r e_c, heads theta_h = c_h e_h
    (= c_h mu_h / ||mu_h||).  Head 1 sees <theta_1, mu_1> = c_1 r, <theta_1, mu_2> = 0 and
    s = lam c_1 z_1, so T_1(z) = e_1 f(z_1; c_1) with

        f(u; c) = lam sigma^2 c^4 u + r c^2 logistic(lam r c^2 u),

    and similarly T_2(z) = e_2 f(z_2; c_2).  Given the component, the coordinates of z are
    independent, z_1 is N(r, sigma^2) (component 1) or N(0, sigma^2) (component 2), and the
    d - 2 other coordinates are pure noise, so

        R_inf(c_1, c_2) = g(c_1) + g(c_2) + (d - 2) sigma^2,
        g(c) = 1/2 E_{u ~ N(r, sigma^2)} (u - f(u; c))^2 + 1/2 E_{u ~ N(0, sigma^2)} (u - f(u; c))^2.

    The risk separates, so the symmetric reduction c_1 = c_2 = c gives
    R(c) = 2 g(c) + (d - 2) sigma^2 and the stationarity equation of each head on the
    manifold is g'(c) = -2 E[(u - f(u; c)) d f/d c] = 0, an expectation of logistic-type
    functions that quadrature evaluates (:func:`aligned_fixed_point`).  f depends on c
    only through c^2 (sign invariance of the layer), so c > 0 is taken.
    """
    S = _setting_exprs("default")
    sy = S["symbols"]
    z1, z2, c1, c2, e1, e2 = (sy[k] for k in ("z_1", "z_2", "c_1", "c_2", "epsilon_1", "epsilon_2"))
    lam, r, sigma = sy["lambda"], sy["r"], sy["sigma"]
    u = sp.Symbol("u", real=True)
    c = sy["c"]
    d = sp.Symbol("d", positive=True, integer=True)
    f = lam * sigma**2 * c**4 * u + r * c**2 * logistic(lam * r * c**2 * u)
    integrand = S["integrand"].subs({e1: 0, e2: 0})
    separated = (z1 - f.subs({u: z1, c: c1})) ** 2 + (z2 - f.subs({u: z2, c: c2})) ** 2
    g_int = (u - f) ** 2
    dg = sp.diff(g_int, c)
    d2g = sp.diff(dg, c)
    E = sp.Function("E")
    Rsym = sp.Function("R")
    gfun = sp.Function("g")
    risk_formula = sp.Eq(Rsym(c1, c2), gfun(c1) + gfun(c2) + (d - 2) * sigma**2)
    df = sp.diff(f, c)
    fixed_point = sp.Eq(E((u - f) * df), 0)
    args = (u, c, lam, r, sigma)
    return AlignedReduction(
        symbols={**sy, "u": u, "d": d},
        f=f,
        integrand=integrand,
        separated=separated,
        g_integrand=g_int,
        dg_integrand=dg,
        d2g_integrand=d2g,
        risk_formula=risk_formula,
        fixed_point_equation=fixed_point,
        f_fn=_lambdify(args, f),
        g_fn=_lambdify(args, g_int),
        dg_fn=_lambdify(args, dg),
        d2g_fn=_lambdify(args, d2g),
    )


def _expect_g(fn: Callable, c: float | np.ndarray, lam: float, r: float, sigma: float, n: int):
    """1/2 E_{N(r, sigma^2)} fn + 1/2 E_{N(0, sigma^2)} fn by Gauss-Hermite; c may be an array."""
    x, w = _gh(n)
    c = np.asarray(c, float)
    cc = c[..., None]
    a = fn(r + sigma * x, cc, lam, r, sigma)
    b = fn(sigma * x, cc, lam, r, sigma)
    return 0.5 * (np.asarray(a) * w).sum(-1) + 0.5 * (np.asarray(b) * w).sum(-1)


def check_aligned_reduction(seed: int = 0, n: int = 60) -> bool:
    """True iff (i) the general two-head integrand at theta_h = c_h e_h minus the separated
    form simplifies to 0, (ii) the symmetric c-derivative of the 2-D integrand at
    c_1 = c_2 = c equals the 1-D derivative integrand (simplify), and (iii) at random
    (c, lam, r, sigma) the 2-D quadrature of the risk equals 2 g(c) from 1-D quadrature."""
    A = aligned_reduction()
    S = _setting_exprs("default")
    sy = A.symbols
    ok1 = sp.simplify(sp.expand(A.integrand - A.separated)) == 0
    dc1 = S["d_c1"]
    target = A.dg_integrand.subs(A.symbols["u"], sy["z_1"])
    ok2 = sp.simplify(sp.expand(dc1 - target)) == 0
    # the displayed fixed-point equation is g' = -2 E[(u - f) df/dc] = 0
    lhs = A.fixed_point_equation.lhs.args[0]
    ok2 = ok2 and sp.simplify(sp.expand(A.dg_integrand + 2 * lhs)) == 0
    rng = np.random.default_rng(seed)
    ok3 = True
    for _ in range(3):
        c, lam, r, sigma = rng.uniform(0.5, 1.5), rng.uniform(0.3, 2), rng.uniform(1, 3), rng.uniform(0.3, 0.8)
        two_d = _expect2("default", S["risk_on_fn"], r, sigma, n, c, lam, r, sigma)
        one_d = 2 * _expect_g(A.g_fn, c, lam, r, sigma, n)
        ok3 = ok3 and bool(np.isclose(two_d, one_d, rtol=1e-10, atol=1e-12))
    return bool(ok1 and ok2 and ok3)


def aligned_risk(
    c1: float, c2: float, lam: float, r: float, sigma: float, d: int = 5, n: int = 80
) -> float:
    """R_inf(c_1 e_1, c_2 e_2) = g(c_1) + g(c_2) + (d - 2) sigma^2 for the default mixture
    (prop-aligned, chapters/population_risk.md), by Gauss-Hermite with n nodes per
    expectation."""
    A = aligned_reduction()
    return float(
        _expect_g(A.g_fn, c1, lam, r, sigma, n) + _expect_g(A.g_fn, c2, lam, r, sigma, n)
        + (d - 2) * sigma**2
    )


def aligned_risk_grad(c: float, lam: float, r: float, sigma: float, n: int = 80) -> float:
    """dR_inf/dc_1 at theta_h = c e_h = g'(c) (symbolic derivative, quadrature)."""
    return float(_expect_g(aligned_reduction().dg_fn, c, lam, r, sigma, n))


@dataclass(frozen=True)
class AlignedFixedPoint:
    """Aligned fixed point: ``c`` minimises g on c > 0, ``risk`` = R_inf(c e_1, c e_2);
    ``roots`` are all stationary points found on the scan, ``curvature`` g''(c) at ``c``."""

    c: float
    risk: float
    roots: tuple[float, ...]
    curvature: float


def aligned_fixed_point(
    lam: float, r: float, sigma: float, d: int = 5, n: int = 80, c_max: float = 4.0
) -> AlignedFixedPoint:
    """Solve g'(c) = 0 on the aligned manifold (chapter "The two-head layer and its
    population risk", chapters/population_risk.md, prop-aligned).

    Scans g'(c) on a grid in (0, c_max], brackets every sign change and refines it with
    ``scipy.optimize.brentq``; returns the root with the lowest g (the minimiser on the
    manifold), R_inf at it (including (d - 2) sigma^2) and g''(c*) > 0.  Raises ValueError
    if no stationary point with c > 0 exists in the scan.
    """
    lam, r, sigma = _positive("lam", lam), _positive("r", r), _positive("sigma", sigma)
    A = aligned_reduction()
    grid = np.linspace(0.02, c_max, 400)
    dg = _expect_g(A.dg_fn, grid, lam, r, sigma, n)
    roots = []
    for i in np.nonzero(np.sign(dg[:-1]) * np.sign(dg[1:]) < 0)[0]:
        roots.append(
            optimize.brentq(
                lambda cc: float(_expect_g(A.dg_fn, cc, lam, r, sigma, n)),
                grid[i], grid[i + 1], xtol=1e-14, rtol=1e-13,
            )
        )
    if not roots:
        raise ValueError(
            f"no aligned stationary point in (0, {c_max}] for lam={lam}, r={r}, sigma={sigma}"
        )
    gs = [float(_expect_g(A.g_fn, cc, lam, r, sigma, n)) for cc in roots]
    best = roots[int(np.argmin(gs))]
    return AlignedFixedPoint(
        c=float(best),
        risk=float(2 * min(gs) + (d - 2) * sigma**2),
        roots=tuple(float(x) for x in roots),
        curvature=float(_expect_g(A.d2g_fn, best, lam, r, sigma, n)),
    )


def aligned_branch(
    lams: Sequence[float] | np.ndarray, r: float, sigma: float, d: int = 5, n: int = 80
) -> dict[str, np.ndarray]:
    """Solution branch c*(lam) and R_inf(c*) over a grid of lam (prop-aligned,
    chapters/population_risk.md).

    Returns arrays ``lam``, ``c`` (minimiser on the manifold), ``risk``, ``n_roots`` (how
    many stationary points the scan found) and ``cos_target`` = 1 (on the manifold, by
    construction; compare :func:`tilted_minimiser` for the unconstrained minimiser)."""
    lams = np.asarray(lams, float)
    cs, risks, nroots = [], [], []
    for lam in lams:
        fp = aligned_fixed_point(float(lam), r, sigma, d=d, n=n)
        cs.append(fp.c)
        risks.append(fp.risk)
        nroots.append(len(fp.roots))
    return {"lam": lams, "c": np.array(cs), "risk": np.array(risks), "n_roots": np.array(nroots),
            "cos_target": np.ones_like(lams)}


# ---------------------------------------------------------------------------------------
# Section 5: the tilt off the aligned manifold
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TiltDerivation:
    """Results of :func:`tilt_derivation`.

    ``d_e1`` is d/d epsilon of the risk integrand at theta_1 = c e_1 + epsilon e_2,
    theta_2 = c e_2, epsilon = 0 (default mixture), split as ``leak_term`` + ``self_term``:
    ``leak_term`` = -2 (z_2 - f(z_2)) coef_1(z), the change of T_1 along e_2 multiplied by
    the residual in e_2 (nonzero in mean because coef_1 has mean ~ <theta_1, mean mixture>
    on the other cluster), ``self_term`` = -2 (z_1 - f(z_1)) c d coef_1/d epsilon.
    ``d_e3`` is the derivative along e_3 (orthogonal to both centroids), in a 3-D model;
    ``d_e3_odd_sum`` = d_e3(z_3) + d_e3(-z_3), which simplifies to 0, so E[d_e3] = 0.
    """

    symbols: dict[str, sp.Symbol]
    d_e1: sp.Expr
    leak_term: sp.Expr
    self_term: sp.Expr
    d_e3: sp.Expr
    d_e3_odd_sum: sp.Expr
    antipodal_d_e1: sp.Expr
    antipodal_odd_sum: sp.Expr


@functools.lru_cache(maxsize=None)
def tilt_derivation() -> TiltDerivation:
    """Off-manifold gradient; chapter "The two-head layer and its population risk"
    (chapters/population_risk.md, prop-gradient and the section on the measured tilt).

    With theta_1 = c e_1 + eps v, theta_2 = c e_2, the risk gradient along v at eps = 0 is
    E[d/d eps ||z - T_1 - T_2||^2].  For v = e_3 (orthogonal to both centroids) the
    integrand is odd in z_3, which is N(0, sigma^2) and independent of the rest in every
    component, so that component vanishes identically.  For v = e_2 (towards the other
    centroid) nothing forces it to vanish; its integrand is a 2-D expression in
    (z_1, z_2) evaluated by quadrature in :func:`tilt_gradient`.  For the centred
    (antipodal) mixture mu_1 = -mu_2 = rho e_1, the e_2-derivative is odd in z_2 (z_2 is
    N(0, sigma^2) in both components), so it vanishes.
    """
    S = _setting_exprs("default")
    sy = S["symbols"]
    z1, z2, c, lam, r, sigma = (sy[k] for k in ("z_1", "z_2", "c", "lambda", "r", "sigma"))
    e1 = sy["epsilon_1"]
    # leak / self decomposition, from the general head formula
    th1 = [c, e1]
    z = [z1, z2]
    coef1 = _head_coef_expr(th1, z, S["mus"], S["weights"], lam, sigma)
    f = lambda u: lam * sigma**2 * c**4 * u + r * c**2 * logistic(lam * r * c**2 * u)  # noqa: E731
    leak = -2 * (z2 - f(z2)) * coef1.subs(e1, 0)
    selfterm = -2 * (z1 - f(z1)) * c * sp.diff(coef1, e1).subs(e1, 0)
    # e_3 direction in a 3-D model
    z3 = sp.Symbol("z_3", real=True)
    e = sp.Symbol("epsilon", real=True)
    mus3 = [[r, 0, 0], [0, r, 0]]
    thetas3 = [[c, 0, e], [0, c, 0]]
    zz = [z1, z2, z3]
    out = [0, 0, 0]
    for th in thetas3:
        coef = _head_coef_expr(th, zz, mus3, S["weights"], lam, sigma)
        out = [o + th[i] * coef for i, o in enumerate(out)]
    integ3 = sp.Add(*[(zz[i] - out[i]) ** 2 for i in range(3)])
    d_e3 = sp.diff(integ3, e).subs(e, 0)
    odd_sum = d_e3 + d_e3.subs(z3, -z3)
    A = _setting_exprs("antipodal")
    ad = A["d_e1"]
    asy = A["symbols"]
    aodd = ad + ad.subs(asy["z_2"], -asy["z_2"])
    return TiltDerivation(
        symbols={**sy, "z_3": z3, "epsilon": e},
        d_e1=S["d_e1"],
        leak_term=leak,
        self_term=selfterm,
        d_e3=d_e3,
        d_e3_odd_sum=odd_sum,
        antipodal_d_e1=ad,
        antipodal_odd_sum=aodd,
    )


def check_tilt() -> bool:
    """True iff (i) leak_term + self_term - d_e1 simplifies to 0, (ii) the e_3-derivative
    integrand is odd in z_3 (sum simplifies to 0), (iii) the antipodal e_2-derivative
    integrand is odd in z_2, and (iv) at the default aligned fixed point (lam=1, r=2,
    sigma=0.5) the e_2 gradient by quadrature matches a central finite difference of the
    quadrature risk (rtol 1e-5) -- so the symbolic derivative is the derivative."""
    T = tilt_derivation()
    ok1 = sp.simplify(sp.expand(T.leak_term + T.self_term - T.d_e1)) == 0
    ok2 = sp.simplify(sp.expand(T.d_e3_odd_sum)) == 0
    ok3 = sp.simplify(sp.expand(T.antipodal_odd_sum)) == 0
    lam, r, sigma = 1.0, 2.0, 0.5
    fp = aligned_fixed_point(lam, r, sigma)
    g = tilt_gradient(lam, r, sigma, c=fp.c)
    S = _setting_exprs("default")
    h = 1e-5
    Rp = _expect2("default", S["integrand_fn"], r, sigma, 60, fp.c, fp.c, h, 0.0, lam, r, sigma)
    Rm = _expect2("default", S["integrand_fn"], r, sigma, 60, fp.c, fp.c, -h, 0.0, lam, r, sigma)
    ok4 = bool(np.isclose(g, (Rp - Rm) / (2 * h), rtol=1e-5))
    return bool(ok1 and ok2 and ok3 and ok4)


def _setting_fixed_point(setting: Setting, lam: float, r: float, sigma: float, n: int) -> float:
    """Symmetric aligned fixed point c* (dR/dc_1 = 0 at c_1 = c_2 = c) by 2-D quadrature."""
    S = _setting_exprs(setting)
    if setting == "default":
        return aligned_fixed_point(lam, r, sigma, n=n).c
    fn = lambda c: float(_expect2(setting, S["d_c1_fn"], r, sigma, n, c, lam, r, sigma))  # noqa: E731
    grid = np.linspace(0.02, 4.0, 200)
    vals = np.asarray(_expect2(setting, S["d_c1_fn"], r, sigma, n, grid[:, None, None], lam, r, sigma))
    idx = np.nonzero(np.sign(vals[:-1]) * np.sign(vals[1:]) < 0)[0]
    if len(idx) == 0:
        raise ValueError(f"no aligned stationary point for setting={setting!r}")
    roots = [optimize.brentq(fn, grid[i], grid[i + 1], xtol=1e-13) for i in idx]
    risks = [float(_expect2(setting, S["risk_on_fn"], r, sigma, n, c, lam, r, sigma)) for c in roots]
    return float(roots[int(np.argmin(risks))])


def tilt_gradient(
    lam: float,
    r: float,
    sigma: float,
    setting: Setting = "default",
    c: float | None = None,
    n: int = 60,
) -> float:
    """dR_inf/d eps at theta_1 = c u_1 + eps e_2, theta_2 on the manifold, eps = 0
    (prop-gradient, chapters/population_risk.md), by 2-D Gauss-Hermite of the symbolic
    derivative.

    ``setting`` selects the mixture (see module notes: ``default`` orthogonal centroids,
    ``antipodal`` the centred default mixture, ``plusminus`` K = 4 centroids +-r e_h);
    ``c`` defaults to that setting's aligned fixed point.  A positive value means the risk
    decreases when theta_1 tilts away from the other centroid (towards -e_2)."""
    lam, r, sigma = _positive("lam", lam), _positive("r", r), _positive("sigma", sigma)
    if c is None:
        c = _setting_fixed_point(setting, lam, r, sigma, n)
    S = _setting_exprs(setting)
    return float(_expect2(setting, S["d_e1_fn"], r, sigma, n, c, lam, r, sigma))


def inactive_leak(lam: float, r: float, sigma: float, c: float | None = None, n: int = 80) -> dict[str, float]:
    """How much head 1 outputs on the other cluster (default mixture; chapters/
    population_risk.md, section on the measured tilt).

    ``leak`` = E_{z ~ N(mu_2, sigma^2 I)} <T_1(z), e_1> = E r c^2 logistic(lam r c^2 z_1)
    (the linear term has mean 0 there); ``leak_s0`` = c <theta_1, mean of the mixture>
    = c^2 r / 2, what the head outputs at s = 0 where the weights are untilted; and
    ``tilt`` = :func:`tilt_gradient`.  The leak is a constant offset on tokens of cluster 2
    along e_1 that the other head's residual couples to when theta_1 turns towards e_2."""
    if c is None:
        c = aligned_fixed_point(lam, r, sigma, n=n).c
    x, w = _gh(n)
    leak = float(np.sum(w * r * c**2 * expit(lam * r * c**2 * sigma * x)))
    return {"c": float(c), "leak": leak, "leak_s0": c**2 * r / 2,
            "tilt": tilt_gradient(lam, r, sigma, c=c)}


@dataclass(frozen=True)
class TiltedMinimiser:
    """Minimiser of R_inf over the symmetric family theta_1 = (c, eps), theta_2 = (eps, c)
    (default mixture): ``cos`` = ``|cos(theta_1, mu_1)|``, ``risk`` includes (d - 2) sigma^2."""

    c: float
    eps: float
    cos: float
    risk: float
    aligned_risk: float


def tilted_minimiser(
    lam: float, r: float, sigma: float, d: int = 5, n: int = 40
) -> TiltedMinimiser:
    """Large-L minimiser off the manifold (chapters/population_risk.md, section on the
    measured tilt): minimises the 2-D quadrature
    risk over (c, eps) with theta_1 = c e_1 + eps e_2, theta_2 = eps e_1 + c e_2 (the
    family is invariant under swapping the coordinates, which the default mixture is),
    starting at the aligned fixed point, using the symbolic gradient.  eps < 0 means each
    head tilts away from the other centroid."""
    S = _setting_exprs("default")
    fp = aligned_fixed_point(lam, r, sigma, d=d, n=80)

    def fun(p: np.ndarray) -> tuple[float, np.ndarray]:
        c, e = p
        R = _expect2("default", S["integrand_fn"], r, sigma, n, c, c, e, e, lam, r, sigma)
        gc1, gc2, ge1, ge2 = (
            _expect2("default", lambda *a, k=k: S["grad_fn"](*a)[k], r, sigma, n,
                     c, c, e, e, lam, r, sigma)
            for k in range(4)
        )
        return float(R), np.array([gc1 + gc2, ge1 + ge2])

    res = optimize.minimize(fun, np.array([fp.c, 0.0]), jac=True, method="BFGS",
                            options={"gtol": 1e-11})
    c, e = res.x
    return TiltedMinimiser(
        c=float(c), eps=float(e), cos=float(abs(c) / np.hypot(c, e)),
        risk=float(res.fun + (d - 2) * sigma**2), aligned_risk=fp.risk,
    )


def tilt_branch(
    lams: Sequence[float] | np.ndarray, r: float, sigma: float, d: int = 5, n: int = 40
) -> dict[str, np.ndarray]:
    """The tilt over a grid of lam (chapters/population_risk.md, section on the measured
    tilt): for each lam the aligned c*, the off-manifold gradient there, and the
    unconstrained (symmetric-family) minimiser's c, eps, ``|cos|`` to its centroid and
    risk, beside the aligned risk."""
    rows = {k: [] for k in ("c_aligned", "tilt_gradient", "c", "eps", "cos", "risk", "aligned_risk")}
    for lam in np.asarray(lams, float):
        tm = tilted_minimiser(float(lam), r, sigma, d=d, n=n)
        fp = aligned_fixed_point(float(lam), r, sigma, d=d)
        rows["c_aligned"].append(fp.c)
        rows["tilt_gradient"].append(tilt_gradient(float(lam), r, sigma, c=fp.c, n=n))
        for k in ("c", "eps", "cos", "risk", "aligned_risk"):
            rows[k].append(getattr(tm, k))
    return {"lam": np.asarray(lams, float), **{k: np.array(v) for k, v in rows.items()}}


# ---------------------------------------------------------------------------------------
# Section 6: identity distortion and its bound
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DistortionDerivation:
    """Results of :func:`distortion_derivation` (K = 2, equal weights, mu_c = r e_c).

    w = <z, mu_2 - mu_1> for z in component 1 is N(-r^2, 2 sigma^2 r^2); beta = 1 - alpha_1
    = logistic(lam w).  ``exact_integrand`` is the w-integrand of
    D - (lam sigma^2)^2 (d sigma^2 + r^2) = E[2 lam sigma^2 beta w + 2 r^2 beta^2];
    ``mgf`` is E e^{u w} by the lemma; ``bound`` is B(lam) (see :func:`distortion_bound`);
    ``lam_star_asymptotic`` minimises the bound's small-lam form
    lam sigma^2 sqrt(d sigma^2 + r^2) + sqrt(2) r e^{-lam r^2}."""

    symbols: dict[str, sp.Symbol]
    expansion_lhs: sp.Expr
    expansion_rhs: sp.Expr
    exact_integrand: sp.Expr
    mgf: sp.Expr
    mgf_closed: sp.Expr
    bound: sp.Expr
    lam_star_asymptotic: sp.Expr
    bound_fn: Callable  # (lam, r, sigma, d)


@functools.lru_cache(maxsize=None)
def distortion_derivation() -> DistortionDerivation:
    """Identity distortion and bound; chapter "In-context quantization with identity
    attention" (chapters/quantization.md, prop-distortion-exact and thm-distortion-bound).

    For z in component c (K = 2, other component c'), Q(z) - mu_c = a + b with
    a = lam sigma^2 z and b = beta (mu_c' - mu_c), beta = 1 - alpha_c(z)
    = logistic(log(pi_c'/pi_c) + lam <z, mu_c' - mu_c>).  Exactly,

        D(lam) = (lam sigma^2)^2 E||z||^2 + 2 lam sigma^2 E[beta <z, v>] + ||v||^2 E[beta^2],

    v = mu_c' - mu_c, with E||z||^2 = d sigma^2 + r^2.  Bound (Minkowski,
    sqrt(E||a+b||^2) <= sqrt(E||a||^2) + sqrt(E||b||^2)) and
    logistic(x)^2 <= min(1, e^{2x}) <= e^{u x / lam} for every u in [0, 2 lam], so with the
    Gaussian MGF of w = <z, v> ~ N(-r^2, 2 sigma^2 r^2):

        D(lam) <= B(lam) = ( lam sigma^2 sqrt(d sigma^2 + r^2) + sqrt(2) r sqrt(M(lam)) )^2,
        M(lam) = exp(-u r^2 + u^2 sigma^2 r^2),  u = min(2 lam, 1 / (2 sigma^2)).

    The first term is the shrinkage (grows like lam), the second the misassignment (decays
    like e^{-lam r^2} for lam sigma^2 <= 1/4, then saturates at the Chernoff value
    sqrt(2) r e^{-r^2/(8 sigma^2)}).  In units of sigma, lam sigma^2 and B / sigma^2 depend
    only on rho = r / sigma and d.  Dropping the u^2 term, the minimiser of
    lam A + sqrt(2) r e^{-lam r^2} (A = sigma^2 sqrt(d sigma^2 + r^2)) is
    lam* = log(sqrt(2) r^3 / A) / r^2, i.e. lam* sigma^2 = log(sqrt(2) rho^3 / sqrt(d + rho^2)) / rho^2.
    """
    lam, r, sigma = sp.symbols("lambda r sigma", positive=True)
    d = sp.Symbol("d", positive=True)
    w, u = sp.symbols("w u", real=True)
    z1, z2, beta = sp.symbols("z_1 z_2 beta", real=True)
    # exact expansion, in the plane of the centroids (component 1: v = (-r, r))
    v = [-r, r]
    a = [lam * sigma**2 * z1, lam * sigma**2 * z2]
    lhs = sp.Add(*[(a[i] + beta * v[i]) ** 2 for i in range(2)])
    rhs = (lam * sigma**2) ** 2 * (z1**2 + z2**2) + 2 * lam * sigma**2 * beta * _dot([z1, z2], v) \
        + beta**2 * _dot(v, v)
    exact_integrand = 2 * lam * sigma**2 * logistic(lam * w) * w + 2 * r**2 * logistic(lam * w) ** 2
    L = tilting_lemma()
    sym = L.symbols
    mgf = L.mgf.subs({sym["t"]: u, sym["m"]: -(r**2), sym["s"]: sp.sqrt(2) * sigma * r})
    mgf_closed = sp.exp(-u * r**2 + u**2 * sigma**2 * r**2)
    uu = sp.Min(2 * lam, 1 / (2 * sigma**2))
    M = mgf_closed.subs(u, uu)
    bound = (lam * sigma**2 * sp.sqrt(d * sigma**2 + r**2) + sp.sqrt(2) * r * sp.sqrt(M)) ** 2
    A = sigma**2 * sp.sqrt(d * sigma**2 + r**2)
    small = lam * A + sp.sqrt(2) * r * sp.exp(-lam * r**2)
    # the unique stationary point of the (convex) small-lam form; check_distortion
    # verifies that it zeroes the derivative
    lam_star = sp.log(sp.sqrt(2) * r**3 / A) / r**2
    return DistortionDerivation(
        symbols={"lambda": lam, "r": r, "sigma": sigma, "d": d, "w": w, "u": u, "beta": beta,
                 "z_1": z1, "z_2": z2},
        expansion_lhs=lhs,
        expansion_rhs=rhs,
        exact_integrand=exact_integrand,
        mgf=mgf,
        mgf_closed=mgf_closed,
        bound=bound,
        lam_star_asymptotic=lam_star,
        bound_fn=sp.lambdify((lam, r, sigma, d), bound, modules="numpy"),
    )


def check_distortion(seed: int = 0) -> bool:
    """True iff (i) the exact expansion of ||a + b||^2 simplifies, (ii) the lemma's MGF of
    w equals the closed form, (iii) lam_star_asymptotic zeroes the derivative of the
    small-lam bound, and (iv) at random (lam, r, sigma, d) the bound is >= the exact D
    (quadrature) and the exact D agrees with Monte Carlo within 5 standard errors."""
    D = distortion_derivation()
    sy = D.symbols
    ok1 = sp.simplify(sp.expand(D.expansion_lhs - D.expansion_rhs)) == 0
    ok2 = sp.simplify(D.mgf - D.mgf_closed) == 0
    lam, r, sigma, d = sy["lambda"], sy["r"], sy["sigma"], sy["d"]
    small = lam * sigma**2 * sp.sqrt(d * sigma**2 + r**2) + sp.sqrt(2) * r * sp.exp(-lam * r**2)
    ok3 = sp.simplify(sp.diff(small, lam).subs(lam, D.lam_star_asymptotic)) == 0
    rng = np.random.default_rng(seed)
    ok4 = True
    for _ in range(3):
        lam_, r_, s_, d_ = rng.uniform(0.2, 3), rng.uniform(1, 3), rng.uniform(0.3, 0.8), int(rng.integers(2, 8))
        ex = distortion_exact(lam_, r_, s_, d_)
        mc, se = distortion_mc(lam_, r_, s_, d_, n=20000, seed=int(rng.integers(1 << 30)))
        ok4 = ok4 and distortion_bound(lam_, r_, s_, d_) >= ex and abs(ex - mc) <= 5 * se
    return bool(ok1 and ok2 and ok3 and ok4)


def distortion_exact(lam: float, r: float, sigma: float, d: int, n: int = 120) -> float:
    """Exact large-L distortion D(lam) = E||Q(z) - mu_{c(z)}||^2 for K = 2, equal weights,
    mu_c = r e_c, in dimension d (prop-distortion-exact, chapters/quantization.md): the
    exact expansion of
    :func:`distortion_derivation` with the 1-D expectation over w ~ N(-r^2, 2 sigma^2 r^2)
    by Gauss-Hermite (both components contribute equally by symmetry)."""
    lam, r, sigma = _positive("lam", lam), _positive("r", r), _positive("sigma", sigma)
    x, wts = _gh(n)
    w = -(r**2) + np.sqrt(2.0) * sigma * r * x
    beta = expit(lam * w)
    rest = np.sum(wts * (2 * lam * sigma**2 * beta * w + 2 * r**2 * beta**2))
    return float((lam * sigma**2) ** 2 * (d * sigma**2 + r**2) + rest)


def distortion_mc(
    lam: float, r: float, sigma: float, d: int, n: int = 100_000, seed: int = 0
) -> tuple[float, float]:
    """Monte Carlo D(lam) with :func:`identity_limit_float64` (large-L map), K = 2, mu_c = r e_c:
    returns (mean, standard error)."""
    rng = np.random.default_rng(seed)
    mu = np.zeros((2, d))
    mu[0, 0] = mu[1, 1] = r
    lab = rng.integers(0, 2, size=n)
    z = mu[lab] + sigma * rng.standard_normal((n, d))
    err = np.sum((identity_limit_float64(z, mu, np.array([0.5, 0.5]), sigma, lam) - mu[lab]) ** 2, axis=-1)
    return float(err.mean()), float(err.std(ddof=1) / np.sqrt(n))


def distortion_bound(lam: float, r: float, sigma: float, d: int) -> float:
    """B(lam) = (lam sigma^2 sqrt(d sigma^2 + r^2) + sqrt(2) r sqrt(M(lam)))^2,
    M(lam) = exp(-u r^2 + u^2 sigma^2 r^2), u = min(2 lam, 1/(2 sigma^2)); D(lam) <= B(lam)
    (thm-distortion-bound, chapters/quantization.md; K = 2, equal weights, mu_c = r e_c;
    proof in
    :func:`distortion_derivation`)."""
    lam, r, sigma = _positive("lam", lam), _positive("r", r), _positive("sigma", sigma)
    u = min(2 * lam, 1 / (2 * sigma**2))
    M = np.exp(-u * r**2 + u**2 * sigma**2 * r**2)
    return float((lam * sigma**2 * np.sqrt(d * sigma**2 + r**2) + np.sqrt(2) * r * np.sqrt(M)) ** 2)


def best_lambda_bound(r: float, sigma: float, d: int) -> dict[str, float]:
    """lam minimising the bound B (bounded scalar search), the bound there, the exact D
    there, the lam minimising the exact D, and the asymptotic lam* of
    :func:`distortion_derivation` (thm-distortion-bound, chapters/quantization.md)."""
    r, sigma = _positive("r", r), _positive("sigma", sigma)
    hi = 2.0 / sigma**2
    rb = optimize.minimize_scalar(lambda l: distortion_bound(l, r, sigma, d), bounds=(1e-6, hi),
                                  method="bounded", options={"xatol": 1e-10})
    re = optimize.minimize_scalar(lambda l: distortion_exact(l, r, sigma, d), bounds=(1e-6, hi),
                                  method="bounded", options={"xatol": 1e-10})
    A = sigma**2 * np.sqrt(d * sigma**2 + r**2)
    lam_asym = np.log(np.sqrt(2) * r**3 / A) / r**2
    return {
        "lam_bound": float(rb.x),
        "bound": float(rb.fun),
        "exact_at_lam_bound": distortion_exact(float(rb.x), r, sigma, d),
        "lam_exact": float(re.x),
        "exact_min": float(re.fun),
        "lam_asymptotic": float(lam_asym),
    }


def distortion_scaling(
    rhos: Sequence[float] | Float[np.ndarray, "n_rho"], ds: Sequence[int] | Int[np.ndarray, "n_d"], sigma: float = 1.0
) -> list[dict[str, float]]:
    """Best-lam bound and exact distortion over separations rho = r / sigma and dimensions
    d (prop-distortion-scaling, chapters/quantization.md).  Rows carry lam sigma^2 and D / sigma^2, which depend on
    (rho, d) only."""
    rows = []
    for d in ds:
        for rho in rhos:
            b = best_lambda_bound(rho * sigma, sigma, int(d))
            rows.append({"rho": float(rho), "d": int(d),
                         "lam_bound_s2": b["lam_bound"] * sigma**2,
                         "lam_asym_s2": b["lam_asymptotic"] * sigma**2,
                         "bound_s2": b["bound"] / sigma**2,
                         "exact_at_lam_bound_s2": b["exact_at_lam_bound"] / sigma**2,
                         "lam_exact_s2": b["lam_exact"] * sigma**2,
                         "exact_min_s2": b["exact_min"] / sigma**2})
    return rows


def check_all() -> dict[str, bool]:
    """Run every derivation check (a few seconds)."""
    return {
        "tilting_lemma": check_tilting_lemma(),
        "head_output": check_head_output(),
        "identity_limit": check_identity_limit(),
        "aligned_reduction": check_aligned_reduction(),
        "tilt": check_tilt(),
        "distortion": check_distortion(),
    }

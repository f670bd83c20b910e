"""Stationary points of the large-L risk, and of the finite-L risk on a fixed sample, and the
finite-L gap; chapters "The two-head layer and its population risk" (chapters/population_risk.md:
R_inf in closed form, prop-rinf; the gradient and its fixed-point form, prop-gradient; the
aligned manifold, prop-aligned; how fast R_L approaches R_inf) and "Training dynamics"
(chapters/training_dynamics.md: the finite-L landscape).

- ``value_grad_hess``: R_inf, its gradient and its Hessian (``jax.grad`` / ``jax.hessian``
  of the quadrature risk), compiled once per mixture shape and reused for every point.
- ``newton_stationary``: Newton's method on grad R_inf = 0. Newton converges to the
  stationary point nearest its start whatever its index, so it finds saddles as well as
  minima; ``critical_point_kind`` names the point from the Hessian's eigenvalues.
- ``empirical_value_grad_hess`` and ``empirical_stationary``: the same for the empirical
  risk R_L on a fixed sample of prompts, the risk that training at prompt length L
  minimises; Newton may be kept inside a family of configurations that a symmetry of the
  mixture maps to itself.
- ``head_gradient`` and ``fixed_point_map``: the gradient of ||z - T(z)||^2 with respect to
  each theta_h written out by hand (the chapter derives it), averaged over given queries,
  and the fixed-point form of the stationarity condition.
- ``risk_gap``: R_L - R_inf measured at finite L with a paired (control-variate)
  estimator, and ``loglog_slope`` for its rate.

Everything runs in float32, like the rest of the library: gradients are accurate to about
1e-6 and Hessian eigenvalues to about 1e-4 at the book's settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from . import _kernels as k
from . import _validate as v
from .mixture import GaussianMixture, sample
from .risk import MAX_NODES, population_risk
from .setting import DEFAULT

__all__ = [
    "value_grad_hess",
    "StationaryPoint",
    "newton_stationary",
    "empirical_value_grad_hess",
    "empirical_stationary",
    "critical_point_kind",
    "risk_and_grad",
    "large_L_minimiser",
    "head_gradient",
    "fixed_point_map",
    "risk_gap",
    "loglog_slope",
]


@partial(jax.jit, static_argnums=3)
def _vgh(theta, mixture, lam, n_nodes):
    f = lambda t: population_risk(t, mixture, lam, n_nodes)  # noqa: E731  (checks skip tracers)
    value, grad = jax.value_and_grad(f)(theta)
    return value, grad, jax.hessian(f)(theta)


def value_grad_hess(
    theta: Float[ArrayLike, "H d"], mixture: GaussianMixture, lam: float | Float[ArrayLike, ""], n_nodes: int = 40
) -> tuple[float, np.ndarray, np.ndarray]:
    """R_inf(theta), its gradient (H, d) and its Hessian (H d, H d), by ``jax.grad`` and
    ``jax.hessian`` of ``population_risk`` (one jit compilation per mixture shape; lam and
    the mixture's values are traced, so sweeps reuse it)."""
    v.instance("mixture", mixture, GaussianMixture)
    theta = v.heads("theta", theta, d=mixture.d, d_from="mixture")
    v.positive_finite("lam", lam)
    n_nodes = v.positive_int("n_nodes", n_nodes, minimum=2, maximum=MAX_NODES)
    value, grad, hess = _vgh(theta, mixture, jnp.float32(lam), n_nodes)
    n = theta.size
    return float(value), np.asarray(grad, np.float64), np.asarray(hess, np.float64).reshape(n, n)


def critical_point_kind(eigenvalues: np.ndarray, tol: float = 1e-3) -> str:
    """Name a stationary point from its Hessian eigenvalues: "local minimum" (all > tol),
    "local maximum" (all < -tol), "saddle" (some < -tol and some > tol), else
    "degenerate minimum" (none < -tol, some of absolute value <= tol: flat directions, for
    instance a continuous symmetry of the mixture) or "degenerate"."""
    ev = np.asarray(eigenvalues, float)
    neg, pos = np.any(ev < -tol), np.any(ev > tol)
    if neg and pos:
        return "saddle"
    if pos and not neg:
        return "local minimum" if np.all(ev > tol) else "degenerate minimum"
    if neg and not pos:
        return "local maximum"
    return "degenerate"


@dataclass(frozen=True)
class StationaryPoint:
    """A stationary point of R_inf found by ``newton_stationary``, or of the empirical R_L on a
    fixed sample found by ``empirical_stationary``.

    Attributes:
        theta: (H, d) heads.
        risk: R_inf(theta), or the sample's R_L(theta).
        grad_norm: the norm of the gradient (Frobenius) at the returned point.
        eigenvalues: the Hessian's eigenvalues, ascending.
        kind: ``critical_point_kind(eigenvalues)``.
        iterations: Newton steps taken.
    """

    theta: np.ndarray
    risk: float
    grad_norm: float
    eigenvalues: np.ndarray
    kind: str
    iterations: int

    @property
    def index(self) -> int:
        """The number of negative Hessian eigenvalues (below -1e-3), 0 at a minimum."""
        return int(np.sum(self.eigenvalues < -1e-3))


def _solve(vgh, vg, theta0: np.ndarray, tol: float, max_iter: int) -> tuple[np.ndarray, int]:
    """Newton's method on grad f = 0 from ``theta0``: each step solves H step = grad in the
    least-squares sense (``numpy.linalg.lstsq``, relative cut-off 1e-6), so flat directions
    of a symmetric problem do not blow the step up. With ``vg`` (value and gradient only)
    the Hessian is kept from step to step (the chord method: cheap where a Hessian is
    expensive) and recomputed only when the gradient norm fails to halve. Returns the
    point and the number of steps."""
    theta = np.asarray(theta0, np.float64)
    _, g, h = vgh(theta)
    it = 0
    while np.linalg.norm(g) >= tol and it < max_iter:
        step = np.linalg.lstsq(h, g.ravel(), rcond=1e-6)[0]
        theta = theta - step.reshape(theta.shape)
        it += 1
        norm = np.linalg.norm(g)
        if vg is None:
            _, g, h = vgh(theta)
        else:
            _, g = vg(theta)
            if np.linalg.norm(g) > 0.5 * norm:
                _, g, h = vgh(theta)
    return theta, it


def _stationary_point(vgh, theta: np.ndarray, it: int) -> StationaryPoint:
    value, g, h = vgh(theta)
    ev = np.linalg.eigvalsh(0.5 * (h + h.T))
    return StationaryPoint(
        theta=np.asarray(jnp.asarray(theta, jnp.float32), np.float64),
        risk=value,
        grad_norm=float(np.linalg.norm(g)),
        eigenvalues=ev,
        kind=critical_point_kind(ev),
        iterations=it,
    )


def newton_stationary(
    theta0: Float[ArrayLike, "H d"],
    mixture: GaussianMixture,
    lam: float | Float[ArrayLike, ""],
    n_nodes: int = 40,
    tol: float = 1e-5,
    max_iter: int = 50,
) -> StationaryPoint:
    """Solve grad R_inf(theta) = 0 by Newton's method from ``theta0``.

    Each step solves H step = grad in the least-squares sense (``numpy.linalg.lstsq``,
    relative cut-off 1e-6), so flat directions of a symmetric mixture do not blow the step
    up. Newton is attracted by stationary points of every index, so from a symmetric start
    it finds the saddle that the symmetry pins, not a minimum. Stops when ||grad|| < tol
    or after ``max_iter`` steps; the caller should check ``grad_norm``.
    """
    v.instance("mixture", mixture, GaussianMixture)
    v.heads("theta0", theta0, d=mixture.d, d_from="mixture")  # Newton starts from theta0 in float64
    lam = v.positive_finite("lam", lam)
    tol, max_iter = v.positive_finite("tol", tol), v.positive_int("max_iter", max_iter, minimum=0)
    vgh = lambda t: value_grad_hess(t, mixture, lam, n_nodes)  # noqa: E731
    theta, it = _solve(vgh, None, np.asarray(theta0, np.float64), tol, max_iter)
    return _stationary_point(vgh, theta, it)


def _chunk(n: int, most: int = 16) -> int:
    """The largest divisor of ``n`` that is at most ``most``: prompts per block of the
    empirical Hessian (memory grows with the block, not with ``n``)."""
    return max(c for c in range(1, min(n, most) + 1) if n % c == 0)


@partial(jax.jit, static_argnums=(4,))
def _empirical_terms(theta, X, lam, B, chunk):
    """The sample's risk, its gradient (H, d) and the Hessian applied to each direction of
    B (m, H, d) (m Hessian-vector products, forward over reverse), in blocks of ``chunk``
    prompts; m = 0 skips the Hessian."""
    blocks = X.reshape(X.shape[0] // chunk, chunk, *X.shape[1:])

    def f(t, x):
        return jnp.mean(jnp.sum((x - k.two_head(t, x, lam)) ** 2, axis=-1))

    def one(x):
        value, grad = jax.value_and_grad(f)(theta, x)
        if B.shape[0] == 0:
            return value, grad, jnp.zeros_like(B)
        g = lambda t: jax.grad(f)(t, x)  # noqa: E731
        return value, grad, jax.vmap(lambda b: jax.jvp(g, (theta,), (b,))[1])(B)

    return jax.tree_util.tree_map(lambda a: jnp.mean(a, axis=0), jax.lax.map(one, blocks))


def _empirical_args(name: str, theta, X, lam):
    theta = v.heads(name, theta)
    X = v.prompts("X", X)
    v.same_dim(name, theta.shape[1], "X", X.shape[-1])
    return theta, X, jnp.float32(v.positive_finite("lam", lam))


def _empirical_full(theta, X, lam) -> tuple[float, np.ndarray, np.ndarray]:
    n = theta.size
    basis = jnp.eye(n, dtype=jnp.float32).reshape(n, *theta.shape)
    value, grad, hb = _empirical_terms(jnp.asarray(theta, jnp.float32), X, lam, basis, _chunk(X.shape[0]))
    return float(value), np.asarray(grad, np.float64), np.asarray(hb, np.float64).reshape(n, n)


def empirical_value_grad_hess(
    theta: Float[ArrayLike, "H d"], X: Float[ArrayLike, "n L d"], lam: float | Float[ArrayLike, ""]
) -> tuple[float, np.ndarray, np.ndarray]:
    """The empirical risk R_L on a fixed sample of prompts, its gradient and its Hessian:
    the finite-L counterpart of ``value_grad_hess`` (chapter "Training dynamics", the
    finite-L landscape).

    The mean over the ``n`` prompts of ``X`` of the mean over their tokens of
    ``||x_l - T(X)_l||^2`` (``attnclust.empirical_risk``), differentiated by ``jax.grad``
    and Hessian-vector products (``jax.jvp`` of the gradient, as ``jax.hessian`` does) in
    blocks of at most 16 prompts (``lax.map``), so memory grows with the block and not with
    ``n``. One compilation per shape of ``X``.

    Args:
        theta: ``(H, d)`` heads, finite.
        X: ``(n, L, d)`` prompts, finite.
        lam: the inverse temperature, finite and > 0.

    Returns:
        The risk, the gradient ``(H, d)`` and the Hessian ``(H d, H d)``, in float64 (computed
        in float32).
    """
    theta, X, lam = _empirical_args("theta", theta, X, lam)
    return _empirical_full(theta, X, lam)


def empirical_stationary(
    theta0: Float[ArrayLike, "H d"],
    X: Float[ArrayLike, "n L d"],
    lam: float | Float[ArrayLike, ""],
    directions: Float[ArrayLike, "m H d"] | None = None,
    tol: float = 1e-5,
    max_iter: int = 50,
) -> StationaryPoint:
    """Solve grad R_L(theta) = 0 for the empirical risk on the fixed sample ``X`` by
    Newton's method from ``theta0`` (chapter "Training dynamics", the finite-L landscape).

    As ``newton_stationary``, but for R_L at the prompt length of ``X`` instead of R_inf.
    Newton finds stationary points of every index; the ``eigenvalues`` of the result (of
    the full Hessian, ``empirical_value_grad_hess``) say which. Its ``risk`` is the
    sample's risk.

    With ``directions``, Newton moves only in ``theta0 + span(directions)`` and solves
    for the gradient's component in that span: for a family of configurations that a
    symmetry of the mixture maps to itself (the heads between the centroids, the
    symmetric tilted point), the exact R_L has its stationary point in the family, and a
    finite sample's noise would otherwise push the solution along the nearly flat
    directions that break the symmetry. Without it, Newton moves in every direction and the
    Hessian is kept from step to step while the gradient norm at least halves (the chord
    method), so a start close to the stationary point costs about two Hessians.

    Args:
        theta0: ``(H, d)`` start, for instance a stationary point of R_inf or a trained run.
        X: ``(n, L, d)`` the fixed sample of prompts.
        lam: the inverse temperature, finite and > 0.
        directions: ``(m, H, d)`` the directions Newton may move in, or None (all).
        tol: stop when the gradient norm (in the span, with ``directions``) is below it.
        max_iter: at most this many Newton steps.

    Returns:
        A ``StationaryPoint`` of the sample's risk (check ``grad_norm``: with
        ``directions`` it is the full gradient's norm, which the sample's noise keeps
        above ``tol`` off the span).
    """
    theta0, X, lam = _empirical_args("theta0", theta0, X, lam)
    tol, max_iter = v.positive_finite("tol", tol), v.positive_int("max_iter", max_iter, minimum=0)
    theta0 = np.asarray(theta0, np.float64)
    chunk = _chunk(X.shape[0])
    if directions is None:
        def vgh(t):
            return _empirical_full(t, X, lam)

        def vg(t):
            value, grad, _ = _empirical_terms(jnp.asarray(t, jnp.float32), X, lam,
                                              jnp.zeros((0, *theta0.shape), jnp.float32), chunk)
            return float(value), np.asarray(grad, np.float64)

        theta, it = _solve(vgh, vg, theta0, tol, max_iter)
        return _stationary_point(vgh, theta, it)
    D = np.asarray(v.real_array("directions", directions), np.float64)
    v.shape("directions", D.shape, f"(m, H, d)=(m, {theta0.shape[0]}, {theta0.shape[1]}) with m >= 1",
            D.ndim == 3 and D.shape[1:] == theta0.shape and D.shape[0] >= 1)
    q, _ = np.linalg.qr(D.reshape(D.shape[0], -1).T)  # orthonormal basis (H d, m) of the span
    B = q.T.reshape(-1, *theta0.shape)
    B32 = jnp.asarray(B, jnp.float32)
    flat = B.reshape(B.shape[0], -1)

    def vgh_sub(y):
        t = theta0 + np.tensordot(y, B, axes=1)
        value, grad, hb = _empirical_terms(jnp.asarray(t, jnp.float32), X, lam, B32, chunk)
        g = flat @ np.asarray(grad, np.float64).ravel()
        return float(value), g, np.asarray(hb, np.float64).reshape(len(B), -1) @ flat.T

    y, it = _solve(vgh_sub, None, np.zeros(len(B)), tol, max_iter)
    return _stationary_point(lambda t: _empirical_full(t, X, lam), theta0 + np.tensordot(y, B, axes=1), it)


def _head_terms(theta, z, mixture, lam):
    """phi (n, H) and grad_theta_h phi_h (n, H, d) at queries z (n, d).

    phi_h(z) = s sigma^2 ||theta_h||^2 + sum_c alpha_c m_c, s = lam <theta_h, z>,
    m_c = <theta_h, mu_c>, alpha = softmax(log pi + s m), and
    grad phi_h = lam sigma^2 ||theta_h||^2 z + 2 s sigma^2 theta_h + sum_c alpha_c mu_c
                 + lam Var_alpha(m) z + s Cov_alpha(m, mu).
    """
    sigma2 = mixture.sigma**2
    mu = mixture.centroids  # (K, d)
    m = theta @ mu.T  # (H, K)
    s = lam * (z @ theta.T)  # (n, H)
    alpha = k.softmax_small(mixture.log_weights, m, s)  # (n, H, K)
    sq = jnp.sum(theta**2, axis=-1)  # (H,)
    mean_m = jnp.sum(alpha * m, axis=-1)  # (n, H)
    var_m = jnp.sum(alpha * m**2, axis=-1) - mean_m**2
    mean_mu = alpha @ mu  # (n, H, d)
    cov = (alpha * m) @ mu - mean_m[..., None] * mean_mu  # (n, H, d)
    phi = s * sigma2 * sq + mean_m
    grad_phi = (
        (lam * sigma2 * sq + lam * var_m)[..., None] * z[:, None, :]
        + 2 * (s * sigma2)[..., None] * theta[None]
        + mean_mu
        + s[..., None] * cov
    )
    return phi, grad_phi


def head_gradient(
    theta: Float[ArrayLike, "H d"], z: Float[ArrayLike, "n d"], mixture: GaussianMixture, lam: float | Float[ArrayLike, ""]
) -> np.ndarray:
    """The hand-derived gradient of the large-L risk, averaged over the queries z:

        grad_h = -2 mean_z [ phi_h(z) (z - T(z)) + <theta_h, z - T(z)> grad phi_h(z) ],

    T(z) = sum_h phi_h(z) theta_h. With z drawn from the mixture this is an unbiased
    estimate of grad_{theta_h} R_inf; on the same z it equals ``jax.grad`` of the Monte
    Carlo risk exactly (up to rounding)."""
    theta, z, lam = _queries_args(theta, z, mixture, lam)
    return np.asarray(_head_gradient(theta, z, mixture, jnp.float32(lam)), np.float64)


def _queries_args(theta, z, mixture, lam):
    """Validated (theta (H, d), z (n, d), lam) for a mixture of dimension d."""
    v.instance("mixture", mixture, GaussianMixture)
    theta = v.heads("theta", theta, d=mixture.d, d_from="mixture")
    z = v.real_array("z", z)
    v.shape("z", z.shape, f"(n, d) with n >= 1 and d={mixture.d}", z.ndim == 2 and z.shape[0] >= 1)
    v.same_dim("z", z.shape[1], "mixture", mixture.d)
    return theta, z, v.positive_finite("lam", lam)


@jax.jit
def _head_gradient(theta, z, mixture, lam):
    phi, gphi = _head_terms(theta, z, mixture, lam)
    resid = z - phi @ theta  # (n, d)
    proj = resid @ theta.T  # (n, H): <theta_h, z - T(z)>
    g = phi[..., None] * resid[:, None, :] + proj[..., None] * gphi
    return -2 * jnp.mean(g, axis=0)


def fixed_point_map(
    theta: Float[ArrayLike, "H d"], z: Float[ArrayLike, "n d"], mixture: GaussianMixture, lam: float | Float[ArrayLike, ""]
) -> np.ndarray:
    """The stationarity condition grad_h = 0 solved for theta_h (chapter, fixed-point form):

        theta_h = ( E[phi_h (z - sum_{h' != h} phi_h' theta_h')] + E[<theta_h, z - T> grad phi_h] )
                  / E[phi_h^2],

    expectations replaced by means over the queries z. A stationary point is a fixed
    point of this map (to Monte Carlo accuracy); returns the map's value (H, d)."""
    theta, z, lam = _queries_args(theta, z, mixture, lam)
    return np.asarray(_fixed_point_map(theta, z, mixture, jnp.float32(lam)), np.float64)


@jax.jit
def _fixed_point_map(theta, z, mixture, lam):
    phi, gphi = _head_terms(theta, z, mixture, lam)
    T = phi @ theta
    proj = (z - T) @ theta.T  # (n, H)
    others = T[:, None, :] - phi[..., None] * theta[None]  # (n, H, d): sum_{h' != h}
    num = jnp.mean(phi[..., None] * (z[:, None, :] - others) + proj[..., None] * gphi, axis=0)
    den = jnp.mean(phi**2, axis=0)
    return num / den[:, None]


@partial(jax.jit, static_argnums=(4,))
def _block_gaps(theta, X, mixture, lam, L: int):
    """Per-token d_l (n, Lmax) for prompts X (n, Lmax, d) cut into prompts of L consecutive
    tokens (L divides Lmax): the two-head layer of each cut prompt against the large-L limit
    at the same tokens. One compilation per L."""
    T = k.two_head(theta, X.reshape(-1, L, X.shape[-1]), lam).reshape(X.shape)
    lim = k.head_output_limit(theta, X, mixture, lam)
    return jnp.sum((X - T) ** 2, -1) - jnp.sum((X - lim) ** 2, -1)


def risk_gap(
    key: PRNGKeyArray,
    theta: Float[ArrayLike, "H d"],
    mixture: GaussianMixture,
    lam: float | Float[ArrayLike, ""],
    Ls: list[int] | np.ndarray,
    n_tokens: int = 131_072,
    n_nodes: int = 40,
) -> dict[str, np.ndarray]:
    """R_L - R_inf at each prompt length L, with its standard error.

    Paired estimator: for every token, d_l = ||x_l - T(X)_l||^2 - ||x_l - T_inf(x_l)||^2;
    its mean estimates R_L - E||x - T_inf(x)||^2 = R_L - R_inf exactly (R_inf by
    quadrature is returned beside it), and since T(X)_l is close to T_inf(x_l) its
    variance is far smaller than that of the risk itself. The same ``n_tokens`` tokens
    (rounded to whole prompts of length max(Ls); every L must divide max(Ls)) are cut into
    prompts of each length L; the standard error is over prompts (tokens of one prompt are
    dependent).

    Returns arrays ``L``, ``gap``, ``se``, ``n_prompts`` and the scalar ``r_inf``.
    """
    key = v.prng_key("key", key)
    v.instance("mixture", mixture, GaussianMixture)
    theta = v.heads("theta", theta, d=mixture.d, d_from="mixture")
    lam = v.positive_finite("lam", lam)
    Ls = v.lengths("Ls", Ls)
    Lmax = int(Ls.max())
    n_tokens = v.positive_int("n_tokens", n_tokens)
    r_inf = float(population_risk(theta, mixture, lam, n_nodes))
    n = max(2, int(n_tokens) // Lmax)
    X, _ = sample(key, mixture, n, Lmax)
    gaps, ses, ns = [], [], []
    for L in Ls:
        dl = np.asarray(_block_gaps(theta, X, mixture, jnp.float32(lam), int(L)), np.float64)
        per_prompt = dl.reshape(-1, int(L)).mean(axis=-1)
        gaps.append(per_prompt.mean())
        ses.append(per_prompt.std(ddof=1) / np.sqrt(per_prompt.size))
        ns.append(per_prompt.size)
    return {"L": Ls, "gap": np.array(gaps), "se": np.array(ses),
            "n_prompts": np.array(ns), "r_inf": r_inf}


def loglog_slope(x: np.ndarray, y: np.ndarray, se: np.ndarray | None = None) -> tuple[float, float]:
    """Slope of ``log |y|`` against ``log x`` by weighted least squares (weights from the
    standard errors of y, propagated to log: ``se / |y|``); returns (slope, standard error
    of slope)."""
    x, y = np.asarray(x, float), np.abs(np.asarray(y, float))
    lx, ly = np.log(x), np.log(y)
    w = np.ones_like(lx) if se is None else (y / np.asarray(se, float)) ** 2
    A = np.stack([lx, np.ones_like(lx)], axis=1)
    W = np.diag(w)
    cov = np.linalg.inv(A.T @ W @ A)
    beta = cov @ A.T @ W @ ly
    resid = ly - A @ beta
    dof = max(len(x) - 2, 1)
    scale = max(float(resid @ W @ resid) / dof, 1.0) if se is not None else float(resid @ resid) / dof
    return float(beta[0]), float(np.sqrt(cov[0, 0] * scale))


@jax.jit
def _risk_and_grad(theta, mixture, lam):
    return jax.value_and_grad(lambda t: population_risk(t, mixture, lam))(theta)


def risk_and_grad(
    theta: Float[ArrayLike, "H d"], mixture: GaussianMixture, lam: float | Float[ArrayLike, ""]
) -> tuple[Float[Array, ""], Float[Array, "H d"]]:
    """R_inf(theta) and its gradient (H, d) (``population_risk`` and ``jax.grad`` of it, one
    compilation per mixture shape): the large-L risk and its slope at a point, for instance
    a trained theta (chapter "Beyond the paper")."""
    v.instance("mixture", mixture, GaussianMixture)
    theta = v.heads("theta", theta, d=mixture.d, d_from="mixture")
    lam = v.positive_finite("lam", lam)
    value, grad = _risk_and_grad(theta, mixture, jnp.float32(lam))
    return v.finite_result(value, "theta or lam is"), grad


def large_L_minimiser(
    theta0: Float[ArrayLike, "H d"], mixture: GaussianMixture, lam: float | Float[ArrayLike, ""] = DEFAULT.lam, tol: float = 1e-6
) -> tuple[np.ndarray, float]:
    """Local minimiser of the large-L risk ``ac.population_risk`` (quadrature, isotropic
    mixtures only) reached by BFGS from ``theta0`` (e.g. a trained theta): (theta, R_inf).
    Compares a finite-L training result with the large-L answer for the same mixture.

    The risk is evaluated in float32, so near a flat stretch BFGS's line search can find no
    decrease that float32 resolves and stop early ("precision loss") with the gradient still
    above ``tol``; where that stop went somewhere, BFGS restarts from it with a fresh Hessian
    estimate (at most ``_BFGS_RESTARTS`` times). Without the restarts, whether the K = 3
    rotated minimiser is reached from a small turn of the symmetric point depended on how
    XLA happened to round the risk."""
    from scipy.optimize import minimize

    lam = v.positive_finite("lam", lam)
    v.instance("mixture", mixture, GaussianMixture)
    v.heads("theta0", theta0, d=mixture.d, d_from="mixture")
    tol = v.positive_finite("tol", tol)
    theta0 = np.asarray(theta0, np.float64)  # BFGS runs in float64 from the exact start
    shape = theta0.shape

    def fun(x):
        val, grad = _risk_and_grad(jnp.asarray(x.reshape(shape), jnp.float32), mixture, float(lam))
        return float(val), np.asarray(grad, np.float64).reshape(-1)

    x = theta0.reshape(-1)
    for _ in range(1 + _BFGS_RESTARTS):
        res = minimize(fun, x, jac=True, method="BFGS", options={"gtol": tol, "maxiter": 500})
        moved, x = not np.array_equal(res.x, x), res.x
        if res.success or res.status != _PRECISION_LOSS or not moved:
            break
    return x.reshape(shape), float(res.fun)


_BFGS_RESTARTS = 10
_PRECISION_LOSS = 2  # scipy's BFGS status: "Desired error not necessarily achieved due to precision loss"

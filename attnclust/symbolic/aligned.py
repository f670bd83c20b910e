"""The two-head layer's large-L risk near the aligned heads (chapter "The two-head layer and
its population risk", chapters/population_risk.md): the reduction to the aligned manifold
theta_h = kappa e_h (prop-aligned), its fixed point kappa*(lambda), the gradient that leaves
the manifold and its two mechanisms (sec-risk-tilt), and the tilted minimiser.

The chapter derives each formula in its own cells; this module keeps what figures, other
chapters and the tests reuse: the symbolic integrands (built from the general head
coefficient, :func:`attnclust.symbolic.head_coefficient_expr`), their 2-D Gauss-Hermite
expectations, and the solvers. The head scale kappa of the book is ``c`` in the code.

Mixture settings (``setting``), all with noise sigma and the heads in span(e_1, e_2):

* ``default``: K = 2, pi = (1/2, 1/2), mu_1 = r e_1, mu_2 = r e_2;
  theta_1 = (c_1, eps_1), theta_2 = (eps_2, c_2).
* ``antipodal``: the default mixture centred by its mean (r/2)(e_1 + e_2) and rotated so
  that mu_1 = -mu_2 = rho e_1, rho = r / sqrt(2) (the same ||mu_1 - mu_2||); both
  centroids on the line e_1: theta_1 = (c_1, eps_1), theta_2 = (c_2, eps_2).
* ``plusminus``: K = 4, pi_c = 1/4, centroids +-r e_1, +-r e_2 (mean zero, H = 2 heads with
  orthogonal targets): theta_1 = (c_1, eps_1), theta_2 = (eps_2, c_2).

The d - 2 coordinates of z outside the plane are N(0, sigma^2) noise orthogonal to every
theta_h and mu_c: they add exactly (d - 2) sigma^2 to the risk.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import sympy as sp
from scipy import optimize

from .. import _validate as v
from ._common import gauss_hermite, head_coefficient_expr, lambdify_expr, logistic
from ..setting import DEFAULT

Setting = Literal["default", "antipodal", "plusminus"]


@functools.lru_cache(maxsize=None)
def _setting_exprs(setting: Setting) -> dict[str, object]:
    """Symbolic 2-D risk integrand ||z - T_inf(z)||^2 (in the plane) of a mixture setting,
    with the aligned manifold parametrised by (c_1, c_2) and the perturbations (eps_1, eps_2)
    off it; derivatives at the symmetric aligned point c_1 = c_2 = c, eps = 0."""
    z1, z2 = sp.symbols("z_1 z_2", real=True)
    c1, c2 = sp.symbols("c_1 c_2", real=True)
    e1, e2 = sp.symbols("epsilon_1 epsilon_2", real=True)
    lam, r, sigma = sp.symbols("lambda r sigma", positive=True)
    z = [z1, z2]
    v.one_of("setting", setting, ("default", "antipodal", "plusminus"))
    if setting == "default":
        mus = [[r, 0], [0, r]]
        weights = [sp.Rational(1, 2)] * 2
        thetas = [[c1, e1], [e2, c2]]
    elif setting == "antipodal":
        rho = r / sp.sqrt(2)
        mus = [[rho, 0], [-rho, 0]]
        weights = [sp.Rational(1, 2)] * 2
        thetas = [[c1, e1], [c2, e2]]
    else:  # "plusminus"
        mus = [[r, 0], [-r, 0], [0, r], [0, -r]]
        weights = [sp.Rational(1, 4)] * 4
        thetas = [[c1, e1], [e2, c2]]
    out = [0, 0]
    for th in thetas:
        coef = head_coefficient_expr(th, z, mus, weights, lam, sigma)
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
        "d_e1": d_e1,
        "integrand_fn": lambdify_expr(full_args, integrand),
        "grad_fn": lambdify_expr(full_args, [sp.diff(integrand, v) for v in (c1, c2, e1, e2)]),
        "risk_on_fn": lambdify_expr(args, risk_on),
        "d_c1_fn": lambdify_expr(args, d_c1),
        "d_e1_fn": lambdify_expr(args, d_e1),
    }


def _expect2_components(setting: Setting, fn: Callable, r: float, sigma: float, n: int,
                        *params: float | np.ndarray) -> list:
    """E_{z ~ N(mu_c, sigma^2 I_2)} fn(z_1, z_2, *params) for each component c, by tensor
    Gauss-Hermite; ``params`` broadcast against the nodes (a grid of values)."""
    S = _setting_exprs(setting)
    x, w = gauss_hermite(n)
    X1, X2 = np.meshgrid(x, x, indexing="ij")
    W = np.outer(w, w)
    out = []
    for mu in S["mus"]:
        m1 = float(sp.sympify(mu[0]).subs(S["symbols"]["r"], r))
        m2 = float(sp.sympify(mu[1]).subs(S["symbols"]["r"], r))
        val = fn(m1 + sigma * X1, m2 + sigma * X2, *params)
        out.append(np.tensordot(W, np.asarray(val, float), axes=([0, 1], [-2, -1])))
    return out


def _expect2(setting: Setting, fn: Callable, r: float, sigma: float, n: int, *params: float | np.ndarray):
    """sum_c pi_c E_{z ~ N(mu_c, sigma^2 I_2)} fn(z_1, z_2, *params) (see
    :func:`_expect2_components`)."""
    weights = _setting_exprs(setting)["weights"]
    parts = _expect2_components(setting, fn, r, sigma, n, *params)
    return sum(float(pi) * p for pi, p in zip(weights, parts))


@dataclass(frozen=True)
class AlignedReduction:
    """Results of :func:`aligned_reduction` (prop-aligned, chapters/population_risk.md;
    default mixture).

    Attributes:
        symbols: the SymPy symbols by name (u, c, lambda, r, sigma and those of the 2-D
            integrand).
        f: the scalar head map f(u; c) = lam sigma^2 c^4 u + r c^2 logistic(lam r c^2 u).
        g_integrand: (u - f(u; c))^2.
        dg_integrand: its c-derivative.
        d2g_integrand: its second c-derivative.
        f_fn: ``f`` lambdified, arguments (u, c, lam, r, sigma).
        g_fn: ``g_integrand`` lambdified, the same arguments.
        dg_fn: ``dg_integrand`` lambdified, the same arguments.
        d2g_fn: ``d2g_integrand`` lambdified, the same arguments.
    """

    symbols: dict[str, sp.Symbol]
    f: sp.Expr
    g_integrand: sp.Expr
    dg_integrand: sp.Expr
    d2g_integrand: sp.Expr
    f_fn: Callable
    g_fn: Callable
    dg_fn: Callable
    d2g_fn: Callable


@functools.lru_cache(maxsize=None)
def aligned_reduction() -> AlignedReduction:
    """The large-L risk on the aligned manifold theta_h = c e_h, default mixture
    (prop-aligned, chapters/population_risk.md).

    Head 1 sees <theta_1, mu_1> = c r, <theta_1, mu_2> = 0 and the tilt t_1 = lam c z_1, so
    T_1(z) = f(z_1; c) e_1 with f(u; c) = lam sigma^2 c^4 u + r c^2 logistic(lam r c^2 u),
    and R_inf = g(c_1) + g(c_2) + (d - 2) sigma^2 with
    g(c) = 1/2 E_{u ~ N(r, sigma^2)} (u - f)^2 + 1/2 E_{u ~ N(0, sigma^2)} (u - f)^2.
    f depends on c only through c^2 (the layer ignores the sign of a head).

    Returns:
        The :class:`AlignedReduction`.
    """
    sy = _setting_exprs("default")["symbols"]
    lam, r, sigma, c = sy["lambda"], sy["r"], sy["sigma"], sy["c"]
    u = sp.Symbol("u", real=True)
    f = lam * sigma**2 * c**4 * u + r * c**2 * logistic(lam * r * c**2 * u)
    g_int = (u - f) ** 2
    dg = sp.diff(g_int, c)
    d2g = sp.diff(dg, c)
    args = (u, c, lam, r, sigma)
    return AlignedReduction(
        symbols={**sy, "u": u},
        f=f,
        g_integrand=g_int,
        dg_integrand=dg,
        d2g_integrand=d2g,
        f_fn=lambdify_expr(args, f),
        g_fn=lambdify_expr(args, g_int),
        dg_fn=lambdify_expr(args, dg),
        d2g_fn=lambdify_expr(args, d2g),
    )


def _expect_g(fn: Callable, c: float | np.ndarray, lam: float, r: float, sigma: float, n: int):
    """1/2 E_{N(r, sigma^2)} fn + 1/2 E_{N(0, sigma^2)} fn by Gauss-Hermite; c may be an array."""
    x, w = gauss_hermite(n)
    cc = np.asarray(c, float)[..., None]
    a = fn(r + sigma * x, cc, lam, r, sigma)
    b = fn(sigma * x, cc, lam, r, sigma)
    return 0.5 * (np.asarray(a) * w).sum(-1) + 0.5 * (np.asarray(b) * w).sum(-1)


def aligned_risk(
    c1: float, c2: float, lam: float, r: float, sigma: float, d: int = DEFAULT.d, n: int = 80
) -> float:
    """R_inf(c_1 e_1, c_2 e_2) = g(c_1) + g(c_2) + (d - 2) sigma^2, default mixture
    (prop-aligned, chapters/population_risk.md), by Gauss-Hermite with n nodes.

    Args:
        c1, c2: the head scales.
        lam, r, sigma: inverse temperature, centroid norm and noise, > 0.
        d: the dimension.
        n: quadrature nodes.

    Returns:
        The risk.
    """
    A = aligned_reduction()
    return float(
        _expect_g(A.g_fn, c1, lam, r, sigma, n) + _expect_g(A.g_fn, c2, lam, r, sigma, n)
        + (d - 2) * sigma**2
    )


def aligned_risk_grad(c: float, lam: float, r: float, sigma: float, n: int = 80) -> float:
    """dR_inf/dc_1 at theta_h = c e_h, that is g'(c) (the symbolic derivative of
    :func:`aligned_reduction`, by quadrature).

    Args:
        c: the head scale.
        lam, r, sigma: inverse temperature, centroid norm and noise, > 0.
        n: quadrature nodes.

    Returns:
        g'(c).
    """
    return float(_expect_g(aligned_reduction().dg_fn, c, lam, r, sigma, n))


_SCAN_START, _SCAN_POINTS = 0.02, 400   # the grid of aligned_fixed_point's scan of g'


@dataclass(frozen=True)
class AlignedFixedPoint:
    """The aligned fixed point of :func:`aligned_fixed_point`.

    Attributes:
        c: kappa*, the minimiser of g on c > 0.
        risk: R_inf(c e_1, c e_2), (d - 2) sigma^2 included.
        roots: every stationary point with c > 0 found on the scan (c = 0 is always
            stationary too, since f depends on c^2).
        curvature: g''(c).
        scan: the scan of g' that found the roots, ``(first c, last c, points)``; a root
            outside it is not looked for.
    """

    c: float
    risk: float
    roots: tuple[float, ...]
    curvature: float
    scan: tuple[float, float, int]


def aligned_fixed_point(
    lam: float, r: float, sigma: float, d: int = DEFAULT.d, n: int = 80, c_max: float = 4.0
) -> AlignedFixedPoint:
    """Solve g'(c) = 0 on the aligned manifold, c > 0 (prop-aligned,
    chapters/population_risk.md).

    Scans g' on a grid of (0, c_max], brackets every sign change and refines it with
    ``scipy.optimize.brentq``; returns the root of lowest g.

    Args:
        lam, r, sigma: inverse temperature, centroid norm and noise, > 0.
        d: the dimension (enters the risk only).
        n: quadrature nodes.
        c_max: the end of the scan.

    Returns:
        The :class:`AlignedFixedPoint`.

    Raises:
        ValueError: lam, r or sigma not positive, or no stationary point with c > 0.
    """
    lam, r, sigma = v.positive_reals(lam=lam, r=r, sigma=sigma)
    A = aligned_reduction()
    grid = np.linspace(_SCAN_START, c_max, _SCAN_POINTS)
    dg = _expect_g(A.dg_fn, grid, lam, r, sigma, n)
    roots = []
    for i in np.nonzero(np.sign(dg[:-1]) * np.sign(dg[1:]) < 0)[0]:
        roots.append(optimize.brentq(
            lambda cc: float(_expect_g(A.dg_fn, cc, lam, r, sigma, n)),
            grid[i], grid[i + 1], xtol=1e-14, rtol=1e-13))
    if not roots:
        raise ValueError(f"no aligned stationary point in (0, {c_max}] for lam={lam}, r={r}, sigma={sigma}")
    gs = [float(_expect_g(A.g_fn, cc, lam, r, sigma, n)) for cc in roots]
    best = roots[int(np.argmin(gs))]
    return AlignedFixedPoint(
        c=float(best),
        risk=float(2 * min(gs) + (d - 2) * sigma**2),
        roots=tuple(float(x) for x in roots),
        curvature=float(_expect_g(A.d2g_fn, best, lam, r, sigma, n)),
        scan=(float(grid[0]), float(grid[-1]), int(grid.size)),
    )


def aligned_branch(
    lams: Sequence[float] | np.ndarray, r: float, sigma: float, d: int = DEFAULT.d, n: int = 80
) -> dict[str, np.ndarray]:
    """The branch kappa*(lam) and R_inf there over a grid of lam (prop-aligned,
    chapters/population_risk.md).

    Args:
        lams: inverse temperatures, > 0.
        r, sigma: centroid norm and noise, > 0.
        d: the dimension.
        n: quadrature nodes.

    Returns:
        Arrays ``lam``, ``c`` (kappa*), ``risk`` and ``n_roots`` (stationary points with
        c > 0 found by the scan).
    """
    lams = np.asarray(lams, float)
    fps = [aligned_fixed_point(float(lam), r, sigma, d=d, n=n) for lam in lams]
    return {"lam": lams, "c": np.array([f.c for f in fps]), "risk": np.array([f.risk for f in fps]),
            "n_roots": np.array([len(f.roots) for f in fps])}


def setting_fixed_point(setting: Setting, lam: float, r: float, sigma: float, n: int = 60) -> float:
    """The symmetric aligned fixed point (dR_inf/dc_1 = 0 at c_1 = c_2 = c) of a mixture
    setting (module docstring), by 2-D quadrature; the root of lowest risk.

    Args:
        setting: "default", "antipodal" or "plusminus".
        lam, r, sigma: inverse temperature, centroid norm and noise, > 0.
        n: quadrature nodes per dimension.

    Returns:
        c.

    Raises:
        ValueError: an unknown setting, or no stationary point in (0, 4].
    """
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
    """dR_inf/d eps_1 at theta_1 = c e_1 + eps_1 e_2, theta_2 on the manifold, eps_1 = 0
    (sec-risk-tilt, chapters/population_risk.md), by 2-D Gauss-Hermite of the symbolic
    derivative.

    A positive value means the risk decreases when theta_1 turns away from the other
    centroid (towards -e_2).

    Args:
        lam, r, sigma: inverse temperature, centroid norm and noise, > 0.
        setting: the mixture (module docstring).
        c: the head scale; default the setting's aligned fixed point.
        n: quadrature nodes per dimension.

    Returns:
        The derivative.
    """
    lam, r, sigma = v.positive_reals(lam=lam, r=r, sigma=sigma)
    if c is None:
        c = setting_fixed_point(setting, lam, r, sigma, n)
    S = _setting_exprs(setting)
    return float(_expect2(setting, S["d_e1_fn"], r, sigma, n, c, lam, r, sigma))


@functools.lru_cache(maxsize=None)
def _tilt_terms() -> tuple[Callable, Callable]:
    """The two terms of the eps_1-derivative of the default integrand at eps = 0:
    the coefficient term -2 (z_1 - f(z_1)) c d phi_1/d eps (head 1's coefficient changes)
    and the direction term -2 (z_2 - f(z_2)) phi_1 (head 1's output turns into e_2)."""
    S = _setting_exprs("default")
    sy = S["symbols"]
    z1, z2, c, lam, r, sigma, e1 = (sy[k] for k in ("z_1", "z_2", "c", "lambda", "r", "sigma", "epsilon_1"))
    phi1 = head_coefficient_expr([c, e1], [z1, z2], S["mus"], S["weights"], lam, sigma)
    f = aligned_reduction().f.subs(aligned_reduction().symbols["u"], z1)
    f2 = f.subs(z1, z2)
    coefficient = -2 * (z1 - f) * c * sp.diff(phi1, e1).subs(e1, 0)
    direction = -2 * (z2 - f2) * phi1.subs(e1, 0)
    args = (z1, z2, c, lam, r, sigma)
    return lambdify_expr(args, coefficient), lambdify_expr(args, direction)


def tilt_decomposition(
    lam: float, r: float, sigma: float, c: float | None = None, n: int = 60
) -> dict[str, np.ndarray | float]:
    """The tilt gradient of the default mixture split into its two mechanisms and by the
    cluster of the token (sec-risk-tilt, chapters/population_risk.md).

    With theta_1 = c e_1 + eps e_2 and T_1 = phi_1 theta_1, the eps-derivative of
    ||z - T(z)||^2 at eps = 0 is the *coefficient term* -2 (z_1 - T_1) c d phi_1/d eps (head
    1's coefficient changes; on cluster 2, where head 1 is inactive, turning away lowers its
    offset, through its tilt parameter there and through its projection of mu_2) plus the *direction term* -2 (z_2 - T_2) phi_1 (head 1's output
    turns into e_2; on cluster 1, where head 1 is active, it cancels head 2's offset along
    e_2).

    Args:
        lam, r, sigma: inverse temperature, centroid norm and noise, > 0.
        c: the head scale; default the aligned fixed point kappa*.
        n: quadrature nodes per dimension.

    Returns:
        ``coefficient`` and ``direction``: (2,) arrays, pi_c times the expectation over
        cluster c (they sum to the gradient); ``total``: their sum, the tilt gradient;
        ``offset``: E over cluster 2 of head 1's output along e_1; ``offset_untilted``:
        c <theta_1, mean> = c^2 r / 2, what head 1 outputs at tilt 0; ``c``.
    """
    lam, r, sigma = v.positive_reals(lam=lam, r=r, sigma=sigma)
    if c is None:
        c = aligned_fixed_point(lam, r, sigma, n=80).c
    coef_fn, dir_fn = _tilt_terms()
    coefficient = 0.5 * np.array(_expect2_components("default", coef_fn, r, sigma, n, c, lam, r, sigma))
    direction = 0.5 * np.array(_expect2_components("default", dir_fn, r, sigma, n, c, lam, r, sigma))
    x, w = gauss_hermite(n)
    A = aligned_reduction()
    offset = float(np.sum(w * A.f_fn(sigma * x, c, lam, r, sigma)))  # z_1 ~ N(0, sigma^2)
    return {"coefficient": coefficient, "direction": direction,
            "total": float(coefficient.sum() + direction.sum()),
            "offset": offset, "offset_untilted": float(c**2 * r / 2), "c": float(c)}


@dataclass(frozen=True)
class TiltedMinimiser:
    """The large-L minimiser over the symmetric family theta_1 = (c, eps),
    theta_2 = (eps, c) of the default mixture (:func:`tilted_minimiser`).

    Attributes:
        c: the coordinate of theta_1 along its own centroid.
        eps: its coordinate along the other centroid (< 0: turned away).
        cos: ``|cos(theta_1, mu_1)|``.
        risk: R_inf there, (d - 2) sigma^2 included.
        aligned_risk: R_inf at the aligned fixed point, for comparison.
    """

    c: float
    eps: float
    cos: float
    risk: float
    aligned_risk: float


def tilted_minimiser(
    lam: float, r: float, sigma: float, d: int = DEFAULT.d, n: int = 40
) -> TiltedMinimiser:
    """The large-L minimiser off the aligned manifold, default mixture (sec-risk-tilt,
    chapters/population_risk.md).

    Minimises the 2-D quadrature risk over (c, eps) with theta_1 = c e_1 + eps e_2,
    theta_2 = eps e_1 + c e_2 (the family is invariant under swapping the coordinates, as
    the default mixture is) by BFGS with the symbolic gradient, from the aligned fixed point.

    Args:
        lam, r, sigma: inverse temperature, centroid norm and noise, > 0.
        d: the dimension (enters the risk only).
        n: quadrature nodes per dimension.

    Returns:
        The :class:`TiltedMinimiser`.
    """
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
    lams: Sequence[float] | np.ndarray, r: float, sigma: float, d: int = DEFAULT.d, n: int = 40
) -> dict[str, np.ndarray]:
    """The tilt over a grid of lam (sec-risk-tilt, chapters/population_risk.md).

    Args:
        lams: inverse temperatures, > 0.
        r, sigma: centroid norm and noise, > 0.
        d: the dimension.
        n: quadrature nodes per dimension.

    Returns:
        Arrays ``lam``; ``c_aligned`` (kappa*) and ``tilt_gradient`` there; the tilted
        minimiser's ``c``, ``eps``, ``cos`` and ``risk``; ``aligned_risk``.
    """
    rows = {k: [] for k in ("c_aligned", "tilt_gradient", "c", "eps", "cos", "risk", "aligned_risk")}
    for lam in np.asarray(lams, float):
        tm = tilted_minimiser(float(lam), r, sigma, d=d, n=n)
        fp = aligned_fixed_point(float(lam), r, sigma, d=d)
        rows["c_aligned"].append(fp.c)
        rows["tilt_gradient"].append(tilt_gradient(float(lam), r, sigma, c=fp.c, n=n))
        for k in ("c", "eps", "cos", "risk", "aligned_risk"):
            rows[k].append(getattr(tm, k))
    return {"lam": np.asarray(lams, float), **{k: np.array(v) for k, v in rows.items()}}

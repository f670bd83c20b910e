"""Helpers shared by the sections of ``attnclust.symbolic``: the unevaluated logistic
function, lambdify with a stable logistic, Gauss-Hermite nodes for a standard normal, and
the symbolic head coefficient phi_h of the large-L limit (chapter "Attention as soft
pooling", chapters/attention.md, prop-head-limit)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import sympy as sp
from numpy.polynomial.hermite import hermgauss
from scipy.special import expit

from .. import _validate as v


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

    def _eval_evalf(self, prec: int) -> sp.Expr | None:
        # numeric arguments evaluate (float(logistic(0.3)) works); symbolic ones stay
        if self.args[0].is_number:
            return (1 / (1 + sp.exp(-self.args[0])))._eval_evalf(prec)
        return None

    def _latex(self, printer: sp.printing.latex.LatexPrinter, exp: str | None = None) -> str:
        tex = r"\operatorname{logistic}\left(%s\right)" % printer._print(self.args[0])
        return tex if exp is None else r"%s^{%s}" % (tex, exp)


def lambdify_expr(
    args: Sequence[sp.Symbol], expr: sp.Expr | Sequence[sp.Expr], backend: Literal["numpy", "jax"] = "numpy"
) -> Callable:
    """Lambdify an expression of this package (``logistic`` included) for NumPy or JAX.

    With ``backend="jax"`` the function is jit-able and differentiable by ``jax.grad``.

    Args:
        args: the symbols, in the order of the function's arguments.
        expr: one expression or a sequence of them.
        backend: "numpy" (``logistic`` as ``scipy.special.expit``) or "jax"
            (``jax.nn.sigmoid``).

    Returns:
        The function.

    Raises:
        ValueError: an unknown backend.
    """
    v.one_of("backend", backend, ("numpy", "jax"))
    if backend == "numpy":
        return sp.lambdify(args, expr, modules=[{"logistic": expit}, "numpy"])
    import jax

    return sp.lambdify(args, expr, modules=[{"logistic": jax.nn.sigmoid}, "jax"])


@functools.lru_cache(maxsize=None)
def gauss_hermite(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes x_i and weights w_i with E g(Z) ~= sum_i w_i g(x_i) for Z ~ N(0, 1).

    ``numpy.polynomial.hermite.hermgauss`` rescaled to the standard normal; exact for
    polynomials of degree < 2n, and geometrically convergent for the smooth
    (logistic-type) integrands of the book.

    Args:
        n: the number of nodes, >= 1.

    Returns:
        (x, w), two arrays of shape (n,).
    """
    x, w = hermgauss(int(n))
    return np.sqrt(2.0) * x, w / np.sqrt(np.pi)


def _dot(a: Sequence[sp.Expr | float], b: Sequence[sp.Expr | float]) -> sp.Expr:
    return sp.Add(*[ai * bi for ai, bi in zip(a, b)])


def softmax_exprs(logits: Sequence[sp.Expr]) -> list[sp.Expr]:
    """The softmax of symbolic logits: written with ``logistic`` for two logits (compact,
    stable when lambdified), with exp otherwise.

    Args:
        logits: K >= 1 SymPy expressions.

    Returns:
        K expressions that sum to 1.
    """
    if len(logits) == 2:
        d = sp.expand(logits[0] - logits[1])
        return [logistic(d), logistic(-d)]
    ex = [sp.exp(a) for a in logits]
    tot = sp.Add(*ex)
    return [e / tot for e in ex]


def head_coefficient_expr(
    theta: Sequence[sp.Expr | float],
    z: Sequence[sp.Expr | float],
    mus: Sequence[Sequence[sp.Expr | float]],
    weights: Sequence[sp.Expr | float],
    lam: sp.Expr | float,
    sigma: sp.Expr | float,
) -> sp.Expr:
    """The head coefficient phi_h(z) of prop-head-limit (chapters/attention.md), symbolic.

    phi_h(z) = t_h v_h + sum_c alpha_hc m_hc with the tilt t_h = lam <theta_h, z>, the
    projected centroids m_hc = <theta_h, mu_c>, the projected variance
    v_h = sigma^2 ||theta_h||^2 and the tilted weights
    alpha_h = softmax_c(log pi_c + t_h m_hc).

    Args:
        theta: the d coordinates of theta_h (expressions or numbers).
        z: the d coordinates of the query.
        mus: K centroids of d coordinates each.
        weights: the K weights pi_c.
        lam: the inverse temperature lambda.
        sigma: the noise standard deviation.

    Returns:
        The SymPy expression phi_h(z).
    """
    t = lam * _dot(theta, z)
    m = [_dot(theta, mu) for mu in mus]
    alpha = softmax_exprs([sp.log(w) + t * mc for w, mc in zip(weights, m)])
    return t * sigma**2 * _dot(theta, theta) + sp.Add(*[a * mc for a, mc in zip(alpha, m)])

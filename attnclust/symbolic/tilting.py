"""The Gaussian tilting lemma (chapter "Attention as soft pooling", chapters/attention.md,
lem-tilting), derived with ``sympy.integrate`` once for the pages and tests that reuse it
(chapter "Beyond the paper" builds its unequal-variance lemma from it). The chapter
"Attention as soft pooling" shows the same integrals in its own cells."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp

from ._common import lambdify_expr, logistic


@dataclass(frozen=True)
class TiltingLemma:
    """Results of :func:`tilting_lemma` (lem-tilting, chapters/attention.md).

    ``mgf`` and ``tilted_mean`` are what ``sympy.integrate`` returns for E[e^{tu}] and
    E[u e^{tu}] / E[e^{tu}] with u ~ N(m, s^2) (here ``s`` is the standard deviation of u);
    ``*_closed`` are the closed forms exp(t m + t^2 s^2 / 2) and m + t s^2.
    ``weight_derived`` is the tilted weight of component 1 of a two-component mixture
    pi_1 N(m_1, s^2) + (1 - pi_1) N(m_2, s^2), computed from the MGFs, and ``weight_closed``
    is softmax_1(log pi_c + t m_c) = logistic(log(pi_1 / pi_2) + t (m_1 - m_2)).

    Attributes:
        symbols: the SymPy symbols by name: u, m, t, s, m_1, m_2, pi_1.
        mgf: E[e^{tu}] as integrated.
        mgf_closed: its closed form.
        tilted_mean: E[u e^{tu}] / E[e^{tu}] as integrated.
        tilted_mean_closed: its closed form.
        weight_derived: the tilted weight of component 1, from the MGFs.
        weight_closed: its closed form, with ``logistic``.
        mgf_fn: (t, m, s) -> E e^{tu}, NumPy.
        tilted_mean_fn: (t, m, s) -> m + t s^2, NumPy.
        weight_fn: (t, m_1, m_2, s, pi_1) -> the tilted weight of component 1, NumPy.
    """

    symbols: dict[str, sp.Symbol]
    mgf: sp.Expr
    mgf_closed: sp.Expr
    tilted_mean: sp.Expr
    tilted_mean_closed: sp.Expr
    weight_derived: sp.Expr
    weight_closed: sp.Expr
    mgf_fn: Callable
    tilted_mean_fn: Callable
    weight_fn: Callable


@functools.lru_cache(maxsize=None)
def tilting_lemma() -> TiltingLemma:
    """The Gaussian tilting lemma by ``sympy.integrate`` (lem-tilting, chapters/attention.md).

    For u ~ N(m, s^2): E[e^{tu}] = exp(t m + t^2 s^2 / 2) and
    E[u e^{tu}] / E[e^{tu}] = m + t s^2; for a two-component mixture with a shared s the
    tilted component weights are softmax_c(log pi_c + t m_c), the common factor
    exp(t^2 s^2 / 2) cancelling. Cached: the integrals take about a second.

    Returns:
        The :class:`TiltingLemma`: integrated and closed forms side by side.
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
    M1, M2 = mgf.subs(m, m1), mgf.subs(m, m2)
    weight_derived = sp.simplify(pi1 * M1 / (pi1 * M1 + (1 - pi1) * M2))
    weight_closed = logistic(sp.log(pi1) - sp.log(1 - pi1) + t * (m1 - m2))
    return TiltingLemma(
        symbols={"u": u, "m": m, "t": t, "s": s, "m_1": m1, "m_2": m2, "pi_1": pi1},
        mgf=mgf,
        mgf_closed=mgf_closed,
        tilted_mean=tilted_mean,
        tilted_mean_closed=tilted_mean_closed,
        weight_derived=weight_derived,
        weight_closed=weight_closed,
        mgf_fn=lambdify_expr((t, m, s), mgf_closed),
        tilted_mean_fn=lambdify_expr((t, m, s), tilted_mean_closed),
        weight_fn=lambdify_expr((t, m1, m2, s, pi1), weight_closed),
    )

"""The claims ledger: every claim the book's prose makes, with its setting, its evidence and a
verdict computed from that evidence (the page "Claims and evidence", chapters/claims.md).

A chapter cell states a claim with ``claim``::

    rate = stats.binomial_interval(k, n)
    claims.claim(
        "training-small-start-aligns",
        f"From a small start {k} of {n} seeds end aligned (exact 95% interval for the "
        f"rate {rate.low:.2f} to {rate.high:.2f}).",
        setting=dict(K=2, d=5, L=50, lam=1.0, sigma=0.5, r=2.0, init="small", seeds=n),
        evidence=dict(aligned=k, seeds=n, rate=rate),
        verdict=claims.at_least(rate, 0.5),
    )

and the prose shows it with the role ``{claim}`training-small-start-aligns``` (the book's
Sphinx extension ``_ext/claims_ledger.py``): the sentence appears where the role is, with a
link to its row on the Claims page, which lists every claim of the book with its setting,
evidence and verdict, and the build writes them all to ``claims.json`` beside the HTML.

- The **sentence** is what the reader sees; its numbers come from the cell (an f-string of
  the evidence), never typed by hand.
- The **setting** names the parameters the claim was measured at (L, d, K, lam, sigma, r,
  init, steps, seeds, sample sizes): a property of the large-L risk is stated with
  ``L="inf"``, one of training at L = 50 with ``L=50``.
- The **evidence** holds the measured numbers: plain numbers, ``stats.Interval`` (a
  statistic with its interval) or ``stats.PairedDifference``.
- The **verdict** is computed from the evidence by ``at_least``, ``at_most``, ``close_to``,
  ``excludes``, ``equivalent`` (a "no difference", within a margin stated in advance) or
  ``holds_if`` (``all_of`` joins the verdicts of a sentence that says several
  things): "holds", "approx" (holds approximately; the verdict says by
  how much), "fails" (does not hold) or "open" (the evidence cannot decide, for instance an
  interval that straddles the bound).
- **One rule for "approximately"** (``relaxed``): a claim stated with ``approx=True`` holds
  approximately when it holds once its bound is relaxed by ``RELATIVE_MARGIN`` (10%) of the
  bound's own size on the claim's **scale**, judged by the same standard of evidence as
  "holds" (for a statistic, its whole interval). The scale is the kind of quantity, not a
  margin the claim picks: ``scale="size"`` (the default, for an unbounded quantity such as a
  risk or an eigenvalue) relaxes ``bound`` by 10% of ``|bound|`` (for ``close_to``: its
  tolerance widened by 10% of ``|target|``); ``scale="angle"``, for a cosine or ``|cos|``,
  relaxes the *angle* ``arccos(bound)`` by 10% of itself. A cosine is bounded by 1, so 10% of
  its size would be 10% of nearly everything: ``at_least(c, 0.999, approx=True)`` would
  accept ``|cos| >= 0.899`` (26 degrees), while on the angle scale it accepts 2.8 degrees
  (``|cos| >= 0.9988``) and ``at_least(c, 0.95, approx=True, scale="angle")`` accepts 20.0
  degrees (``|cos| >= 0.940``). No claim picks its own margin; a bound of 0 on the size scale
  (a sign) has none, and neither has a cosine bound of 1 (exact alignment).
- **Margins.** A verdict records how close it is to changing: ``margin_se`` for a statistic
  (standard errors from its bound), ``margin_rel`` for a plain number against a threshold
  (``relative_margin``; ``holds_if`` records it when given ``value`` and ``bound``, and
  ``all_of`` keeps its closest part). ``scripts/claim_margins.py`` lists the close calls.
- A range of measured values is printed with ``span`` ("0.0518 to 0.0523", one value when
  its ends agree), never as "0.052 to 0.052".
- ``expect`` is the verdict the prose is written for ("holds" by default). When the evidence
  gives another verdict, ``claim`` raises ``ClaimError``: the cell fails, and so does the
  build, as for any failing cell. A prose that says something does *not* hold states the
  claim with ``expect="fails"``.
- ``paper`` ties a claim to a claim of the paper (a key of ``PAPER``) and ``bearing`` says how
  it bears on it ("supports", "qualifies" or "contradicts" when it holds): the Claims page
  opens with the table of the paper's claims, each with its setting, the book's evidence at
  the book's settings, and a verdict on the paper's claim computed from them
  (``paper_verdict``).

Outside a Jupyter kernel (tests, scripts) ``claim`` only checks and returns the ``Claim``.

**Replication.** ``make replicate SEED=N`` (``scripts/replicate.py``) runs every chapter again
under another master seed (``attnclust.book.seeds``) with ``record_to(path)`` in force: each
claim then appends its record, verdict included, to ``path`` (one JSON object a line) and a
verdict outside ``expect`` is recorded, not raised, so that the report can say which claims
keep their verdict under the other seed and which flip.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import numpy as np

from attnclust.book import _json
from attnclust.stats import Interval, PairedDifference

__all__ = [
    "BEARINGS", "OUTCOMES", "PAPER", "RELATIVE_MARGIN", "SCALES", "VERDICTS", "Claim", "ClaimError",
    "PaperClaim", "PaperVerdict", "Verdict", "at_least", "all_of", "at_most", "bears_on_paper", "claim",
    "close_to", "equivalent", "excludes", "holds_if", "margin", "margin_in_se", "paper_verdict", "record_to",
    "relative_margin", "relaxed", "span",
]

VERDICTS = ("holds", "approx", "fails", "open")
"""The four verdicts; the Claims page words them as holds, holds approximately, does not
hold and open."""

RELATIVE_MARGIN = 0.1
"""The book's one margin for "holds approximately", as a fraction of the size of the claim's
own bound on the claim's scale (see ``relaxed``)."""

SCALES = ("size", "angle")
"""The scales on which ``RELATIVE_MARGIN`` is measured: "size", the bound's absolute value (an
unbounded quantity); "angle", the angle ``arccos(bound)`` of a cosine bound (a quantity bounded
by 1, where 10% of the bound's size would accept tens of degrees)."""

@dataclass(frozen=True)
class PaperClaim:
    """A claim of the paper, in the book's words, with the setting the paper states it in.

    Attributes:
        statement: what the paper claims.
        setting: the setting of the paper's claim, in words (or, for an extension the book
            tests, that the paper does not make it and what the book changes).
    """

    statement: str
    setting: str


PAPER: dict[str, PaperClaim] = {
    "alignment": PaperClaim(
        "Minimising an unsupervised population risk drives the parameters of a simple "
        "two-head attention layer to align with the centroids of a Gaussian mixture.",
        "The paper's simplified layer (each head a rank-one query-key and value-output "
        "matrix), a mixture of two Gaussian components, its population risk."),
    "quantization": PaperClaim(
        "An attention layer with key, query and value fixed to the identity quantizes the "
        "tokens of a prompt towards their own cluster's centre, in context, with no "
        "trainable parameter.",
        "One attention layer with identity key, query and value and an inverse temperature; prompts "
        "of tokens from a Gaussian mixture whose centroids may change from prompt to prompt."),
    "more-centroids": PaperClaim(
        "With K > 2 centroids and K heads, minimising the risk aligns each head with a "
        "centroid.",
        "Not a claim of the paper (its layer has two heads for two centroids): an extension "
        "the book tests, the paper's alignment claim with more centroids and heads."),
    "more-heads": PaperClaim(
        "With more heads than centroids, minimising the risk still aligns a head with each "
        "centroid.",
        "Not a claim of the paper (its layer has as many heads as centroids): an extension the "
        "book tests, the paper's alignment claim with H > K heads."),
    "other-mixtures": PaperClaim(
        "The alignment persists for unequal weights, unequal or anisotropic variances, "
        "centroids at an angle and centred mixtures.",
        "Not a claim of the paper (its analysis assumes an isotropic mixture): an extension the "
        "book tests, the paper's alignment claim with the mixture changed."),
}
"""The rows of the first table of the Claims page, that is the claims of the paper by
Maulen-Soto, Boyer and Marion (2025) in the book's words, with the paper's setting, and the
extensions of them that the book tests. A claim of the book with ``paper=key`` bears on that row, in the
way its ``bearing`` says (``BEARINGS``), and ``paper_verdict`` judges the paper's claim from
all of them. Add a row here for each further claim of the paper the book tests, and for each
extension of it (its setting says "Not a claim of the paper")."""

BEARINGS = ("supports", "qualifies", "contradicts")
"""How a claim of the book bears on the paper's claim it names, when the book's claim holds:
"supports" (it is evidence for the paper's claim at the book's setting), "qualifies" (the
paper's claim holds there only with a qualification the book's claim states, for instance
"aligned up to a tilt"), "contradicts" (it is evidence against). When the book's claim does
not hold, a supporting claim becomes evidence against the paper's claim, a contradicting one
evidence for it, and a qualification falls away (``bears_on_paper``)."""

OUTCOMES = ("supported", "qualified", "contradicted", "open")
"""What one claim of the book says of the paper's claim at its setting (``bears_on_paper``)."""

ID_PATTERN = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
"""Claim ids: lowercase words and digits joined by hyphens ("training-small-start-aligns")."""


class ClaimError(AssertionError):
    """A claim's evidence does not support the verdict its prose is written for."""


@dataclass(frozen=True)
class Verdict:
    """What the evidence says of a claim.

    Attributes:
        kind: one of ``VERDICTS``.
        detail: why, or by how much (for "approx", "fails" and "open").
        margin_se: for a verdict on a statistic, how far its estimate is from the bound the
            verdict was decided against, in standard errors (``margin_in_se``): positive on the
            claimed side. A small value (below about 2) marks a verdict that more samples could
            change. None for a verdict on a plain number or a fact.
        margin_rel: for a verdict on a plain number against a threshold, how far the number is
            from it as a fraction of the threshold's size on the claim's scale
            (``relative_margin``), positive on the claimed side: a small value marks a claim
            that holds, or fails, by a hair at its setting. None where there is no threshold.
        against: the comparison ``margin_rel`` measures, in words ("0.9512 >= 0.95").
    """

    kind: str
    detail: str = ""
    margin_se: float | None = None
    margin_rel: float | None = None
    against: str = ""

    def __post_init__(self):
        if self.kind not in VERDICTS:
            raise ValueError(f"kind must be one of {VERDICTS}, got kind={self.kind!r}")
        if not isinstance(self.detail, str):
            raise TypeError(f"detail must be a string, got detail={self.detail!r}")
        for name in ("margin_se", "margin_rel"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _number(name, getattr(self, name)))
        if not isinstance(self.against, str):
            raise TypeError(f"against must be a string, got against={self.against!r}")


Number = Union[int, float, np.integer, np.floating]
Value = Union[Number, Interval]


def _number(name: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {name}={value!r}")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} must not be NaN")
    return value


def _tolerance(name: str, value: Any) -> float:
    value = _number(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {name}={value!r}")
    return value


def _g(x: float) -> str:
    return f"{x:.4g}"


def margin_in_se(value: Interval, bound: float, side: int) -> float:
    """How far ``value.estimate`` is from ``bound``, in standard errors, positive on ``side``
    (+1: the claim is ``estimate >= bound``; -1: ``estimate <= bound``).

    The standard error is read off the interval: its half-width on the side of the bound
    (the estimate to the end facing the bound) over the normal quantile of its level, so for
    an asymmetric interval (an exact binomial one) it is the spread that decides the verdict;
    where that half is empty (an estimate at the end of its interval) the whole width over
    twice the quantile is used. An approximation for a non-normal statistic: it ranks how
    close a verdict is to changing, it is not a test.
    """
    from scipy.stats import norm

    if not isinstance(value, Interval):
        raise TypeError(f"value must be an Interval, got value={value!r}")
    bound = _number("bound", bound)
    if side not in (1, -1):
        raise ValueError(f"side must be +1 or -1, got side={side!r}")
    q = float(norm.ppf(0.5 + value.level / 2))
    half = value.estimate - value.low if side > 0 else value.high - value.estimate
    se = half / q if half > 0 else (value.high - value.low) / (2 * q)
    gap = side * (value.estimate - bound)
    if se <= 0:
        return math.copysign(math.inf, gap) if gap else 0.0
    return gap / se


def _finite(x: float | None) -> float | None:
    """``x`` for the JSON record: None for an infinite margin (an interval of width 0)."""
    return x if x is not None and math.isfinite(x) else None


def _with_margin(verdict: Verdict, margin_se: float) -> Verdict:
    return Verdict(verdict.kind, verdict.detail, margin_se, verdict.margin_rel, verdict.against)


def relative_margin(value: float, bound: float, side: int = 1, scale: str = "size") -> float | None:
    """How far the plain number ``value`` is from ``bound``, as a fraction of the bound's size
    on ``scale``, positive on ``side`` (+1: the claim is ``value >= bound``; -1:
    ``value <= bound``).

    On the "size" scale it is ``side * (value - bound) / |bound|`` (None for a bound of 0, a
    sign, which has no size); on the "angle" scale (cosines) it is measured on the angles,
    ``side * (arccos(bound) - arccos(value)) / arccos(bound)`` (None for a bound of 1, which
    has angle 0). It is the ledger's ``RELATIVE_MARGIN`` rule read backwards: a value of -0.1
    is a claim that holds approximately by the whole margin.
    """
    value, bound = _number("value", value), _number("bound", bound)
    if side not in (1, -1):
        raise ValueError(f"side must be +1 or -1, got side={side!r}")
    if _scale(scale) == "size":
        return side * (value - bound) / abs(bound) if bound else None
    if not (-1.0 <= bound <= 1.0 and -1.0 <= value <= 1.0):
        raise ValueError(f"on the angle scale value and bound must be cosines in [-1, 1], "
                         f"got value={value!r}, bound={bound!r}")
    a = math.acos(bound)
    return side * (a - math.acos(value)) / a if a > 0 else None


def _against(value: float, bound: float, side: int, scale: str) -> str:
    return f"{_g(value)} {'>=' if side > 0 else '<='} {_g(bound)}{_on(scale)}"


def span(low: float, high: float, digits: int = 3) -> str:
    """The range ``low`` to ``high`` as a sentence prints it: "0.051 to 0.054" with ``digits``
    decimals, up to two more where the two ends would print the same ("0.0518 to 0.0523"), and
    a single value where they still agree (a range whose ends are equal is one number).

    Raises:
        ValueError: ``low`` above ``high``, or ``digits`` not a non-negative integer.
    """
    low, high = _number("low", low), _number("high", high)
    if low > high:
        raise ValueError(f"low must be <= high, got low={low!r}, high={high!r}")
    if isinstance(digits, bool) or not isinstance(digits, int) or digits < 0:
        raise ValueError(f"digits must be a non-negative integer, got digits={digits!r}")
    for p in range(digits, digits + 3):
        a, b = f"{low:.{p}f}", f"{high:.{p}f}"
        if a != b:
            return f"{a} to {b}"
    return f"{low:.{digits}f}"


def holds_if(condition: bool, detail: str = "", *, value: float | None = None, bound: float | None = None,
             side: int = 1, scale: str = "size", se: float | None = None) -> Verdict:
    """"holds" when ``condition`` is true, else "fails" (with ``detail``, the reason).

    For a claim whose evidence is a yes/no fact (a symbolic identity, an ordering of two
    exact numbers); statistics use ``at_least``, ``at_most`` or ``close_to``. Where the fact is
    a measured number against a threshold, pass them as ``value`` and ``bound`` (``side`` +1
    for ``value >= bound``, -1 for ``value <= bound``; ``scale`` as for ``at_least``): the
    verdict then carries its margin (``Verdict.margin_rel``, and ``margin_se`` when ``se``,
    the number's standard error, is given), so that ``scripts/claim_margins.py`` lists a claim
    decided by a hair. ``condition`` still decides the verdict (it may say more than the one
    comparison).
    """
    if not isinstance(condition, (bool, np.bool_)):
        raise TypeError(f"condition must be a bool, got condition={condition!r}")
    if (value is None) != (bound is None):
        raise ValueError(f"value and bound go together, got value={value!r}, bound={bound!r}")
    rel, against, z = None, "", None
    if value is not None:
        rel, against = relative_margin(value, bound, side, scale), _against(value, bound, side, scale)
        if se is not None:
            se = _tolerance("se", se)
            z = side * (float(value) - float(bound)) / se if se > 0 else None
    elif se is not None:
        raise ValueError("se needs value and bound")
    return Verdict("holds" if condition else "fails", "" if condition else detail, z, rel, against)


def _scale(scale: Any) -> str:
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got scale={scale!r}")
    return scale


def relaxed(bound: float, side: int, scale: str = "size") -> float:
    """The bound a claim stated with ``approx=True`` is judged against: ``bound`` moved by
    ``RELATIVE_MARGIN`` of its size on ``scale``, towards the side the claim excludes.

    ``side`` is +1 for a lower bound (``at_least``: the relaxed bound is lower) and -1 for an
    upper bound (``at_most``: higher). On the "size" scale the bound moves by
    ``RELATIVE_MARGIN * |bound|``. On the "angle" scale ``bound`` is a cosine (in [-1, 1]) and
    its angle ``a = arccos(bound)`` moves by ``RELATIVE_MARGIN * a``: a lower bound on a
    cosine is an upper bound ``a`` on the angle, relaxed to ``1.1 a`` (at most pi), an upper
    bound relaxed to ``0.9 a``. It is the book's only such rule: ``at_least``, ``at_most`` and
    ``close_to`` (each edge of its band) use it, and the relaxed claim is judged by the same
    standard of evidence as the claim itself.

    Args:
        bound: the claim's bound (a cosine on the "angle" scale).
        side: +1 (a lower bound) or -1 (an upper bound).
        scale: one of ``SCALES``.

    Returns:
        The relaxed bound.
    """
    bound = _number("bound", bound)
    if side not in (1, -1):
        raise ValueError(f"side must be +1 or -1, got side={side!r}")
    if _scale(scale) == "size":
        return bound - side * RELATIVE_MARGIN * abs(bound)
    if not -1.0 <= bound <= 1.0:
        raise ValueError(f"on the angle scale bound must be a cosine in [-1, 1], got bound={bound!r}")
    angle = math.acos(bound) * (1 + side * RELATIVE_MARGIN)
    return math.cos(min(angle, math.pi))


def margin(bound: float, side: int = 1, scale: str = "size") -> float:
    """How far ``relaxed`` moves ``bound``: ``|relaxed(bound, side, scale) - bound|``.

    On the "size" scale it is ``RELATIVE_MARGIN * |bound|`` (10% of the bound's size) for
    either side; a bound of 0 has no margin (a sign holds or it does not). On the "angle"
    scale it depends on the side, and a cosine bound of 1 (or -1) has none.
    """
    return abs(relaxed(bound, side, scale) - _number("bound", bound))


def _flag(approx: Any) -> bool:
    if not isinstance(approx, (bool, np.bool_)):
        raise TypeError(f"approx must be True or False (the margin is the ledger's one rule, "
                        f"claims.margin), got approx={approx!r}")
    return bool(approx)


def _on(scale: str) -> str:
    return "" if scale == "size" else " on the angle scale"


def _one_sided_interval(value: Interval, bound: float, m: float | None, sign: int, scale: str) -> Verdict:
    word = ">=" if sign > 0 else "<="
    near, far = (value.low, value.high) if sign > 0 else (value.high, value.low)
    if sign * (near - bound) >= 0:
        return Verdict("holds", f"the whole interval is {word} {_g(bound)}")
    if m is not None and m > 0 and sign * (near - bound) >= -m:
        return Verdict("approx", f"the whole interval is {word} {_g(bound - sign * m)}, within the "
                                 f"{RELATIVE_MARGIN:.0%} margin{_on(scale)} of {_g(bound)}; estimate "
                                 f"{_g(value.estimate)}")
    edge = bound if m is None else bound - sign * m
    if sign * (far - edge) < 0:
        return Verdict("fails", f"the whole interval is on the wrong side of {_g(edge)}")
    return Verdict("open", f"the interval {_g(value.low)} to {_g(value.high)} contains {_g(edge)}")


def _one_sided(value: Value, bound: Any, approx: Any, sign: int, scale: str) -> Verdict:
    """at_least (sign = +1) or at_most (sign = -1)."""
    bound = _number("bound", bound)
    m = margin(bound, sign, scale) if _flag(approx) else None
    word = ">=" if sign > 0 else "<="
    if isinstance(value, Interval):
        verdict = _one_sided_interval(value, bound, m, sign, scale)
        # "holds" is decided against the bound, the other verdicts against the relaxed one
        edge = bound if m is None or verdict.kind == "holds" else bound - sign * m
        return _with_margin(verdict, margin_in_se(value, edge, sign))
    x = _number("value", value)
    rel = relative_margin(x, bound, sign, scale) if scale == "size" or -1 <= x <= 1 else None
    against = _against(x, bound, sign, scale)
    if sign * (x - bound) >= 0:
        return Verdict("holds", f"{_g(x)} {word} {_g(bound)}", None, rel, against)
    if m is not None and sign * (x - bound) >= -m:
        return Verdict("approx", f"{_g(x)}, short of {_g(bound)} by {_g(abs(x - bound))} (margin "
                                 f"{_g(m)}, {RELATIVE_MARGIN:.0%} of the bound{_on(scale)})", None, rel, against)
    return Verdict("fails", f"{_g(x)} is not {word} {_g(bound)}", None, rel, against)


def at_least(value: Value, bound: float, *, approx: bool = False, scale: str = "size") -> Verdict:
    """Whether ``value >= bound``.

    For a number: "holds" when it is, else "fails", or "approx" with ``approx=True`` when it
    is short by at most ``margin(bound, +1, scale)``. For an ``Interval``: "holds" when the
    whole interval is >= ``bound``; with ``approx=True``, "approx" when the whole interval is
    >= ``relaxed(bound, +1, scale)``; "fails" when the whole interval is below the (relaxed) bound,
    and "open" when it contains it.

    Args:
        value: the measured number, or a statistic with its interval.
        bound: the threshold.
        approx: whether the claim may hold approximately, by the ledger's one margin
            (``relaxed``).
        scale: the kind of quantity the margin is measured on: "size" (default) or
            "angle" (``value`` and ``bound`` are cosines or ``|cos|``).

    Returns:
        The ``Verdict``.
    """
    return _one_sided(value, bound, approx, +1, _scale(scale))


def at_most(value: Value, bound: float, *, approx: bool = False, scale: str = "size") -> Verdict:
    """Whether ``value <= bound``: ``at_least`` with the inequality reversed."""
    return _one_sided(value, bound, approx, -1, _scale(scale))


def close_to(value: Value, target: float, *, tol: float, approx: bool = False,
             scale: str = "size") -> Verdict:
    """Whether ``value`` equals ``target`` within ``tol``.

    For a number: "holds" when ``|value - target| <= tol``, else "fails", or "approx" with
    ``approx=True`` when it lies in the relaxed band. For an ``Interval``: "holds" when the
    whole interval lies within ``tol`` of ``target``; with ``approx=True``, "approx" when it
    lies in the relaxed band; "fails" when none of it lies in that band (``tol`` without
    ``approx``), and "open" otherwise. The relaxed band is ``target +- (tol + margin(target))``
    on the "size" scale; on the "angle" scale each edge of ``target +- tol`` (cosines, clipped
    to [-1, 1]) is relaxed by ``relaxed``.

    Args:
        value: the measured number, or a statistic with its interval.
        target: the predicted value.
        tol: the agreement the claim asserts, >= 0.
        approx: whether the claim may hold approximately, its band widened by the ledger's
            one margin (``relaxed``).
        scale: "size" (default) or "angle" (cosines).

    Returns:
        The ``Verdict``.
    """
    target = _number("target", target)
    tol = _tolerance("tol", tol)
    scale = _scale(scale)
    edges = (target - tol, target + tol)
    if scale == "angle":
        edges = (max(edges[0], -1.0), min(edges[1], 1.0))
    band = None
    if _flag(approx):
        if scale == "size":
            band = (edges[0] - margin(target), edges[1] + margin(target))
        else:
            band = (relaxed(edges[0], +1, scale), relaxed(edges[1], -1, scale))
    say = f"{_g(target)} +- {_g(tol)}"
    widened = band is not None and (band[0] < edges[0] or band[1] > edges[1])
    wide = "" if band is None else f"{_g(band[0])} to {_g(band[1])}"
    if isinstance(value, Interval):
        def z(kind: str) -> float:
            lo, hi = edges if band is None or kind == "holds" else band
            return min(margin_in_se(value, lo, +1), margin_in_se(value, hi, -1))

        if edges[0] <= value.low and value.high <= edges[1]:
            return Verdict("holds", f"the interval lies within {say}", z("holds"))
        if widened and band[0] <= value.low and value.high <= band[1]:
            return Verdict("approx", f"the interval lies in {wide} ({say} and the "
                                     f"{RELATIVE_MARGIN:.0%} margin{_on(scale)}); estimate off by "
                                     f"{_g(abs(value.estimate - target))}", z("approx"))
        lo, hi = edges if band is None else band
        if value.low > hi or value.high < lo:
            return Verdict("fails", f"the interval lies outside {_g(lo)} to {_g(hi)}", z("fails"))
        return Verdict("open", f"the interval {_g(value.low)} to {_g(value.high)} is not decided "
                               f"against {_g(lo)} to {_g(hi)}", z("open"))
    x = _number("value", value)
    off = abs(x - target)
    # the margin of a plain number against a tolerance: the unused part of the tolerance
    rel, against = ((tol - off) / tol if tol else None), f"|{_g(x)} - {_g(target)}| <= {_g(tol)}"
    if edges[0] <= x <= edges[1]:
        return Verdict("holds", f"off by {_g(off)} (tolerance {_g(tol)})", None, rel, against)
    if band is not None and band[0] <= x <= band[1]:
        return Verdict("approx", f"off by {_g(off)} (tolerance {_g(tol)}, with the "
                                 f"{RELATIVE_MARGIN:.0%} margin{_on(scale)} {wide})", None, rel, against)
    return Verdict("fails", f"off by {_g(off)} (tolerance {_g(tol)})", None, rel, against)


def excludes(value: Interval | PairedDifference, point: float = 0.0) -> Verdict:
    """Whether an interval excludes ``point``: "holds" when it does (the difference is real at
    the interval's level), "open" when it contains it. For a ``PairedDifference``, its
    interval of the mean difference."""
    iv = value.difference if isinstance(value, PairedDifference) else value
    if not isinstance(iv, Interval):
        raise TypeError(f"value must be an Interval or a PairedDifference, got value={value!r}")
    point = _number("point", point)
    z = margin_in_se(iv, point, 1 if iv.estimate >= point else -1)
    if iv.contains(point):
        return Verdict("open", f"the interval {_g(iv.low)} to {_g(iv.high)} contains {_g(point)}", z)
    side = "above" if iv.low > point else "below"
    return Verdict("holds", f"the whole interval is {side} {_g(point)}", z)


def equivalent(value: Interval | PairedDifference, margin: float, point: float = 0.0) -> Verdict:
    """Whether a difference is negligible: two one-sided tests (TOST) at the 5% level that
    the quantity lies within ``point +- margin``, the margin stated in advance.

    The test is decided by the interval at level 90%: "holds" when the whole interval lies
    inside ``(point - margin, point + margin)`` (both one-sided tests reject a difference of
    ``margin`` or more), "fails" when it lies wholly outside (the difference is at least the
    margin), "open" otherwise. An interval that merely contains ``point`` says nothing of
    equivalence: this is the check for a sentence that says "no difference".

    Args:
        value: a statistic with its 90% interval (``level=0.9``), or a ``PairedDifference``
            whose interval is at 90%.
        margin: the largest difference the sentence calls negligible, > 0.
        point: the value of no difference.

    Raises:
        ValueError: if the interval's level is not 0.9, or ``margin`` is not positive.
    """
    iv = value.difference if isinstance(value, PairedDifference) else value
    if not isinstance(iv, Interval):
        raise TypeError(f"value must be an Interval or a PairedDifference, got value={value!r}")
    if not math.isclose(iv.level, 0.9):
        raise ValueError(f"an equivalence test at the 5% level reads the 90% interval, got level={iv.level!r}")
    margin, point = _number("margin", margin), _number("point", point)
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got margin={margin!r}")
    lo, hi = point - margin, point + margin
    nearer = lo if iv.estimate - lo < hi - iv.estimate else hi
    z = margin_in_se(iv, nearer, 1 if nearer == lo else -1)
    say = f"the 90% interval {_g(iv.low)} to {_g(iv.high)}"
    if lo < iv.low and iv.high < hi:
        return Verdict("holds", f"{say} lies within {_g(point)} +- {_g(margin)}", z)
    if iv.low >= hi or iv.high <= lo:
        return Verdict("fails", f"{say} lies outside {_g(point)} +- {_g(margin)}", z)
    return Verdict("open", f"{say} reaches past {_g(point)} +- {_g(margin)}", z)


def all_of(*verdicts: Verdict) -> Verdict:
    """The verdict of a sentence that says several things, each with its own verdict: the
    weakest of them ("fails" before "open" before "approx" before "holds"), with the details
    of the ones that are not "holds", the smallest of their margins in standard errors, and the
    smallest of their relative margins (``Verdict.margin_rel``) with its comparison."""
    if not verdicts or not all(isinstance(x, Verdict) for x in verdicts):
        raise TypeError(f"verdicts must be one or more Verdicts, got {verdicts!r}")
    margins = [x.margin_se for x in verdicts if x.margin_se is not None]
    z = min(margins, key=abs) if margins else None
    rels = [x for x in verdicts if x.margin_rel is not None]
    closest = min(rels, key=lambda x: abs(x.margin_rel)) if rels else Verdict("holds")
    for kind in ("fails", "open", "approx"):
        if any(x.kind == kind for x in verdicts):
            return Verdict(kind, "; ".join(x.detail for x in verdicts if x.kind != "holds"), z,
                           closest.margin_rel, closest.against)
    return Verdict("holds", "", z, closest.margin_rel, closest.against)


def bears_on_paper(verdict: str, bearing: str) -> str:
    """What a claim of the book, with verdict ``verdict``, says of the paper's claim it bears
    on with ``bearing``: one of ``OUTCOMES``.

    A claim that holds (or holds approximately) counts as its bearing says: "supported",
    "qualified" or "contradicted". One that does not hold counts the other way: a supporting
    claim that fails is evidence against the paper's claim ("contradicted"), a contradicting one
    that fails is evidence for it ("supported"), a qualification that fails leaves it
    "supported". An open claim decides nothing ("open").
    """
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got verdict={verdict!r}")
    if bearing not in BEARINGS:
        raise ValueError(f"bearing must be one of {BEARINGS}, got bearing={bearing!r}")
    if verdict == "open":
        return "open"
    if verdict in ("holds", "approx"):
        return {"supports": "supported", "qualifies": "qualified", "contradicts": "contradicted"}[bearing]
    return {"supports": "contradicted", "qualifies": "supported", "contradicts": "supported"}[bearing]


@dataclass(frozen=True)
class PaperVerdict:
    """The verdict on one claim of the paper, as the book tests it (``paper_verdict``).

    Attributes:
        headline: the verdict on the paper's statement in words ("not tested", "holds at
            every setting tested", "holds with qualifications", "does not hold for the book's
            model at any setting tested", "holds in some of the book's tests, does not hold in
            others",
            "open"),
            with "; open in some" when some claims cannot decide.
        outcomes: for each claim of the book that bears on it, ``(outcome, id, setting)``.
    """

    headline: str
    outcomes: tuple


def paper_verdict(records: list[Mapping[str, Any]]) -> PaperVerdict:
    """The verdict on a claim of the paper from the claims of the book that bear on it.

    Args:
        records: the ledger records (``Claim.as_dict``) of the claims with ``paper=`` this
            claim of the paper, each with its "verdict", "bearing", "id" and "setting".

    Returns:
        The ``PaperVerdict``: each record's outcome (``bears_on_paper``) with its setting, and
        a headline that names what the outcomes say together.
    """
    outcomes = tuple((bears_on_paper(r["verdict"], r["bearing"]), r["id"], r["setting"]) for r in records)
    kinds = {o for o, _, _ in outcomes}
    decided = kinds - {"open"}
    if not outcomes:
        return PaperVerdict("not tested", outcomes)
    if not decided:
        return PaperVerdict("open", outcomes)
    if "contradicted" in decided and decided != {"contradicted"}:
        # two tests may differ by their setting or by how they read the paper's statement
        # (aligned up to a tilt, or exactly): each outcome names its setting
        headline = "holds in some of the book's tests, does not hold in others"
    elif "contradicted" in decided:
        headline = "does not hold for the book's model at any setting tested"
    elif "qualified" in decided:
        headline = "holds with qualifications"
    else:
        headline = "holds at every setting tested"
    if "open" in kinds:
        headline += "; open in some"
    return PaperVerdict(headline, outcomes)


def _plain(name: str, value: Any) -> Any:
    """``value`` as JSON data: numbers, strings, bools, None, lists and dicts of them,
    intervals and paired differences as their dicts, arrays of at most 64 numbers."""
    def special(x):
        return x.as_dict() if isinstance(x, (Interval, PairedDifference)) else _json.NOT_SPECIAL

    return _json.to_json(name, value, special=special, max_array=64,
                           what="a number, string, interval or a list of them")


@dataclass(frozen=True)
class Claim:
    """One claim of the book (see the module docstring).

    Attributes:
        id: the claim's id, lowercase words joined by hyphens, unique in the book.
        sentence: the sentence as the reader sees it (MyST Markdown, inline math allowed).
        setting: the parameters it was measured at, as JSON data.
        evidence: the measured numbers, as JSON data.
        verdict: the ``Verdict`` computed from the evidence.
        expect: the verdicts the prose is written for.
        paper: the key of ``PAPER`` this claim bears on, or None.
        bearing: how it bears on it (one of ``BEARINGS``), or None without ``paper``.
    """

    id: str
    sentence: str
    setting: dict
    evidence: dict
    verdict: Verdict
    expect: tuple = ("holds",)
    paper: str | None = None
    bearing: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The claim as the JSON record of the ledger."""
        return {"id": self.id, "sentence": self.sentence, "setting": self.setting,
                "evidence": self.evidence, "verdict": self.verdict.kind,
                "detail": self.verdict.detail, "margin_se": _finite(self.verdict.margin_se),
                "margin_rel": _finite(self.verdict.margin_rel), "margin_against": self.verdict.against,
                "expect": list(self.expect), "paper": self.paper,
                "bearing": self.bearing,
                "paper_claim": PAPER[self.paper].statement if self.paper else None}

    def _ipython_display_(self) -> None:
        """A claim left as a cell's last value shows nothing on the page: its sentence is in
        the prose (the role ``{claim}`id```) and its record on the Claims page."""


def claim(
    id: str,
    sentence: str,
    *,
    setting: Mapping[str, Any],
    evidence: Mapping[str, Any],
    verdict: Verdict,
    expect: str | tuple[str, ...] = "holds",
    paper: str | None = None,
    bearing: str | None = None,
) -> Claim:
    """State a claim of the book and record it in the ledger (see the module docstring).

    In a Jupyter kernel (a chapter being executed) the claim is glued into the notebook
    (``myst_nb.glue``, keys ``claim:<id>`` for the sentence and ``claim-data:<id>`` for the
    record), where the role ``{claim}`<id>``` and the Claims page find it.

    Args:
        id: lowercase words and digits joined by hyphens, unique in the book.
        sentence: the sentence the prose shows, its numbers formatted from the evidence.
        setting: the parameters it was measured at (non-empty: L, d, K, lam, sigma, r, init,
            steps, seeds, sample sizes...). ``L="inf"`` for the large-L limit.
        evidence: the measured numbers (numbers, ``stats.Interval``, ``stats.PairedDifference``,
            strings, short lists).
        verdict: the ``Verdict`` computed from the evidence (``at_least``, ``close_to``...).
        expect: the verdict, or verdicts, the prose is written for.
        paper: a key of ``PAPER`` when the claim bears on a claim of the paper.
        bearing: with ``paper``, how it bears on it when it holds (one of ``BEARINGS``):
            the Claims page judges the paper's claim from it (``paper_verdict``).

    Returns:
        The ``Claim``.

    Raises:
        ClaimError: the verdict is not one of ``expect`` (the chapter's cell fails, and with
            it the build), unless ``record_to`` is in force.
        ValueError: a bad id, an empty sentence or setting, an unknown ``paper``, ``bearing`` or
            ``expect``, a ``paper`` without a ``bearing`` or a ``bearing`` without a ``paper``.
        TypeError: a verdict that is not a ``Verdict``, evidence that is not JSON-like.
    """
    if not isinstance(id, str) or not ID_PATTERN.fullmatch(id):
        raise ValueError(f"id must be lowercase words and digits joined by hyphens, got id={id!r}")
    if not isinstance(sentence, str) or not sentence.strip():
        raise ValueError(f"sentence must be a non-empty string, got sentence={sentence!r}")
    if not isinstance(setting, Mapping) or not setting:
        raise ValueError(f"setting must be a non-empty mapping of the parameters the claim was "
                         f"measured at, got setting={setting!r}")
    if not isinstance(evidence, Mapping) or not evidence:
        raise ValueError(f"evidence must be a non-empty mapping of measured numbers, got evidence={evidence!r}")
    if not isinstance(verdict, Verdict):
        raise TypeError(f"verdict must be a Verdict (from at_least, close_to, ...), got verdict={verdict!r}")
    expect = (expect,) if isinstance(expect, str) else tuple(expect)
    for kind in expect:
        if kind not in VERDICTS:
            raise ValueError(f"expect must be verdicts of {VERDICTS}, got {kind!r}")
    if paper is not None and paper not in PAPER:
        raise ValueError(f"paper must be one of {tuple(PAPER)} or None, got paper={paper!r}")
    if (paper is None) != (bearing is None):
        raise ValueError(f"paper and bearing go together: a claim that bears on a claim of the "
                         f"paper says how, got paper={paper!r}, bearing={bearing!r}")
    if bearing is not None and bearing not in BEARINGS:
        raise ValueError(f"bearing must be one of {BEARINGS}, got bearing={bearing!r}")
    record = Claim(id, sentence.strip(), _plain("setting", dict(setting)),
                   _plain("evidence", dict(evidence)), verdict, expect, paper, bearing)
    if _record_path is not None:
        with open(_record_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record.as_dict()) + "\n")
    elif verdict.kind not in expect:
        raise ClaimError(
            f"claim {id!r}: the evidence gives the verdict {verdict.kind!r} ({verdict.detail}), "
            f"but the prose is written for {expect}. Sentence: {record.sentence}"
        )
    _glue(record)
    return record


_record_path: Path | None = None


def record_to(path: Path | str | None) -> None:
    """Replication: append every later claim's record to ``path`` (JSON lines) and record a
    verdict outside its ``expect`` instead of raising ``ClaimError``; None restores the
    book's rule (see the module docstring)."""
    global _record_path
    _record_path = None if path is None else Path(path)


def _glue(record: Claim) -> None:
    """Glue the claim into the running notebook (a no-op outside an IPython kernel)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return
    if get_ipython() is None:
        return
    from IPython.display import Markdown
    from myst_nb import glue

    glue(f"claim:{record.id}", Markdown(record.sentence), display=False)
    glue(f"claim-data:{record.id}", _Record(record), display=False)


MIME = "application/vnd.attnclust.claim+json"
"""The MIME type of a claim's record in the notebook (JSON; read by the book's extension)."""


class _Record:
    """A claim's record as a display object: its JSON under ``MIME``."""

    def __init__(self, record: Claim):
        self.record = record

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {MIME: self.record.as_dict(), "text/plain": f"claim {self.record.id}"}

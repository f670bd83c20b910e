"""The finite-L landscape of the chapter "Training dynamics" (chapters/training_dynamics.md):
how the index of a stationary point of the risk changes with the prompt length L.

Two stationary points of the large-L risk R_inf are pinned by a symmetry of the mixture, so
the exact finite-L risk R_L has a stationary point of the same form at every L:

- ``"split"`` (K = 2): one head along e_1 + e_2, the other along e_1 - e_2 (swapping e_1 and
  e_2 maps the pair to itself, up to the sign of a head, which the layer ignores); a saddle
  of index one of R_inf;
- ``"symmetric"`` (K = 3): every head tilted from its centroid equally towards the two
  others (the permutations of the centroids map it to itself); a saddle of R_inf too, whose
  escape turns the heads about the mixture-mean axis to the *rotated* minimiser of
  ``k3_points``.

``landscape`` finds, for each L of a grid and each of several independent samples of
prompts, the stationary point of the sample's R_L inside that symmetric family
(``stationary.empirical_stationary`` with the family's ``directions``, started at the R_inf
point), and the smallest eigenvalues of the full Hessian of R_L there. The spread over
samples gives each eigenvalue's interval; R_inf (quadrature, exact) is the limit.

The full-size computation takes tens of minutes on a 2-core CPU, so it is a committed
experiment (``python -m attnclust experiment training-landscape``, written to
``attnclust/book/results/training-landscape.json``); the chapter reads it with ``stored`` and recomputes
one sample at build time (``check_sample``) to confirm that the library still gives the
stored numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import jax
import numpy as np

from attnclust import _validate as v
from attnclust.book import results
from attnclust import stationary, stats
from attnclust.metrics import alignment
from attnclust.mixture import orthogonal_mixture, sample
from attnclust.risk import empirical_risk
from attnclust.book.experiments import committed
from attnclust.setting import DEFAULT
from attnclust.book import sizes

__all__ = [
    "POINTS", "SIZES", "Landscape", "K3Points", "point_setting", "family_directions",
    "large_L_point", "k3_points", "landscape", "check_sample", "stored", "StoredLandscape",
    "twist_angle", "experiment",
]

LAM = DEFAULT.lam
POINTS = {"split": 2, "symmetric": 3}
"""The two stationary points and their number of centroids K (= heads)."""

SIZES: dict[str, dict] = {
    # the committed run: eight independent samples of about 40 000 tokens at every L
    "full": dict(Ls={"split": (25, 35, 50, 70, 100, 140, 200, 400),
                     "symmetric": (25, 35, 50, 70, 100, 140, 200)},
                 samples=8, tokens=40_000),
    # tests: every code path, tiny
    "test": dict(Ls={"split": (25, 50), "symmetric": (25, 50)}, samples=2, tokens=2_000),
}
"""Grids of prompt lengths, samples per L and tokens per sample."""


def point_setting(point: str) -> dict:
    """The setting of ``point``: K, d, r, sigma, lam of the default orthogonal mixture."""
    K = POINTS[v.one_of("point", point, POINTS)]
    return dict(DEFAULT.mixture_args(), K=K, lam=LAM)


def _mixture(point: str):
    s = point_setting(point)
    return orthogonal_mixture(K=s["K"], d=s["d"], r=s["r"], sigma=s["sigma"])


def family_directions(point: str, d: int = DEFAULT.d) -> np.ndarray:
    """``(2, H, d)``: the two directions of the symmetric family of ``point``.

    "split": ``(theta_1, theta_2) = (a u_+, b u_-)`` with ``u_+- = (e_1 +- e_2) / sqrt 2``, so
    the directions are ``(u_+, 0)`` and ``(0, u_-)``. "symmetric": ``theta_h = c e_h + eps
    sum_{h' != h} e_h'``, so the directions are ``(e_1, e_2, e_3)`` and ``(e_2 + e_3, e_1 +
    e_3, e_1 + e_2)``.
    """
    K = POINTS[v.one_of("point", point, POINTS)]
    D = np.zeros((2, K, d))
    if point == "split":
        D[0, 0, :2] = np.array([1.0, 1.0]) / np.sqrt(2)
        D[1, 1, :2] = np.array([1.0, -1.0]) / np.sqrt(2)
    else:
        D[0, :, :K] = np.eye(K)
        D[1, :, :K] = 1.0 - np.eye(K)
    return D


@lru_cache(maxsize=None)
def large_L_point(point: str) -> stationary.StationaryPoint:
    """The stationary point of R_inf of ``point``, by Newton's method from a symmetric start
    (the symmetry keeps Newton in the family): its heads, risk and Hessian spectrum."""
    D = family_directions(point)
    start = 0.9 * (D[0] + D[1]) if point == "split" else 0.9 * D[0] - 0.1 * D[1]
    return stationary.newton_stationary(start, _mixture(point), LAM)


def twist_angle(theta, reference) -> float:
    """The mean angle (degrees) by which the heads of ``theta`` are turned about the
    mixture-mean axis e_1 + e_2 + e_3 from the matched heads of ``reference`` (K = 3): the
    angle between the two heads' components orthogonal to the axis, after matching heads
    and signs with the centroids."""
    theta, reference = (np.asarray(t, np.float64) for t in (theta, reference))
    K = theta.shape[0]
    mu = np.eye(K, theta.shape[1])
    axis = mu.sum(0) / np.sqrt(K)
    angles = []
    for h_t, h_r in zip(matched_heads(theta, mu), matched_heads(reference, mu)):
        a, b = h_t - (h_t @ axis) * axis, h_r - (h_r @ axis) * axis
        angles.append(np.degrees(np.arccos(np.clip(a @ b / np.linalg.norm(a) / np.linalg.norm(b), -1, 1))))
    return float(np.mean(angles))


def matched_heads(theta: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """The heads reordered to their matched centroids and signed to point towards them."""
    from attnclust.metrics import matching

    order = matching(theta, mu)
    out = np.empty_like(theta)
    for h, c in enumerate(order):
        out[c] = theta[h] * np.sign(theta[h] @ mu[c])
    return out


@dataclass(frozen=True)
class K3Points:
    """The two large-L points of K = 3 (d = 5, r = 2, sigma = 0.5, lam = 1).

    Attributes:
        symmetric: the symmetric tilted point (``large_L_point("symmetric")``).
        rotated: the rotated minimiser, from BFGS on R_inf started at the symmetric point
            turned by a small angle about the mixture-mean axis, then Newton's method.
        twist: the angle (degrees) between the two configurations about that axis.
        mc_difference: R_inf(rotated) - R_inf(symmetric) by Monte Carlo with common random
            numbers (the same queries for both), with its t interval.
        mc_samples: the number of queries.
    """

    symmetric: stationary.StationaryPoint
    rotated: stationary.StationaryPoint
    twist: float
    mc_difference: stats.Interval
    mc_samples: int


def _turn(theta: np.ndarray, angle: float) -> np.ndarray:
    """Every head turned by ``angle`` (radians) about the axis e_1 + e_2 + e_3 (Rodrigues)."""
    d = theta.shape[1]
    u = np.zeros(d)
    u[:3] = 1 / np.sqrt(3)
    Kx = np.zeros((d, d))
    Kx[:3, :3] = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    Rm = np.eye(d) + np.sin(angle) * Kx + (1 - np.cos(angle)) * Kx @ Kx
    return theta @ Rm.T


@lru_cache(maxsize=None)
def k3_points(mc_samples: int = 400_000) -> K3Points:
    """The symmetric point and the rotated minimiser of R_inf for K = 3, and the Monte Carlo
    check of their order (see ``K3Points``)."""
    mix = _mixture("symmetric")
    sym = large_L_point("symmetric")
    theta, _ = stationary.large_L_minimiser(_turn(sym.theta, 0.05), mix, LAM)
    rot = stationary.newton_stationary(theta, mix, LAM)
    z = np.asarray(sample(jax.random.PRNGKey(2025), mix, mc_samples, 1)[0][:, 0])
    from attnclust.limits import head_output_limit

    loss = [np.sum((z - np.asarray(head_output_limit(t, z, mix, LAM), np.float64)) ** 2, -1)
            for t in (rot.theta, sym.theta)]
    return K3Points(sym, rot, twist_angle(rot.theta, sym.theta),
                    stats.mean_interval(loss[0] - loss[1]), mc_samples)


@dataclass(frozen=True)
class Landscape:
    """The smallest Hessian eigenvalues of R_L at the symmetric stationary point ``point``
    against L (see the module docstring).

    Attributes:
        point: "split" (K = 2) or "symmetric" (K = 3).
        setting: K, d, r, sigma, lam.
        Ls: the prompt lengths.
        n_prompts: prompts per sample at each L (about ``tokens`` tokens per sample).
        tokens: the tokens per sample asked for.
        smallest: ``(len(Ls), samples)`` the smallest eigenvalue per L and sample.
        second: ``(len(Ls), samples)`` the second smallest.
        moved: ``(len(Ls), samples)`` distance from the R_inf point to the R_L point.
        limit: the R_inf Hessian's eigenvalues at the R_inf point, ascending.
        risk_difference: ``(len(Ls), samples)`` for "symmetric", R_L(rotated) -
            R_L(symmetric) at the two large-L points on the same sample; else empty.
    """

    point: str
    setting: dict
    Ls: tuple[int, ...]
    n_prompts: tuple[int, ...]
    tokens: int
    smallest: np.ndarray
    second: np.ndarray
    moved: np.ndarray
    limit: np.ndarray
    risk_difference: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    @property
    def samples(self) -> int:
        """Independent samples of prompts per L."""
        return self.smallest.shape[1]

    def index(self, L: int) -> int:
        """The row of ``L`` in the arrays."""
        return self.Ls.index(int(L))

    def interval(self, L: int, which: str = "smallest") -> stats.Interval:
        """The mean over samples of the smallest (or "second", or "risk_difference") value at
        ``L``, with its t interval."""
        return stats.mean_interval(getattr(self, which)[self.index(L)])

    def prediction(self, L: int, tokens: int, level: float = 0.99) -> tuple[float, float]:
        """The range in which one new sample of ``tokens`` tokens at ``L`` should put the
        smallest eigenvalue: mean +- t s sqrt(1/n + tokens_stored / tokens) (the spread of
        one sample scales as 1 / sqrt(tokens))."""
        from scipy import stats as sst

        x = self.smallest[self.index(L)]
        n = x.size
        half = sst.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) * np.sqrt(
            1 / n + self.tokens / tokens)
        return float(x.mean() - half), float(x.mean() + half)

    def sign_change(self) -> tuple[int | None, int | None]:
        """(the largest L whose interval lies above 0, the smallest larger L whose interval
        lies below 0): the index changes between the two. None where there is no such L."""
        above = [L for L in self.Ls if self.interval(L).low > 0]
        L_above = max(above) if above else None
        below = [L for L in self.Ls if self.interval(L).high < 0 and (L_above is None or L > L_above)]
        return L_above, (min(below) if below else None)

    def crossing(self, means: np.ndarray | None = None) -> float:
        """L where the fitted smallest eigenvalue first crosses 0 coming from L = inf: the
        sample means (or ``means``, one per L) fitted by least squares as
        ``limit + a / L + b / L^2``, the R_inf value being the limit. NaN when the fit does
        not cross zero above the grid's smallest L (no change of index on the grid)."""
        x = 1.0 / np.asarray(self.Ls, float)
        y = (self.smallest.mean(1) if means is None else np.asarray(means)) - self.limit[0]
        a, b = np.linalg.lstsq(np.stack([x, x**2], 1), y, rcond=None)[0]
        roots = np.roots([b, a, self.limit[0]])  # limit + a t + b t^2 = 0, t = 1/L
        t = roots[np.isreal(roots) & (roots.real > 0)].real
        L_cross = 1 / t.min() if t.size else float("nan")  # the first crossing from L = inf
        return float(L_cross) if L_cross >= min(self.Ls) else float("nan")

    def crossing_interval(self, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> stats.Interval:
        """``crossing`` with a bootstrap percentile interval: the samples of each L are
        resampled with replacement and the fit repeated."""
        rng = np.random.default_rng(seed)
        S = self.samples
        boot = np.array([self.crossing(np.take_along_axis(self.smallest, rng.integers(0, S, self.smallest.shape), 1).mean(1))
                         for _ in range(n_boot)])
        boot = boot[np.isfinite(boot)]
        lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
        return stats.Interval(self.crossing(), float(lo), float(hi), level, "bootstrap percentile", S)

    def as_data(self) -> dict:
        """The landscape as JSON data (the results file)."""
        return {"point": self.point, "setting": self.setting, "Ls": list(self.Ls),
                "n_prompts": list(self.n_prompts), "tokens": self.tokens,
                "smallest": self.smallest, "second": self.second, "moved": self.moved,
                "limit": self.limit, "risk_difference": self.risk_difference}

    @classmethod
    def from_data(cls, data: dict) -> "Landscape":
        """The inverse of ``as_data``."""
        arr = lambda k: np.asarray(data[k], np.float64)  # noqa: E731
        rd = arr("risk_difference")
        return cls(data["point"], dict(data["setting"]), tuple(int(L) for L in data["Ls"]),
                   tuple(int(n) for n in data["n_prompts"]), int(data["tokens"]), arr("smallest"),
                   arr("second"), arr("moved"), arr("limit"), rd.reshape(0, 0) if rd.size == 0 else rd)


def prompts_per_sample(L: int, tokens: int) -> int:
    """Prompts per sample: about ``tokens`` tokens, a multiple of 8 (blocks of the Hessian)."""
    return max(8, (tokens // L) // 8 * 8)


def _sample_point(point: str, L: int, n: int, key) -> tuple[stationary.StationaryPoint, float | None]:
    """The symmetric stationary point of one sample's R_L, and (for "symmetric") the
    sample's R_L(rotated) - R_L(symmetric) at the large-L points."""
    mix = _mixture(point)
    X, _ = sample(key, mix, n, L)
    start = large_L_point(point)
    p = stationary.empirical_stationary(start.theta, X, LAM, directions=family_directions(point))
    diff = None
    if point == "symmetric":
        rot = k3_points().rotated.theta
        diff = float(empirical_risk(rot, X, LAM)) - float(empirical_risk(start.theta, X, LAM))
    return p, diff


def _key(point: str, L: int, s: int):
    base = jax.random.PRNGKey(1000 + POINTS[point])
    return jax.random.fold_in(jax.random.fold_in(base, L), s)


def check_sample(point: str, L: int, tokens: int, s: int = 10_000):
    """One more sample at ``L`` (seed ``s``, not among the stored ones) and the stationary
    point of its R_L in the family: ``(X, StationaryPoint)``, for the chapter's build-time
    check against ``stored`` (see ``Landscape.prediction``)."""
    mix = _mixture(v.one_of("point", point, POINTS))
    X, _ = sample(_key(point, int(L), s), mix, prompts_per_sample(int(L), tokens), int(L))
    p = stationary.empirical_stationary(large_L_point(point).theta, X, LAM, directions=family_directions(point))
    return X, p


def landscape(point: str, size: str = "full", progress: bool = False) -> Landscape:
    """Compute the landscape of ``point`` at ``size`` (``SIZES``; see ``Landscape``)."""
    from tqdm.auto import tqdm

    cfg = sizes.pick(SIZES, size)
    Ls = cfg["Ls"][v.one_of("point", point, POINTS)]
    S, tokens = cfg["samples"], cfg["tokens"]
    start = large_L_point(point)
    shape = (len(Ls), S)
    smallest, second, moved, diff = (np.zeros(shape) for _ in range(4))
    bar = tqdm(total=len(Ls) * S, desc=f"landscape {point}", disable=not progress)
    for i, L in enumerate(Ls):
        for s in range(S):
            p, dr = _sample_point(point, L, prompts_per_sample(L, tokens), _key(point, L, s))
            smallest[i, s], second[i, s] = p.eigenvalues[:2]
            moved[i, s] = np.linalg.norm(p.theta - start.theta)
            diff[i, s] = np.nan if dr is None else dr
            bar.update()
    bar.close()
    return Landscape(point, point_setting(point), tuple(Ls), tuple(prompts_per_sample(L, tokens) for L in Ls),
                     tokens, smallest, second, moved, np.asarray(start.eigenvalues),
                     diff if point == "symmetric" else np.zeros((0, 0)))


NAME = "training-landscape"
SOURCES = ("attnclust/stationary.py", "attnclust/mixture.py", "attnclust/risk.py",
           "attnclust/limits.py", "attnclust/metrics.py")
"""The library files the stored landscape depends on besides this module (the layer itself,
``attention`` and ``_kernels``, is checked at build time by ``check_sample`` instead: a
change of its numerics that changed the landscape fails the chapter's check)."""


def _point_data(p: stationary.StationaryPoint) -> dict:
    return {"theta": p.theta, "risk": p.risk, "eigenvalues": p.eigenvalues, "grad_norm": p.grad_norm}


@committed(NAME, sources=SOURCES,
           description="Smallest Hessian eigenvalues of R_L against L at the split (K=2) and symmetric (K=3) points")
def experiment(size: str = "full") -> dict:
    """The committed landscape: both points at ``size``, and the K = 3 large-L points."""
    k3 = k3_points()
    out = {point: landscape(point, size, progress=True).as_data() for point in POINTS}
    split = large_L_point("split")
    out["split_point"] = _point_data(split)
    out["k3"] = {"symmetric": _point_data(k3.symmetric), "rotated": _point_data(k3.rotated),
                 "twist": k3.twist, "mc_difference": k3.mc_difference.as_dict(),
                 "mc_samples": k3.mc_samples,
                 "cos_symmetric": alignment(k3.symmetric.theta, np.eye(3, 5)),
                 "cos_rotated": alignment(k3.rotated.theta, np.eye(3, 5))}
    return out


@dataclass(frozen=True)
class StoredLandscape:
    """The committed results file read back: both landscapes, the K = 3 points' data and
    the file's provenance (``results.Stored``)."""

    split: Landscape
    symmetric: Landscape
    k3: dict
    stored: results.Stored


def stored() -> StoredLandscape:
    """Read ``attnclust/book/results/training-landscape.json`` (see ``experiment``)."""
    st = results.load(NAME)
    return StoredLandscape(Landscape.from_data(st.data["split"]),
                           Landscape.from_data(st.data["symmetric"]), st.data["k3"], st)

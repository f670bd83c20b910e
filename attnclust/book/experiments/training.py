"""The experiments of the chapter "Training dynamics" (chapters/training_dynamics.md), apart
from drawing (``attnclust.book.figures.training`` draws them).

Each experiment trains all its seeds in one ``fit_many`` call (``attnclust.book.sweeps.run_seeds``)
and summarises them as ``Runs``: the recorded worst-head ``|cos|``, the tail-averaged final
heads, their class (aligned, between the centroids, other; ``sweeps.classify``) and the
exact binomial interval of each class's frequency. ``size`` is a budget of
``sweeps.BUDGETS``: "small" (the book's build), "long" (ten times the steps and twice
the seeds, the committed experiment ``training-long``), "full" (paper scale, for an
accelerator).

- ``init_regimes``: the four initialisations; ``plateau``: where the small start pauses;
- ``stalls``: the runs that end between the centroids, where they are, and where Newton's
  method on a fixed sample of R_L and BFGS on R_inf take them from there;
- ``separability``, ``dimension``: sweeps of r / sigma and d;
- ``k_heads`` and ``k3_against``: K = 3 with three heads, against the large-L points of
  ``attnclust.book.experiments.landscape.k3_points``;
- ``tilt``: the measured tilt against lam beside the large-L tilted minimiser;
- ``long_budget`` (committed): the four initialisations and K = 3 at the "long" budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from attnclust import _validate as v
from attnclust.book import results, sweeps
from attnclust import stationary, stats
from attnclust.metrics import alignment
from attnclust.setting import DEFAULT
from attnclust.mixture import orthogonal_mixture
from attnclust.train import INITS, FitResult
from attnclust.book.experiments import committed

__all__ = [
    "Runs", "summarise", "init_regimes", "Plateau", "plateau", "Stall", "stalls",
    "separability_values", "separability", "dimension_values", "dimension", "k_heads",
    "K3Training", "k3_against", "LAMS_TILT", "Tilt", "tilt", "tilted_cos", "long_budget",
    "stored_long", "StoredLong",
]

CLASS_NAMES = sweeps.CLASS_NAMES
LAM = DEFAULT.lam


@lru_cache(maxsize=64)
def tilted_cos(lam: float, r: float, sigma: float) -> float:
    """``|cos|`` of the large-L tilted minimiser (``symbolic.tilted_minimiser``), cached."""
    from attnclust import symbolic

    return float(symbolic.tilted_minimiser(float(lam), float(r), float(sigma)).cos)


@dataclass(frozen=True)
class Runs:
    """The seeds of one training setting, summarised.

    Attributes:
        setting: K, d, r, sigma, lam, init, and the budget (seeds, steps, batch, L, lr).
        steps: ``(n_records,)`` the step of each record.
        worst: ``(S, n_records)`` the worst head's matched ``|cos|`` at each record.
        final: ``(S, H, d)`` the tail-averaged final heads (``sweeps.tail_average``).
        cos: ``(S, H)`` their matched ``|cos|``.
        codes: ``(S,)`` their class (``sweeps.ALIGNED``, ``BETWEEN``, ``OTHER``).
        risk: ``(S, n_records)`` the minibatch risk at each record.
        theta0: ``(S, H, d)`` the initial heads.
        thetas: ``(S, n_records, H, d)`` the recorded heads (empty for stored runs).
    """

    setting: dict
    steps: np.ndarray
    worst: np.ndarray
    final: np.ndarray
    cos: np.ndarray
    codes: np.ndarray
    risk: np.ndarray
    theta0: np.ndarray
    thetas: np.ndarray

    @property
    def seeds(self) -> int:
        """The number of seeds S."""
        return int(self.codes.size)

    @property
    def centroids(self) -> np.ndarray:
        """``(K, d)`` the centroids of the setting's mixture."""
        s = self.setting
        return np.asarray(orthogonal_mixture(K=s["K"], d=s["d"], r=s["r"], sigma=s["sigma"]).centroids)

    def count(self, name: str) -> int:
        """How many seeds ended in class ``name`` ("aligned", "between" or "other")."""
        return int(np.sum(self.codes == CLASS_NAMES.index(v.one_of("name", name, CLASS_NAMES))))

    def rate(self, name: str) -> stats.Interval:
        """The frequency of class ``name`` with its exact binomial 95% interval."""
        return stats.binomial_interval(self.count(name), self.seeds)

    def final_worst(self) -> np.ndarray:
        """``(S,)`` the worst head's ``|cos|`` of the final heads."""
        return self.cos.min(axis=-1)

    def steps_to(self, level: float) -> np.ndarray:
        """``(S,)`` the first recorded step with worst ``|cos|`` >= ``level`` (NaN if never)."""
        hit = self.worst >= level
        return np.where(hit.any(-1), self.steps[np.argmax(hit, -1)], np.nan)

    def as_data(self) -> dict:
        """JSON data for a results file (without the recorded heads and risks)."""
        return {"setting": self.setting, "steps": self.steps, "worst": self.worst,
                "final": self.final, "cos": self.cos, "codes": self.codes, "theta0": self.theta0}

    @classmethod
    def from_data(cls, data: dict) -> "Runs":
        """The inverse of ``as_data`` (``risk`` and ``thetas`` empty)."""
        a = lambda k, t=np.float64: np.asarray(data[k], t)  # noqa: E731
        return cls(dict(data["setting"]), a("steps", int), a("worst"), a("final"), a("cos"),
                   a("codes", int), np.zeros((0,)), a("theta0"), np.zeros((0,)))


def summarise(result: FitResult, setting: dict) -> Runs:
    """``Runs`` of a ``fit_many`` result trained with ``setting`` (which names K, d, r, sigma)."""
    mu = orthogonal_mixture(K=setting["K"], d=setting["d"], r=setting["r"], sigma=setting["sigma"]).centroids
    final = sweeps.tail_average(result)
    return Runs(dict(setting), np.asarray(result.steps), alignment(result.thetas, mu).min(-1),
                final, alignment(final, mu), sweeps.classify(final, mu),
                np.asarray(result.risk, np.float64), np.asarray(result.theta0, np.float64),
                np.asarray(result.thetas, np.float64))


def budget_setting(size: str, **kw) -> dict:
    """The setting of a training experiment at budget ``size``, as a claim records it: the
    default mixture, ``LAM``, the small start, the budget's seeds, steps, batch, L and lr,
    with ``kw`` replacing any of them."""
    b = sweeps.budget(size)
    s = dict(DEFAULT.mixture_args(), lam=LAM, init="small", seeds=b.seeds, steps=b.steps,
             batch=b.batch, L=b.L, lr=b.lr)
    s.update(kw)
    return s


@lru_cache(maxsize=None)
def _train(size: str, **kw) -> Runs:
    s = budget_setting(size, **kw)
    setting = DEFAULT.replace(K=s["K"], d=s["d"], r=s["r"], sigma=s["sigma"])
    res = sweeps.run_seeds(size, setting=setting, lam=s["lam"], init=s["init"], lr=s["lr"],
                           steps=s["steps"], seeds=s["seeds"])
    return summarise(res, s)


def init_regimes(size: str = "small") -> dict[str, Runs]:
    """The four initialisations of ``INITS`` at the default setting (K = 2, d = 5, r = 2,
    sigma = 0.5, lam = 1), one ``fit_many`` call each."""
    return {init: _train(size, init=init) for init in INITS}


@dataclass(frozen=True)
class Plateau:
    """Where the small start pauses before it splits: the record in the first quarter of the
    run where the mean worst ``|cos|`` peaks.

    Attributes:
        step: its step.
        worst: the mean worst ``|cos|`` there.
        mutual: ``(S,)`` ``|cos|`` between the two heads of each seed there.
        along_mean: ``(S, H)`` ``|cos|`` of each head with the mixture mean there.
    """

    step: int
    worst: float
    mutual: np.ndarray
    along_mean: np.ndarray


def plateau(runs: Runs) -> Plateau:
    """The plateau of ``runs`` (recorded heads needed: runs of this process, not stored)."""
    mean = runs.worst.mean(0)
    i = int(np.argmax(mean[: len(mean) // 4]))
    th = runs.thetas[:, i]
    norms = np.linalg.norm(th, axis=-1)
    mutual = np.abs(np.sum(th[:, 0] * th[:, 1], -1)) / np.prod(norms, -1)
    m = runs.centroids.mean(0)
    return Plateau(int(runs.steps[i]), float(mean[i]), mutual, np.abs(th @ (m / np.linalg.norm(m))) / norms)


@lru_cache(maxsize=None)
def special_points() -> dict[str, stationary.StationaryPoint]:
    """The stationary points of R_inf with both heads at ``|cos|`` 1/sqrt 2 (K = 2, default
    setting): "split" (heads along e_1 + e_2 and e_1 - e_2) and "equal" (both along
    e_1 + e_2), by Newton from symmetric starts; and "aligned", the tilted minimiser."""
    from attnclust.book.experiments.landscape import large_L_point

    mix = orthogonal_mixture()
    u = np.zeros(5)
    u[:2] = 1 / np.sqrt(2)
    equal = stationary.newton_stationary(np.stack([0.7 * u, 0.7 * u]), mix, LAM)
    aligned = stationary.newton_stationary(np.array([[0.95, -0.1, 0, 0, 0], [-0.1, 0.95, 0, 0, 0]]), mix, LAM)
    return {"split": large_L_point("split"), "equal": equal, "aligned": aligned}


@dataclass(frozen=True)
class Stall:
    """The runs that ended between the centroids, and where they are.

    Attributes:
        inits: ``(n,)`` the initialisation of each stalled run.
        theta: ``(n, 2, d)`` their final (tail-averaged) heads.
        nearest: ``(n,)`` "split" or "equal": the nearer R_inf point (up to order and signs).
        distance: ``(n,)`` the distance to it.
        grad_inf: ``(n,)`` the norm of the gradient of R_inf at the run.
        sample_L: the prompt length of the fixed sample of R_L.
        sample_prompts: its number of prompts.
        newton_eigenvalues: ``(n, 2 d)`` the Hessian spectrum of the sample's R_L where Newton
            from each run converged.
        newton_grad: ``(n,)`` the gradient norm there.
        newton_moved: ``(n,)`` how far Newton moved from the run.
        newton_to_split: ``(n,)`` the distance from there to the sample's split point (the
            stationary point of its R_L in the split family).
        split_eigenvalues: ``(2 d,)`` the Hessian spectrum of the sample's split point.
        bfgs_cos: ``(n,)`` the worst ``|cos|`` where BFGS on R_inf from each run ends.
        bfgs_risk: ``(n,)`` R_inf there.
        aligned_cos: the worst ``|cos|`` of the tilted minimiser of R_inf.
    """

    inits: np.ndarray
    theta: np.ndarray
    nearest: np.ndarray
    distance: np.ndarray
    grad_inf: np.ndarray
    sample_L: int
    sample_prompts: int
    newton_eigenvalues: np.ndarray
    newton_grad: np.ndarray
    newton_moved: np.ndarray
    newton_to_split: np.ndarray
    split_eigenvalues: np.ndarray
    bfgs_cos: np.ndarray
    bfgs_risk: np.ndarray
    aligned_cos: float

    @property
    def n(self) -> int:
        """The number of stalled runs."""
        return int(self.inits.size)

    def as_data(self) -> dict:
        """JSON data for a results file."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_data(cls, data: dict) -> "Stall":
        """The inverse of ``as_data``."""
        kw = {k: np.asarray(x) if isinstance(x, list) else x for k, x in data.items()}
        for k in ("inits", "nearest"):
            kw[k] = np.asarray(kw[k], dtype=str)
        return cls(**kw)


def stalls(runs: dict[str, Runs], X, split_L: stationary.StationaryPoint, bfgs: bool = True) -> Stall:
    """Where the runs of ``runs`` that ended between the centroids are (K = 2, default
    mixture): their distance to the split and equal points of R_inf and the gradient of
    R_inf there; Newton's method on the empirical R_L of the fixed sample ``X`` (n, L, d)
    from each (``stationary.empirical_stationary``), with the Hessian spectrum where it
    converges and its distance to ``split_L``, the sample's split point
    (``landscape.check_sample``); and, with ``bfgs``, BFGS on R_inf from each
    (``stationary.large_L_minimiser``; NaN without)."""
    mix = orthogonal_mixture()
    pts = special_points()
    rows = [(init, th) for init, r in runs.items() for th, c in zip(r.final, r.codes) if c == sweeps.BETWEEN]
    inits = np.array([init for init, _ in rows], dtype=str)
    theta = np.array([th for _, th in rows]).reshape(-1, 2, mix.d)
    d_split = sweeps.head_distance(theta, pts["split"].theta)
    d_equal = sweeps.head_distance(theta, pts["equal"].theta)
    ev, grad, moved, to_split, b_cos, b_risk, g_inf = ([] for _ in range(7))
    for th in theta:
        p = stationary.empirical_stationary(th, X, LAM)
        ev.append(p.eigenvalues)
        grad.append(p.grad_norm)
        moved.append(np.linalg.norm(p.theta - th))
        to_split.append(sweeps.head_distance(p.theta, split_L.theta))
        g_inf.append(np.linalg.norm(np.asarray(stationary.risk_and_grad(th, mix, LAM)[1])))
        if bfgs:
            th_inf, r_inf = stationary.large_L_minimiser(th, mix, LAM)
            b_cos.append(alignment(th_inf, mix.centroids).min())
            b_risk.append(r_inf)
        else:
            b_cos.append(np.nan)
            b_risk.append(np.nan)
    n = len(rows)
    arr = lambda x, *shape: np.asarray(x, np.float64).reshape(n, *shape)  # noqa: E731
    return Stall(inits, theta, np.where(d_split <= d_equal, "split", "equal").astype(str),
                 np.minimum(d_split, d_equal), arr(g_inf), int(np.shape(X)[1]), int(np.shape(X)[0]),
                 arr(ev, 2 * mix.d), arr(grad), arr(moved), arr(to_split),
                 np.asarray(split_L.eigenvalues), arr(b_cos), arr(b_risk),
                 float(alignment(pts["aligned"].theta, mix.centroids).min()))


def separability_values(size: str = "small") -> tuple[float, ...]:
    """r / sigma of the separability sweep (r = 2 fixed, sigma = r / value)."""
    return (2.0, 3.0, 4.0, 8.0) if size != "full" else (1.5, 2.0, 3.0, 4.0, 6.0, 8.0)


def separability(size: str = "small") -> dict[float, Runs]:
    """r / sigma -> runs (r = 2, lam = 1, d = 5, small start)."""
    return {s: _train(size, sigma=DEFAULT.r / s) for s in separability_values(size)}


def dimension_values(size: str = "small") -> tuple[int, ...]:
    """Dimensions of the dimension sweep."""
    return (5, 20) if size != "full" else (3, 5, 10, 20, 50)


def dimension(size: str = "small") -> dict[int, Runs]:
    """d -> runs (K = 2, lam = 1, small start), learning rate ``sweeps.scaled_lr``."""
    b = sweeps.budget(size)
    return {d: _train(size, d=d, lr=sweeps.scaled_lr(b.lr, d)) for d in dimension_values(size)}


def k_heads(size: str = "small", K: int = 3) -> Runs:
    """K orthogonal centroids (r = 2, sigma = 0.5, d = 5) with K heads, small start."""
    return _train(size, K=int(K))


def _mirror(theta: np.ndarray) -> np.ndarray:
    """The heads with e_2 and e_3 swapped: the mirror image of a K = 3 configuration."""
    return theta[..., [0, 2, 1, *range(3, theta.shape[-1])]]


@dataclass(frozen=True)
class K3Training:
    """Trained K = 3 runs against the two large-L points.

    Attributes:
        to_symmetric: ``(S,)`` distance from each run's final heads to the symmetric point
            (up to the order and signs of the heads).
        to_rotated: ``(S,)`` distance to the nearer of the rotated minimiser and its mirror
            image.
        bfgs_cos: ``(S, 3)`` matched ``|cos|`` where BFGS on R_inf from each run ends.
        bfgs_risk: ``(S,)`` R_inf there.
        bfgs_to_rotated: ``(S,)`` distance from there to the rotated minimiser (or mirror).
        bfgs_to_symmetric: ``(S,)`` distance from there to the symmetric point.
    """

    to_symmetric: np.ndarray
    to_rotated: np.ndarray
    bfgs_cos: np.ndarray
    bfgs_risk: np.ndarray
    bfgs_to_rotated: np.ndarray
    bfgs_to_symmetric: np.ndarray

    def as_data(self) -> dict:
        """JSON data for a results file."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_data(cls, data: dict) -> "K3Training":
        """The inverse of ``as_data``."""
        return cls(**{k: np.asarray(x, np.float64) for k, x in data.items()})


def _to_rotated(theta, rot) -> np.ndarray:
    return np.minimum(sweeps.head_distance(theta, rot), sweeps.head_distance(theta, _mirror(rot)))


def k3_against(runs: Runs, symmetric, rotated, bfgs: bool = True) -> K3Training:
    """Distances of the K = 3 runs' final heads to the symmetric point and to the rotated
    minimiser (``symmetric``, ``rotated``: ``(3, d)`` heads), and, with ``bfgs``, where BFGS
    on R_inf from each run ends."""
    mix = orthogonal_mixture(K=3)
    sym, rot = np.asarray(symmetric, np.float64), np.asarray(rotated, np.float64)
    cos, risk, to_rot, to_sym = [], [], [], []
    if bfgs:
        for th in runs.final:
            t, r = stationary.large_L_minimiser(th, mix, LAM)
            cos.append(alignment(t, mix.centroids))
            risk.append(r)
            to_rot.append(_to_rotated(t, rot))
            to_sym.append(sweeps.head_distance(t, sym))
    return K3Training(sweeps.head_distance(runs.final, sym), _to_rotated(runs.final, rot),
                      np.asarray(cos).reshape(-1, 3), np.asarray(risk), np.asarray(to_rot),
                      np.asarray(to_sym))


LAMS_TILT = (0.25, 0.5, 1.0, 2.0, 4.0)
"""Temperatures of the tilt experiment."""


def lam_per_seed(size: str = "small") -> tuple[float, ...]:
    """The temperature of each seed of the tilt run: ``LAMS_TILT`` repeated as evenly as
    the number of seeds allows (extra seeds go to lam = 1), sorted."""
    S = sweeps.budget(size).seeds
    per = S // len(LAMS_TILT)
    lams = [lam for lam in LAMS_TILT for _ in range(per)] + [1.0] * (S - per * len(LAMS_TILT))
    return tuple(sorted(lams))


@dataclass(frozen=True)
class Tilt:
    """The measured tilt against lam.

    Attributes:
        lams: ``(S,)`` the inverse temperature of each seed.
        cos: ``(S, 2)`` the matched ``|cos|`` of each head of each seed (tail-averaged).
        grid: ``LAMS_TILT``.
        theory: ``(len(grid),)`` the large-L tilted minimiser's ``|cos|`` at each lam.
        measured: ``(len(grid),)`` the median measured ``|cos|`` at each lam.
    """

    lams: np.ndarray
    cos: np.ndarray
    grid: tuple[float, ...]
    theory: np.ndarray
    measured: np.ndarray


@lru_cache(maxsize=None)
def tilt(size: str = "small") -> Tilt:
    """One ``fit_many`` call with one inverse temperature per seed, started near the centroids (the
    tilt is a property of the minimiser, so the runs start next to it)."""
    lams = lam_per_seed(size)
    res = sweeps.run_seeds(size, lam=lams, init="near")
    cos = alignment(sweeps.tail_average(res), orthogonal_mixture().centroids)
    lam_arr = np.asarray(lams)
    return Tilt(lam_arr, cos, LAMS_TILT, np.array([tilted_cos(lam, DEFAULT.r, DEFAULT.sigma) for lam in LAMS_TILT]),
                np.array([np.median(cos[lam_arr == lam]) for lam in LAMS_TILT]))


# --------------------------------------------------------------------------- committed

LONG = "training-long"
LONG_SOURCES = ("attnclust/book/sweeps.py", "attnclust/train.py", "attnclust/stationary.py",
                "attnclust/book/experiments/landscape.py", "attnclust/mixture.py", "attnclust/metrics.py")


@committed(LONG, sources=LONG_SOURCES,
           description="The four initialisations and K = 3 at ten times the book's steps, twice its seeds")
def long_budget(size: str = "full") -> dict:
    """The four initialisations (K = 2) and K = 3 at the "long" budget (``size`` "full"; a
    tiny "test" budget for "small"), with the stalled runs' analysis and the K = 3 runs
    against the large-L points."""
    from attnclust.book.experiments.landscape import check_sample, k3_points

    budget = "long" if size == "full" else "test"
    inits = init_regimes(budget)
    k3 = k_heads(budget)
    pts = k3_points()
    X, split_L = check_sample("split", DEFAULT.L, tokens=50_000 if size == "full" else 800, s=20_000)
    return {"budget": budget, "inits": {k: r.as_data() for k, r in inits.items()},
            "stall": stalls(inits, X, split_L).as_data(),
            "k3": k3.as_data(),
            "k3_against": k3_against(k3, pts.symmetric.theta, pts.rotated.theta).as_data()}


@dataclass(frozen=True)
class StoredLong:
    """``attnclust/book/results/training-long.json`` read back."""

    inits: dict[str, Runs]
    stall: Stall
    k3: Runs
    k3_against: K3Training
    stored: results.Stored


def stored_long() -> StoredLong:
    """Read the committed long-budget runs (see ``long_budget``)."""
    st = results.load(LONG)
    d = st.data
    return StoredLong({k: Runs.from_data(r) for k, r in d["inits"].items()},
                      Stall.from_data(d["stall"]), Runs.from_data(d["k3"]),
                      K3Training.from_data(d["k3_against"]), st)

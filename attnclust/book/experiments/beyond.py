"""The experiments of the chapter "Beyond the paper" (chapters/beyond.md) on mixtures that break
the paper's assumptions, apart from drawing (``attnclust.book.figures.beyond`` draws them; the
digits experiment is separate).

- ``settings``: the seven mixtures (all d = 5, centroids of norm r = 2);
- ``train_settings`` (committed, ``attnclust/book/results/beyond-training.json``): the two-head layer trained
  on every setting from ``SEEDS`` small random starts in one vmapped run (``ac.fit_mixtures``),
  the large-L local minimiser reached by BFGS from each trained run (isotropic mixtures), and
  runs started near the aligned point for the default and the symmetric centred mixture;
  read back by ``stored_training`` as one ``SettingRuns`` per setting and a ``NearStart``;
- ``scores``: the adjusted Rand index of the trained heads' assignments (every seed) and of
  identity attention and k-means on the same fresh prompts;
- ``off_manifold_gradient``: the symmetry check of the centred mixture;
- ``variances``: identity attention on the unequal-variance mixture against the general and
  the isotropic large-L formulas and a long prompt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

import attnclust as ac

from attnclust import baselines, general_mixture, stationary, stats
from attnclust.book import results
from attnclust.limits import general_identity_limit
from attnclust.train import fit_mixtures
from attnclust.book.experiments import committed
from attnclust.setting import DEFAULT
from attnclust.book import sizes

__all__ = [
    "D", "R", "SIGMA", "L", "LAM", "LAM_ID", "STACK_LS", "STACK_DEPTH", "SIZES", "SEEDS",
    "settings", "span_coverage", "SettingRuns", "NearStart", "train_settings", "stored_training",
    "StoredTraining", "Scores", "scores", "off_manifold_gradient", "Variances", "variances",
]

D, R, SIGMA, L, LAM = DEFAULT.d, DEFAULT.r, DEFAULT.sigma, DEFAULT.L, DEFAULT.lam
"""The default setting (dimension, centroid norm, noise level, prompt length, temperature)."""
LAM_ID = 0.7
"""Identity attention's temperature for the oracle assignment (about the bound's best lam
at the default setting, 0.691)."""
STACK_LS, STACK_DEPTH = 0.5, 8
"""The identity-stack read-out stacks STACK_DEPTH identity layers at lam = STACK_LS / sigma_eff^2,
with sigma_eff^2 = (noise floor) / d, the mixture's true value: an oracle, since a prompt does
not carry its noise level."""

SIZES = {
    "small": dict(steps=1000, batch=16, n=64, n_base=16, n_mc=4000, L_long=200, n_long=8, n_lam=8, near_steps=500),
    "full": dict(steps=20000, batch=64, n=2048, n_base=512, n_mc=200000, L_long=4000, n_long=256, n_lam=30, near_steps=10000),
    # for the test suite only: every code path, tiny
    "test": dict(steps=40, batch=4, n=8, n_base=3, n_mc=200, L_long=60, n_long=2, n_lam=3, near_steps=20),
}
"""Budgets of the chapter's computations by size ("small" is the book's)."""

SEEDS = {"small": 16, "full": 16, "test": 2}
"""Training seeds per setting in ``train_settings``."""

PM = "centred K=4 (+-r e1, +-r e2)"
"""The name of the symmetric centred mixture."""
NEAR = ("default", PM)
"""The settings trained from a start near the aligned point 0.9 (e_1, e_2)."""


def settings() -> dict:
    """The mixtures of the chapter, by display name (all d = 5, r = 2)."""
    m = ac.orthogonal_mixture(K=2, d=D, r=R, sigma=SIGMA)
    return {
        "default": m,
        "unequal weights (0.8, 0.2)": ac.orthogonal_mixture(K=2, d=D, r=R, sigma=SIGMA, weights=[0.8, 0.2]),
        "unequal variances (0.3, 0.7)": general_mixture.per_component_sigma_mixture([0.3, 0.7], r=R, d=D),
        "anisotropic (0.8 along, 0.3 across)": general_mixture.anisotropic_mixture(r=R, d=D, along=0.8, across=0.3),
        "centroids at 60 degrees": ac.angled_mixture(math.pi / 3, r=R, sigma=SIGMA, d=D),
        "centred K=2 (antipodal)": m.centred(),
        PM: ac.plusminus_mixture(r=R, sigma=SIGMA, d=D),
    }


def _size(size: str) -> dict:
    return sizes.pick(SIZES, size)


def span_coverage(theta: np.ndarray, centroids: np.ndarray) -> float:
    """min_c ||P mu_c|| / ||mu_c||, P the orthogonal projection on span(theta_1..theta_H):
    1 when every centroid lies in the space the layer's outputs live in."""
    q, _ = np.linalg.qr(np.asarray(theta, float).T)
    mu = np.asarray(centroids, float)
    return float(np.min(np.linalg.norm(mu @ q, axis=-1) / np.linalg.norm(mu, axis=-1)))


def as_general(m):
    """``m`` as a ``GeneralMixture`` (isotropic mixtures converted)."""
    return m if isinstance(m, general_mixture.GeneralMixture) else general_mixture.GeneralMixture.from_gaussian(m)


@dataclass(frozen=True)
class SettingRuns:
    """The seeds of one setting, trained from small random starts.

    Attributes:
        name: the setting's display name.
        theta: ``(S, 2, d)`` the final heads.
        cos: ``(S, 2)`` their matched ``|cos|`` with the centroids.
        coverage: ``(S,)`` ``span_coverage`` of the centroids by the heads.
        risk: ``(S,)`` the final minibatch risk.
        theta_inf: ``(S, 2, d)`` the large-L local minimiser reached by BFGS from each run
            (isotropic mixtures; empty otherwise).
        cos_inf: ``(S, 2)`` its matched ``|cos|`` (empty if no large-L risk).
        risk_inf: ``(S,)`` R_inf there (empty if no large-L risk).
    """

    name: str
    theta: np.ndarray
    cos: np.ndarray
    coverage: np.ndarray
    risk: np.ndarray
    theta_inf: np.ndarray
    cos_inf: np.ndarray
    risk_inf: np.ndarray

    @property
    def seeds(self) -> int:
        """The number of seeds S."""
        return int(self.cos.shape[0])

    @property
    def has_inf(self) -> bool:
        """Whether the setting has a large-L risk (an isotropic mixture)."""
        return self.cos_inf.size > 0

    def worst(self, large_L: bool = False) -> np.ndarray:
        """``(S,)`` the worst head's ``|cos|`` per seed, at L = 50 or at the large-L point."""
        return (self.cos_inf if large_L else self.cos).min(axis=-1)

    def aligned(self, level: float = 0.95, large_L: bool = False) -> stats.Interval:
        """The frequency of seeds whose worst head has ``|cos|`` >= ``level``, with its exact
        binomial interval."""
        return stats.binomial_interval(int(np.sum(self.worst(large_L) >= level)), self.seeds)

    def as_data(self) -> dict:
        """JSON data for the results file."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_data(cls, data: dict) -> "SettingRuns":
        """The inverse of ``as_data``."""
        return cls(data["name"], *(np.asarray(data[k], np.float64) for k in list(cls.__dataclass_fields__)[1:]))


@dataclass(frozen=True)
class NearStart:
    """Runs started near the aligned point 0.9 (e_1, e_2) (``NEAR`` settings).

    Attributes:
        cos: setting name -> ``(S, 2)`` matched ``|cos|`` with e_1, e_2 after training.
        cos_inf: setting name -> ``(2,)`` the same for the large-L minimiser from 0.9 (e_1, e_2).
        risk_inf: setting name -> R_inf there.
    """

    cos: dict
    cos_inf: dict
    risk_inf: dict


def _train_all(size: str, seeds: int):
    """Every setting x seed in one ``fit_mixtures`` run: heads (7, S, 2, d) and final risks."""
    s = _size(size)
    sets = list(settings().values())
    key = jax.random.PRNGKey(11)
    # mixture i, seed j is run i * seeds + j
    mixtures = [m for m in sets for _ in range(seeds)]
    trained = fit_mixtures(key, mixtures, H=2, lam=LAM, steps=s["steps"], batch=s["batch"], L=L,
                           record_every=s["steps"] // 20, progress=False)
    theta = np.asarray(trained.theta, np.float64).reshape(len(sets), seeds, 2, D)
    risk = np.asarray(trained.risk[:, -1], np.float64).reshape(len(sets), seeds)
    return theta, risk


def _near_runs(size: str, seeds: int) -> NearStart:
    s = _size(size)
    sets = settings()
    key = jax.random.fold_in(jax.random.PRNGKey(11), 7)
    base = np.zeros((2, D))
    base[0, 0] = base[1, 1] = 0.9
    start = base + 0.05 * np.asarray(jax.random.normal(jax.random.fold_in(key, 99), (len(NEAR) * seeds, 2, D)))
    near = fit_mixtures(key, [sets[n] for n in NEAR for _ in range(seeds)], H=2, lam=LAM,
                        steps=s["near_steps"], batch=s["batch"], L=L, init=start,
                        record_every=s["near_steps"] // 20, progress=False).theta
    near = np.asarray(near, np.float64).reshape(len(NEAR), seeds, 2, D)
    cos, cos_inf, risk_inf = {}, {}, {}
    for i, n in enumerate(NEAR):
        cos[n] = ac.alignment(near[i], np.eye(2, D))
        th_inf, r_inf = stationary.large_L_minimiser(base, sets[n], LAM)
        cos_inf[n] = ac.alignment(th_inf, np.eye(2, D))
        risk_inf[n] = r_inf
    return NearStart(cos, cos_inf, risk_inf)


NAME = "beyond-training"
SOURCES = ("attnclust/train.py", "attnclust/general_mixture.py", "attnclust/mixture.py",
           "attnclust/stationary.py", "attnclust/metrics.py", "attnclust/risk.py")


@committed(NAME, sources=SOURCES,
           description="The two-head layer trained on the seven mixtures of 'Beyond the paper', 16 seeds each")
def train_settings(size: str = "full") -> dict:
    """Train every setting from ``SEEDS`` small random starts and from near the aligned point,
    and find the large-L minimiser from each run (``size`` "full": the book's training budget,
    16 seeds; "small": a tiny test budget)."""
    budget = "small" if size == "full" else "test"
    seeds = SEEDS["full" if size == "full" else "test"]
    theta, risk = _train_all(budget, seeds)
    rows = []
    for i, (name, m) in enumerate(settings().items()):
        mu = as_general(m).centroids
        th_inf, cos_inf, r_inf = [], [], []
        if isinstance(m, ac.GaussianMixture):
            for th in theta[i]:
                t, r = stationary.large_L_minimiser(th, m, LAM)
                th_inf.append(t)
                cos_inf.append(ac.alignment(t, mu))
                r_inf.append(r)
        rows.append(SettingRuns(name, theta[i], ac.alignment(theta[i], mu),
                                np.array([span_coverage(t, mu) for t in theta[i]]), risk[i],
                                np.asarray(th_inf).reshape(-1, 2, D), np.asarray(cos_inf).reshape(-1, 2),
                                np.asarray(r_inf)).as_data())
    near = _near_runs(budget, seeds)
    return {"budget": budget, "seeds": seeds, "steps": _size(budget)["steps"],
            "batch": _size(budget)["batch"], "near_steps": _size(budget)["near_steps"],
            "settings": rows, "near": {"cos": near.cos, "cos_inf": near.cos_inf, "risk_inf": near.risk_inf}}


@dataclass(frozen=True)
class StoredTraining:
    """``attnclust/book/results/beyond-training.json`` read back: the runs of every setting by name, the
    near-start runs, the training budget and the file's provenance."""

    runs: dict
    near: NearStart
    budget: dict
    stored: results.Stored


def stored_training() -> StoredTraining:
    """Read the committed training runs (see ``train_settings``)."""
    st = results.load(NAME)
    d = st.data
    runs = {r["name"]: SettingRuns.from_data(r) for r in d["settings"]}
    arr = lambda m: {k: np.asarray(x, np.float64) for k, x in m.items()}  # noqa: E731
    near = NearStart(arr(d["near"]["cos"]), arr(d["near"]["cos_inf"]), dict(d["near"]["risk_inf"]))
    return StoredTraining(runs, near, {k: d[k] for k in ("seeds", "steps", "batch", "near_steps")}, st)


@dataclass(frozen=True)
class Scores:
    """Adjusted Rand indices on the same fresh prompts of one setting.

    Attributes:
        heads: ``(S, n)`` the ARI of each trained seed's heads' assignments on each prompt.
        identity_oracle: ``(n,)`` identity attention read out at the nearest centroid.
        identity_stack: ``(n,)`` the identity stack at the true noise level (an oracle).
        kmeans: ``(n,)`` k-means per prompt.
    """

    heads: np.ndarray
    identity_oracle: np.ndarray
    identity_stack: np.ndarray
    kmeans: np.ndarray

    def mean(self, which: str) -> float:
        """The mean ARI of ``which`` over prompts (and seeds, for "heads")."""
        return float(np.mean(getattr(self, which)))


@lru_cache(maxsize=None)
def _prompts(size: str, i: int):
    m = as_general(list(settings().values())[i])
    return general_mixture.sample_general(jax.random.fold_in(jax.random.PRNGKey(12), i), m, _size(size)["n"], L)


def scores(runs: dict, size: str = "small") -> dict[str, Scores]:
    """The ARIs of every setting on ``SIZES[size]["n"]`` fresh prompts: the trained heads of
    ``runs`` (name -> ``SettingRuns``), identity attention (one layer at LAM_ID, and the
    stack at the true noise level: both oracles) and k-means."""
    k_base = jax.random.fold_in(jax.random.PRNGKey(11), 99)
    out = {}
    for i, (name, m) in enumerate(settings().items()):
        g = as_general(m)
        X, lab = _prompts(size, i)
        ari = lambda pred: np.asarray(ac.adjusted_rand(lab, pred), np.float64)  # noqa: E731
        stack = ac.identity_stack(X, STACK_LS / (g.noise_floor() / g.d), STACK_DEPTH)
        out[name] = Scores(
            np.stack([ari(ac.head_assignments(th, X)) for th in runs[name].theta]),
            ari(ac.nearest_centroid(ac.identity_attention(X, LAM_ID), g.centroids)),
            ari(baselines.output_clusters(k_base, stack[-1], g.K)),
            ari(baselines.kmeans_per_prompt_jax(k_base, X, g.K)[0]),
        )
    return out


def off_manifold_gradient(name: str) -> float:
    """d R_inf / d theta_1[e_2] at theta = 0.9 (e_1, e_2), lam = 1: the derivative along the
    tilt direction (prop-beyond-symmetry: 0 for a mixture with the reflection symmetries)."""
    th = np.zeros((2, D))
    th[0, 0] = th[1, 1] = 0.9
    _, grad = stationary.risk_and_grad(th, settings()[name], LAM)
    return float(np.asarray(grad)[0, 1])


@dataclass(frozen=True)
class Variances:
    """Identity attention on the unequal-variance mixture (sigma = 0.3, 0.7) against lam.

    Attributes:
        lams: the temperatures.
        D_general: the distortion by the general large-L formula (Monte Carlo over z).
        D_isotropic: by the isotropic formula with the pooled sigma.
        D_long: measured on prompts of ``L_long`` tokens.
        capture_general: the fraction of the narrow cloud's tokens whose large-L output is
            nearer the wide centroid.
        capture_long: the same, measured on the long prompts.
        L_long: the long prompts' length.
    """

    lams: np.ndarray
    D_general: np.ndarray
    D_isotropic: np.ndarray
    D_long: np.ndarray
    capture_general: np.ndarray
    capture_long: np.ndarray
    L_long: int


@lru_cache(maxsize=None)
def variances(size: str = "small") -> Variances:
    """The unequal-variance identity experiment at ``size``."""
    s = _size(size)
    k_var = jax.random.split(jax.random.PRNGKey(11), 5)[2]
    gv = settings()["unequal variances (0.3, 0.7)"]
    lams = np.geomspace(0.1, 4.0, s["n_lam"])
    Z, labz = general_mixture.sample_general(k_var, gv, 1, s["n_mc"])
    Z, labz = Z[0], np.asarray(labz[0])
    own = gv.centroids[labz]
    Xl, labl = general_mixture.sample_general(jax.random.fold_in(k_var, 1), gv, s["n_long"], s["L_long"])
    own_l = ac.own_centroids(gv.centroids, labl)
    narrow_l = np.asarray(labl) == 0
    iso = ac.GaussianMixture(jnp.asarray(gv.weights), jnp.asarray(gv.centroids), math.sqrt(gv.noise_floor() / D))
    out = {k: [] for k in ("D_general", "D_isotropic", "D_long", "capture_general", "capture_long")}
    for lam in lams:
        q = np.asarray(general_identity_limit(Z, gv, float(lam)))
        out["D_general"].append(float(np.mean(np.sum((q - own) ** 2, -1))))
        qi = np.asarray(ac.identity_limit(Z, iso, float(lam)))
        out["D_isotropic"].append(float(np.mean(np.sum((qi - own) ** 2, -1))))
        ql = ac.identity_attention(Xl, float(lam), block=100)
        out["D_long"].append(float(ac.distortion(ql, own_l)))
        # narrow cloud's tokens (component 0) whose output is nearest the wide centroid
        out["capture_general"].append(float(np.mean(np.asarray(ac.nearest_centroid(q, gv.centroids))[labz == 0] == 1)))
        out["capture_long"].append(float(np.mean(np.asarray(ac.nearest_centroid(ql, gv.centroids))[narrow_l] == 1)))
    return Variances(lams, *(np.asarray(out[k]) for k in out), int(s["L_long"]))

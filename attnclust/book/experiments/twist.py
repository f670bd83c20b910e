"""The twisted minimiser of K = 3 against the prompt length L (chapter "Training dynamics",
section "More centroids").

For K = 3 orthogonal centroids the large-L risk R_inf has a *symmetric* stationary point (a
saddle) and a *rotated* minimiser, the symmetric point with every head turned about the
mixture-mean axis e_1 + e_2 + e_3 (``landscape.k3_points``). Neither is stationary for the
finite-L risk R_L, so comparing R_L at the two says nothing about R_L's own minima. This
experiment minimises R_L itself: for each L of a grid and each of several independent samples
of prompts, L-BFGS on the sample's R_L started at the rotated minimiser of R_inf, then
Newton's method to the stationary point (``stationary.empirical_stationary``), whose full
Hessian spectrum says whether it is a local minimum. The result is the **twist** of that
minimiser, the signed angle by which its heads are turned about the axis from the symmetric
configuration (``signed_twist``; positive in the sense of the rotated minimiser), per L and
sample: zero up to the sampling noise where the twisted minimum has merged into the symmetric
point, positive and growing towards R_inf's twist beyond.

It takes several minutes on a 2-core CPU, so it is a committed experiment
(``python -m attnclust experiment training-k3-twist``, written to
``attnclust/book/results/training-k3-twist.json``), read by the chapter with ``stored``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float

from attnclust import _validate as v
from attnclust.book import results
from attnclust import stationary, stats
from attnclust.mixture import orthogonal_mixture, sample
from attnclust.risk import empirical_risk
from attnclust.book.experiments import committed
from attnclust.book.experiments import landscape as ls
from attnclust.setting import DEFAULT
from attnclust.book import sizes

__all__ = ["SIZES", "Twist", "signed_twist", "minimise_empirical", "twist", "experiment", "stored"]

LAM = DEFAULT.lam
SIZES: dict[str, dict] = {
    # the committed run: six independent samples of about 20 000 tokens at every L
    "full": dict(Ls=(50, 70, 100, 200, 400), samples=6, tokens=20_000),
    # tests: every code path, tiny
    "test": dict(Ls=(50, 100), samples=2, tokens=1_000),
}
"""Grids of prompt lengths, samples per L and tokens per sample."""


def signed_twist(theta: Float[ArrayLike, "3 d"], reference: Float[ArrayLike, "3 d"]) -> float:
    """The mean signed angle (degrees) by which the heads of ``theta`` are turned about the
    mixture-mean axis u = (e_1 + e_2 + e_3) / sqrt 3 from the matched heads of ``reference``
    (K = 3): for each head, after matching heads and signs with the centroids (as
    ``landscape.twist_angle``, which gives the unsigned angle), the angle from the
    reference head's component orthogonal to u to this head's, positive counter-clockwise
    about u. A mirror image has the opposite sign."""
    theta = v.heads("theta", theta, H=3)
    reference = v.heads("reference", reference, d=theta.shape[1], d_from="theta", H=3)
    theta, reference = (np.asarray(t, np.float64) for t in (theta, reference))
    mu = np.eye(3, theta.shape[1])
    u = np.full(3, 1 / np.sqrt(3))
    angles = []
    for h_t, h_r in zip(ls.matched_heads(theta, mu), ls.matched_heads(reference, mu)):
        a, b = (h[:3] - (h[:3] @ u) * u for h in (h_t, h_r))  # in the centroids' space
        angles.append(np.degrees(np.arctan2(np.cross(b, a) @ u, a @ b)))
    return float(np.mean(angles))


def minimise_empirical(
    theta0: Float[ArrayLike, "H d"], X: Float[ArrayLike, "n L d"], lam: float = LAM
) -> stationary.StationaryPoint:
    """A local minimum of the empirical risk R_L of the fixed sample ``X`` near ``theta0``:
    L-BFGS (scipy) on the sample's risk and its ``jax.grad`` from ``theta0``, then Newton's
    method (``stationary.empirical_stationary``) to make the gradient vanish; the result's
    Hessian ``eigenvalues`` say whether the end point is a minimum (L-BFGS only descends,
    so it is one unless it stopped at a saddle)."""
    from scipy.optimize import minimize

    theta0 = np.asarray(v.heads("theta0", theta0), np.float64)
    X = jnp.asarray(v.tokens("X", X, d=theta0.shape[1]), jnp.float32)
    lam = v.positive_finite("lam", lam)
    vg = jax.jit(jax.value_and_grad(empirical_risk))

    def fun(x):
        value, grad = vg(jnp.asarray(x.reshape(theta0.shape), jnp.float32), X, lam)
        return float(value), np.asarray(grad, np.float64).reshape(-1)

    res = minimize(fun, theta0.reshape(-1), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-6, "maxiter": 500})
    return stationary.empirical_stationary(res.x.reshape(theta0.shape), X, lam)


@dataclass(frozen=True)
class Twist:
    """The local minimum of R_L reached from the rotated minimiser of R_inf, per L and
    sample (see the module docstring).

    Attributes:
        setting: K, d, r, sigma, lam.
        Ls: the prompt lengths.
        n_prompts: prompts per sample at each L (about ``tokens`` tokens per sample).
        tokens: the tokens per sample asked for.
        twist: ``(len(Ls), samples)`` the signed twist (degrees) of the end point from the
            symmetric configuration (``signed_twist``; positive: the rotated minimiser's sense).
        smallest: ``(len(Ls), samples)`` the smallest Hessian eigenvalue of the sample's R_L
            at the end point.
        grad_norm: ``(len(Ls), samples)`` the gradient norm there.
        twist_inf: the twist of the rotated minimiser of R_inf itself (the limit L -> inf).
    """

    setting: dict
    Ls: tuple[int, ...]
    n_prompts: tuple[int, ...]
    tokens: int
    twist: np.ndarray
    smallest: np.ndarray
    grad_norm: np.ndarray
    twist_inf: float

    @property
    def samples(self) -> int:
        """Independent samples of prompts per L."""
        return self.twist.shape[1]

    def interval(self, L: int, which: str = "twist") -> stats.Interval:
        """The mean over samples of the twist (or "smallest") at ``L``, with its t interval."""
        return stats.mean_interval(getattr(self, which)[self.Ls.index(int(L))])

    def as_data(self) -> dict:
        """The result as JSON data (the results file)."""
        return {"setting": self.setting, "Ls": list(self.Ls), "n_prompts": list(self.n_prompts),
                "tokens": self.tokens, "twist": self.twist, "smallest": self.smallest,
                "grad_norm": self.grad_norm, "twist_inf": self.twist_inf}

    @classmethod
    def from_data(cls, data: dict) -> "Twist":
        """The inverse of ``as_data``."""
        arr = lambda k: np.asarray(data[k], np.float64)  # noqa: E731
        return cls(dict(data["setting"]), tuple(int(L) for L in data["Ls"]),
                   tuple(int(n) for n in data["n_prompts"]), int(data["tokens"]), arr("twist"),
                   arr("smallest"), arr("grad_norm"), float(data["twist_inf"]))


def twist(size: str = "full", progress: bool = False) -> Twist:
    """Compute the ``Twist`` at ``size`` (``SIZES``): one fixed sample per (L, sample) of the
    K = 3 default mixture, the same keys at every call."""
    from tqdm.auto import tqdm

    cfg = sizes.pick(SIZES, size)
    Ls, S, tokens = cfg["Ls"], cfg["samples"], cfg["tokens"]
    mix = orthogonal_mixture(K=3)
    k3 = ls.k3_points()
    sym, rot = k3.symmetric.theta, k3.rotated.theta
    sense = np.sign(signed_twist(rot, sym))
    n_prompts = tuple(ls.prompts_per_sample(L, tokens) for L in Ls)
    tw, smallest, grad = (np.zeros((len(Ls), S)) for _ in range(3))
    bar = tqdm(total=len(Ls) * S, desc="K = 3 twist", disable=not progress)
    for i, (L, n) in enumerate(zip(Ls, n_prompts)):
        for s in range(S):
            key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(3033), L), s)
            X, _ = sample(key, mix, n, L)
            p = minimise_empirical(rot, X, LAM)
            tw[i, s] = sense * signed_twist(p.theta, sym)
            smallest[i, s], grad[i, s] = p.eigenvalues[0], p.grad_norm
            bar.update()
    bar.close()
    return Twist(ls.point_setting("symmetric"), tuple(Ls), n_prompts, tokens, tw, smallest, grad,
                 float(sense * signed_twist(rot, sym)))


NAME = "training-k3-twist"


@committed(NAME, sources=("attnclust/book/experiments/landscape.py", "attnclust/stationary.py",
                          "attnclust/mixture.py", "attnclust/risk.py", "attnclust/limits.py",
                          "attnclust/metrics.py"),
           description="Twist of the local minimum of R_L reached from the rotated K=3 minimiser, against L")
def experiment(size: str = "full") -> dict:
    """The committed twist against L at ``size``."""
    return twist(size, progress=True).as_data()


def stored() -> tuple[Twist, results.Stored]:
    """Read ``attnclust/book/results/training-k3-twist.json`` (see ``experiment``): the ``Twist`` and the
    file's provenance."""
    st = results.load(NAME)
    return Twist.from_data(st.data), st

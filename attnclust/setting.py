"""The default setting of the book and of the library, defined once.

Every chapter, figure, experiment, test and benchmark that works "at the default setting"
reads it from here: K = 2 orthogonal centroids of norm r in dimension d, isotropic noise
sigma, inverse temperature lam, prompts of L tokens (chapter "Gaussian mixtures and clustering",
def-mixture, and chapter "The two-head layer and its population risk"). Changing a value here
is the one edit; what it invalidates (the committed results files, the book's pages) is
re-run after it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from . import _validate as v


@dataclass(frozen=True)
class Setting:
    """A mixture and a layer's setting: what a claim of the book is measured at.

    Attributes:
        K: number of components (and of heads), 1 <= K <= d.
        d: dimension of the tokens.
        r: norm of every centroid (``mu_c = r e_c``); the separation is r / sigma.
        sigma: standard deviation of the isotropic noise.
        lam: the attention's temperature.
        L: tokens per prompt.
    """

    K: int = 2
    d: int = 5
    r: float = 2.0
    sigma: float = 0.5
    lam: float = 1.0
    L: int = 50

    def __post_init__(self):
        K, d = v.orthogonal_sizes(self.K, self.d)
        object.__setattr__(self, "K", K)
        object.__setattr__(self, "d", d)
        for name in ("r", "sigma", "lam"):
            object.__setattr__(self, name, v.positive_finite(name, getattr(self, name)))
        object.__setattr__(self, "L", v.positive_int("L", self.L))

    def replace(self, **changes) -> Setting:
        """This setting with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def mixture_args(self) -> dict:
        """``dict(K=, d=, r=, sigma=)``: the arguments of ``orthogonal_mixture``."""
        return dict(K=self.K, d=self.d, r=self.r, sigma=self.sigma)

    def as_dict(self) -> dict:
        """Every field by name (for a claim's setting)."""
        return dataclasses.asdict(self)


DEFAULT = Setting()
"""The default setting: K = 2, d = 5, r = 2, sigma = 0.5, lam = 1, L = 50."""

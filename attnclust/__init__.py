"""attnclust: attention-based clustering in JAX, the library behind the book.

The flow is one-directional (DESIGN.md): mixture (data) -> attention (layers) -> limits and
risk -> train -> metrics -> figures and widgets -> chapters. Everything public is
re-exported here.
"""

from .attention import identity_attend, identity_attention, two_head_attend, two_head_layer
from .limits import head_coefficients, head_output_limit, identity_limit
from .metrics import (
    abs_cosines,
    adjusted_rand,
    alignment,
    distortion,
    head_assignments,
    matching,
    noise_floor,
)
from .mixture import (
    GaussianMixture,
    orthogonal_mixture,
    random_orthogonal_centroids,
    sample,
    sample_in_context,
)
from .risk import empirical_risk, population_risk, population_risk_mc
from .train import INITS, FitResult, draw_from_mixture, fit, fit_many, fit_sampler, init_theta

__version__ = "0.1.0"

__all__ = [
    "GaussianMixture", "orthogonal_mixture", "random_orthogonal_centroids", "sample",
    "sample_in_context", "two_head_layer", "two_head_attend", "identity_attention",
    "identity_attend", "head_coefficients",
    "head_output_limit", "identity_limit", "empirical_risk", "population_risk",
    "population_risk_mc", "INITS", "FitResult", "fit", "fit_many", "fit_sampler",
    "draw_from_mixture", "init_theta",
    "abs_cosines", "alignment", "matching", "head_assignments", "distortion",
    "noise_floor", "adjusted_rand",
]

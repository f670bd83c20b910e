"""attnclust: attention-based clustering in JAX, the library behind the book.

The flow is one-directional: mixture (data) -> attention (layers) -> limits and risk ->
train -> metrics -> figures and widgets -> chapters. Everything public is re-exported here
and documented, in that order, on the book's API reference page (chapters/api.md).
"""

from .attention import (
    identity_attend,
    identity_attention,
    identity_stack,
    two_head_attend,
    two_head_layer,
)
from .limits import head_coefficients, head_output_limit, identity_limit
from .metrics import (
    abs_cosines,
    adjusted_rand,
    alignment,
    distortion,
    head_assignments,
    matching,
    nearest_centroid,
    noise_floor,
    own_centroids,
    within_spread,
)
from .mixture import (
    GaussianMixture,
    angled_mixture,
    orthogonal_mixture,
    plusminus_mixture,
    random_orthogonal_centroids,
    sample,
    sample_in_context,
)
from .risk import empirical_risk, population_risk, population_risk_mc
from .setting import DEFAULT, Setting
from .train import (
    INITS,
    FitResult,
    TrainConfig,
    draw_from_mixture,
    fit,
    fit_many,
    fit_mixtures,
    fit_sampler,
    init_theta,
    make_step,
    risk_loss,
)

__version__ = "0.1.0"

__all__ = [
    "Setting", "DEFAULT", "TrainConfig",
    "GaussianMixture", "orthogonal_mixture", "angled_mixture", "plusminus_mixture",
    "random_orthogonal_centroids", "sample", "sample_in_context", "two_head_layer",
    "two_head_attend", "identity_attention", "identity_attend", "identity_stack",
    "head_coefficients",
    "head_output_limit", "identity_limit", "empirical_risk", "population_risk",
    "population_risk_mc", "INITS", "FitResult", "fit", "fit_many", "fit_sampler",
    "fit_mixtures", "draw_from_mixture", "init_theta", "risk_loss", "make_step",
    "abs_cosines", "alignment", "matching", "head_assignments", "distortion",
    "noise_floor", "adjusted_rand", "own_centroids", "nearest_centroid", "within_spread",
]

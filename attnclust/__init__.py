"""attnclust: attention-based clustering in JAX, the library behind the book.

This package is the science core; ``attnclust.book`` is the book's machinery (experiments,
figures, explorers, claims) and ``attnclust.assignments`` the course grader, and nothing
here imports either. The core's modules build on one another in one direction (an arrow
``a -> b``: b imports a, directly or through the modules between):

    setting -> mixture -> general_mixture -> limits
    mixture -> risk -> stationary
    setting -> symbolic
    mixture -> metrics -> train
    attention -> train
    general_mixture -> train
    baselines -> temperature
    train -> in_context

and ``attention`` (the layers), ``stats`` and ``digits`` import none of the others
(``setting``, the default setting, only the validators). The layers, the large-L limits,
the risks and the rules that choose lambda compute with one set of compiled kernels, the
package-private ``_kernels``. Training uses the layers and records the metrics of its
runs; it does not use the risks or their limits.

What is public: every module whose name has no leading underscore, and in each module the
names of its ``__all__`` or, for a module without one, the functions, classes and documented
constants it defines (``attnclust._public`` finds them). They are reached in two ways:

- the top level re-exports every public function and class of the six modules from data to
  a trained layer (mixture, attention, limits, risk, metrics, train) and ``INITS``: this
  package's ``__all__``, what the chapters call as ``ac.<name>``;
- every public module is an attribute of the package, imported on first use:
  ``ac.stationary.newton_stationary``, ``ac.stats.paired_difference``,
  ``ac.symbolic.aligned_risk``, ``ac.temperature``, ``ac.baselines``,
  ``ac.general_mixture``, ``ac.digits``; the six modules above too, for their constants
  (``ac.train.DRAW_FLOATS``).

The book's API reference is written from the package when the book is built: the top level
and its six modules on chapters/api.md, every other public module of the core on
chapters/api_modules.md, and ``attnclust.book`` on the pages after it.
"""

import importlib as _importlib

from .attention import (
    identity_attend,
    identity_attention,
    identity_stack,
    two_head_attend,
    two_head_layer,
)
from .limits import general_identity_limit, head_coefficients, head_output_limit, identity_limit
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
    FitInterrupted,
    FitResult,
    Program,
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
    "Setting", "DEFAULT", "TrainConfig", "Program",
    "GaussianMixture", "orthogonal_mixture", "angled_mixture", "plusminus_mixture",
    "random_orthogonal_centroids", "sample", "sample_in_context", "two_head_layer",
    "two_head_attend", "identity_attention", "identity_attend", "identity_stack",
    "head_coefficients",
    "head_output_limit", "identity_limit", "general_identity_limit", "empirical_risk", "population_risk",
    "population_risk_mc", "INITS", "FitResult", "FitInterrupted", "fit", "fit_many", "fit_sampler",
    "fit_mixtures", "draw_from_mixture", "init_theta", "risk_loss", "make_step",
    "abs_cosines", "alignment", "matching", "head_assignments", "distortion",
    "noise_floor", "adjusted_rand", "own_centroids", "nearest_centroid", "within_spread",
]


def __getattr__(name: str):
    """A public submodule (``ac.stationary``), imported on first use."""
    if not name.startswith("_"):
        try:
            return _importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

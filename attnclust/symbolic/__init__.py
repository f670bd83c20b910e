"""The symbolic and quadrature side of the book's large-L theory, for the figures, chapters
and tests that reuse it.

The theory chapters derive their closed forms in their own cells (SymPy on the page, each
followed by a check that can fail); this package keeps what more than one page or the tests
need, by section:

* ``attnclust.symbolic.tilting`` (chapter "Attention as soft pooling", chapters/attention.md):
  the Gaussian tilting lemma by ``sympy.integrate`` (:func:`tilting_lemma`, lem-tilting).
* ``attnclust.symbolic.aligned`` (chapter "The two-head layer and its population risk",
  chapters/population_risk.md): the large-L risk on the aligned manifold
  (:func:`aligned_reduction`, :func:`aligned_risk`, :func:`aligned_fixed_point`,
  :func:`aligned_branch`; prop-aligned), the gradient off it and its two mechanisms
  (:func:`tilt_gradient`, :func:`tilt_decomposition`; sec-risk-tilt) and the tilted
  minimiser (:func:`tilted_minimiser`, :func:`tilt_branch`).
* ``attnclust.symbolic.identity`` (chapter "In-context quantization with identity
  attention", chapters/quantization.md): the layer and Q_inf in float64
  (:func:`identity_attention_float64`, :func:`identity_limit_float64`),
  the fixed points of iterated Q_inf (:func:`identity_fixed_points`), the exact distortion
  (:func:`distortion_exact`, :func:`distortion_mc`), its bound (:func:`distortion_bound`)
  and the best inverse temperatures (:func:`best_lambda_bound`, :func:`distortion_scaling`).
* shared: the unevaluated :class:`logistic`, :func:`lambdify_expr`,
  :func:`gauss_hermite`, :func:`softmax_exprs` and the symbolic head coefficient
  :func:`head_coefficient_expr` (prop-head-limit).

Notation (the preface's table): lam is the inverse temperature lambda; the mixture has
weights pi_c, centroids mu_c and noise sigma; the head scale kappa of the aligned manifold is
``c`` in the code.
"""

from ._common import gauss_hermite, head_coefficient_expr, lambdify_expr, logistic, softmax_exprs
from .aligned import (
    AlignedFixedPoint,
    AlignedReduction,
    TiltedMinimiser,
    aligned_branch,
    aligned_fixed_point,
    aligned_reduction,
    aligned_risk,
    aligned_risk_grad,
    setting_fixed_point,
    tilt_branch,
    tilt_decomposition,
    tilt_gradient,
    tilted_minimiser,
)
from .identity import (
    best_lambda_bound,
    distortion_bound,
    distortion_exact,
    distortion_mc,
    distortion_scaling,
    identity_attention_float64,
    identity_fixed_points,
    identity_limit_float64,
)
from .tilting import TiltingLemma, tilting_lemma

__all__ = [
    "logistic",
    "lambdify_expr",
    "gauss_hermite",
    "softmax_exprs",
    "head_coefficient_expr",
    "TiltingLemma",
    "tilting_lemma",
    "AlignedReduction",
    "aligned_reduction",
    "aligned_risk",
    "aligned_risk_grad",
    "AlignedFixedPoint",
    "aligned_fixed_point",
    "aligned_branch",
    "setting_fixed_point",
    "tilt_gradient",
    "tilt_decomposition",
    "TiltedMinimiser",
    "tilted_minimiser",
    "tilt_branch",
    "identity_attention_float64",
    "identity_limit_float64",
    "identity_fixed_points",
    "distortion_exact",
    "distortion_mc",
    "distortion_bound",
    "best_lambda_bound",
    "distortion_scaling",
]

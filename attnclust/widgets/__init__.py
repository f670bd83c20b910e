"""Interactive explorers for Jupyter (ipywidgets), one module per explorer:

- ``widgets.mixture``: the mixture explorer (chapter "Gaussian mixtures and clustering");
- ``widgets.training``: the training explorer (chapter "Training dynamics");
- ``widgets.quantization``: the quantization explorer (chapter "In-context quantization
  experiments").

Each explorer's update callback is a plain library function (tested) that redraws a
matplotlib figure from slider values; the chapters show that figure statically above the
widget so that HTML readers see it without a kernel. Names are resolved lazily from the
submodules, so ``attnclust.widgets.mixture_explorer`` works without importing ipywidgets
at package import time.
"""

import importlib

_MODULES = ("mixture", "training", "quantization")


def __getattr__(name):
    for module in _MODULES:
        try:
            mod = importlib.import_module(f"{__name__}.{module}")
        except ModuleNotFoundError as err:
            if err.name == f"{__name__}.{module}":
                continue
            raise
        if hasattr(mod, name):
            return getattr(mod, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

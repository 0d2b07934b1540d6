"""The layers of ``ember.nn``: each submodule lists its classes in ``__all__``, copied into this namespace."""
from __future__ import annotations

import importlib

_SUBMODULE_NAMES = ("module", "container", "linear", "flatten", "activation", "attention", "batchnorm", "conv",
                    "distance", "dropout", "fold", "instancenorm", "loss", "normalization", "padding",
                    "pixelshuffle", "pooling", "rnn", "sparse", "sync_batchnorm", "transformer", "upsampling")
SUBMODULES = tuple(importlib.import_module(f"{__name__}.{name}") for name in _SUBMODULE_NAMES)
__all__ = [name for module in SUBMODULES for name in module.__all__]
globals().update({name: getattr(module, name) for module in SUBMODULES for name in module.__all__})

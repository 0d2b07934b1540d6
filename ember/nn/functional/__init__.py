"""``ember.nn.functional``: the stateless form of every layer, loss and activation (``import ... as F``).

Each submodule lists its public functions in ``__all__``; a submodule may also
name ``TORCH_FUNCTIONS`` (exported at the top level, e.g. ``ember.conv2d``). The
functions are copied into this namespace, where they take precedence over the
submodules of the same name (``F.dropout`` is the function, as in torch). The
ones that are ``Tensor`` methods too (``x.softmax(1)``) are tensor ops, bound by
``ember.tensor.methods`` with the others.
"""
from __future__ import annotations

import importlib

from ...tensor.arguments import guard_namespace as _guard_namespace
from ...tensor.tensor import Tensor  # noqa: F401  (torch's F.Tensor)

_SUBMODULE_NAMES = ("activation", "attention", "conv", "distance", "dropout", "fold", "linear", "loss",
                    "normalization", "pooling", "sparse", "vision")
SUBMODULES = tuple(importlib.import_module(f"{__name__}.{name}") for name in _SUBMODULE_NAMES)
__all__ = [name for module in SUBMODULES for name in module.__all__]
globals().update({name: getattr(module, name) for module in SUBMODULES for name in module.__all__})


def torch_functions() -> dict:
    """The submodules' ``TORCH_FUNCTIONS``: names torch also exports at its top level."""
    found: dict = {}
    for module in SUBMODULES:
        found.update(getattr(module, "TORCH_FUNCTIONS", {}))
    _guard_namespace(found)  # guarded as this namespace is: ember.selu is F.selu
    return found


_guard_namespace(globals())  # torch's argument guards (ember.tensor.arguments)

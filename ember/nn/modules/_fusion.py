"""Which neighbouring layers ``Sequential`` runs as one fused op: a ``Linear`` and the activation after it.

The pair runs as ``linear_activation`` only where that cannot be told apart from running the layers one by
one: both of exactly the built-in types (a subclass may override ``forward``), no hooks on either, no
watcher of every op (profiler, forward-mode AD) installed, a 1-D bias and a floating input of two or more
dimensions. Everything else runs unfused, errors included. The checks are a few attribute reads per pair,
so nothing is cached (hooks can change between calls without the Sequential knowing).
"""
from __future__ import annotations

from typing import Any, Callable

from ...autograd import function as _function
from ...tensor.tensor import Tensor
from ..functional.linear_activation import linear_activation
from .activation import GELU, Hardswish, LeakyReLU, Mish, ReLU, Sigmoid, SiLU, Tanh
from .linear import Linear

__all__ = ["fused_pair"]

_GELU_NAMES = {"none": "gelu", "tanh": "gelu_tanh"}

# activation layer type -> (fused kernel name, kernel parameters) of a layer, or None when it cannot fuse
_ACTIVATIONS: dict[type, Callable[[Any], tuple[str, tuple] | None]] = {
    ReLU: lambda m: ("relu", ()),
    Tanh: lambda m: ("tanh", ()),
    Sigmoid: lambda m: ("logistic", ()),
    SiLU: lambda m: ("silu", ()),
    Mish: lambda m: ("mish", ()),
    Hardswish: lambda m: ("hardswish", ()),
    LeakyReLU: lambda m: ("leaky_relu", (float(m.negative_slope),)),
    GELU: lambda m: (_GELU_NAMES[m.approximate], ()) if m.approximate in _GELU_NAMES else None,
}


def fused_pair(first: Any, second: Any, input: Any) -> Tensor | None:
    """``second(first(input))`` as one fused op when ``first`` is a ``Linear`` and ``second`` an activation that
    fuse with it (see the module docstring); None when they must run apart."""
    if type(first) is not Linear:
        return None
    spec = _ACTIVATIONS.get(type(second))
    if spec is None or _function._APPLY_WRAPPERS or first._has_hooks() or second._has_hooks():
        return None
    weight, bias = first.weight, first.bias
    if (bias is None or bias.ndim != 1 or weight.ndim != 2 or bias.shape[0] != weight.shape[0]
            or not isinstance(input, Tensor) or input.ndim < 2 or not input.dtype.is_floating_point):
        return None
    found = spec(second)
    return None if found is None else linear_activation(input, weight, bias, *found)

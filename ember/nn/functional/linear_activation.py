"""``linear_activation``: ``f(x @ W.T + b)`` as one op, the bias and the activation fused into one kernel pass.

``nn.Sequential`` runs a ``Linear`` and the activation layer after it this way (``nn.modules._fusion``); the
result is what the two layers give apart. This module checks the arguments; the op, differentiable to any order,
is ``ember.tensor.fused.bias_activation``.
"""
from __future__ import annotations

from ...tensor import autocast_policy
from ...tensor.fused import bias_activation as fused
from ...tensor.fused.bias_activation import BIAS_ACTIVATIONS
from ...tensor.tensor import Tensor
from .linear import check_linear

__all__ = ["linear_activation"]


def linear_activation(input: Tensor, weight: Tensor, bias: Tensor, activation: str, params: tuple = ()) -> Tensor:
    """``f(input @ weight.T + bias)`` with ``f`` the fused activation ``activation`` (a name of
    ``ember.tensor.fused.bias_activation.BIAS_ACTIVATIONS``, with its kernel parameters ``params``).

    ``weight`` is 2-D, ``bias`` 1-D with one entry per output feature and ``input`` at least 2-D, all of one
    floating dtype; anything ``linear`` rejects gets ``linear``'s error.
    """
    if autocast_policy.ACTIVE and autocast_policy.covers("linear", input):
        return autocast_policy.run("linear", linear_activation, input, weight, bias, activation, params)
    check_linear(input, weight, bias)
    if activation not in BIAS_ACTIVATIONS:
        raise ValueError(f"linear_activation(): unknown activation {activation!r}; expected one of {BIAS_ACTIVATIONS}")
    if weight.ndim != 2 or input.ndim < 2 or bias.shape != (weight.shape[0],) or not input.dtype.is_floating_point:
        raise ValueError(f"linear_activation(): needs a 2-D weight, a bias of its {weight.shape[0]} output "
                         f"features and a floating input of 2 or more dimensions, got shapes {list(input.shape)}, "
                         f"{list(weight.shape)} and {list(bias.shape)}")
    return fused.linear_activation(input, weight, bias, activation, params)

"""``linear`` and ``bilinear``: the affine maps behind ``nn.Linear`` and ``nn.Bilinear`` (``linear``'s op is
``ember.tensor.fused.linear``)."""
from __future__ import annotations

import numpy as np

from ...tensor import autocast_policy
from ...tensor.contractions import einsum
from ...tensor.fused import linear as fused
from ...tensor.tensor import Tensor

__all__ = ["linear", "bilinear"]


def check_linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    """torch's errors for arguments ``linear`` cannot take."""
    if not isinstance(x, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"linear(): argument 'input' and 'weight' must be Tensor, not "
                        f"{type(x).__name__} and {type(weight).__name__}")
    if weight.ndim not in (1, 2) or x.ndim == 0:
        raise RuntimeError(f"linear(): input and weight must have at least 1 dimension and weight at most 2, got "
                           f"shapes {list(x.shape)} and {list(weight.shape)}")
    if x.shape[-1] != weight.shape[-1]:
        rows = int(np.prod(x.shape[:-1])) if x.ndim > 1 else 1
        w = weight.shape
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{x.shape[-1]} and "
                           f"{w[-1]}x{w[0] if weight.ndim == 2 else 1})")
    if x.dtype != weight.dtype or (bias is not None and bias.dtype != x.dtype):
        other = weight.dtype if x.dtype != weight.dtype else bias.dtype
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{x.dtype.scalar_type_name} and {other.scalar_type_name}")
    if bias is not None and weight.ndim == 2 and bias.numel() not in (1, weight.shape[0]):
        raise RuntimeError(f"linear(): bias of shape {list(bias.shape)} does not match the {weight.shape[0]} "
                           f"output features")


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` over the last dimension of ``input`` (any leading dimensions)."""
    if autocast_policy.ACTIVE and autocast_policy.covers("linear", input):
        return autocast_policy.run("linear", linear, input, weight, bias)
    check_linear(input, weight, bias)
    if weight.ndim == 1 or input.ndim == 1 or (bias is not None and bias.shape != (weight.shape[0],)):
        out = input.matmul(weight.t() if weight.ndim == 2 else weight)
        return out if bias is None else out + bias
    return fused.linear(input, weight, bias)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = x1[..., i] * weight[o, i, j] * x2[..., j] + bias[o]``."""
    if autocast_policy.ACTIVE and autocast_policy.covers("bilinear", input1):
        return autocast_policy.run("bilinear", bilinear, input1, input2, weight, bias)
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, got shape {list(weight.shape)}")
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {list(input1.shape[:-1])} and "
                           f"{list(input2.shape[:-1])}")
    if input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input sizes {input1.shape[-1]} and {input2.shape[-1]} do not match "
                           f"weight of shape {list(weight.shape)}")
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias

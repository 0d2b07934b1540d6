"""``linear`` and ``bilinear``: the affine maps behind ``nn.Linear`` and ``nn.Bilinear``."""
from __future__ import annotations

import numpy as np

from ...autograd.function import Function
from ...tensor.tensor import Tensor

__all__ = ["linear", "bilinear"]

_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half"}


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
                           f"{_TYPE_NAMES.get(x.dtype.name, x.dtype.name)} and "
                           f"{_TYPE_NAMES.get(other.name, other.name)}")
    if bias is not None and weight.ndim == 2 and bias.numel() not in (1, weight.shape[0]):
        raise RuntimeError(f"linear(): bias of shape {list(bias.shape)} does not match the {weight.shape[0]} "
                           f"output features")


class _Linear(Function):
    """``x @ W.T + b`` in one node: one BLAS call forward; backward in tensor ops (so it is differentiable)."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        x2 = x._array.reshape(-1, x.shape[-1])
        out = x2 @ weight._array.T
        if bias is not None:
            out += bias._array
        return Tensor._make(out.reshape(*x.shape[:-1], weight.shape[0]))

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple:
        x, weight = ctx.saved_tensors
        g2 = g.reshape(-1, weight.shape[0])
        grad_b = g2.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return (*product_grads(x, weight, g2, ctx.needs_input_grad), grad_b)


def product_grads(x: Tensor, weight: Tensor, g2: Tensor, needs: tuple) -> tuple[Tensor | None, Tensor | None]:
    """The gradients of ``x @ weight.T`` for ``x`` and ``weight`` (None where ``needs`` says no), in tensor ops,
    from the output gradient ``g2`` flattened to 2-D."""
    grad_x = g2.mm(weight).reshape(x.shape) if needs[0] else None
    grad_w = g2.t().mm(x.reshape(-1, x.shape[-1])) if needs[1] else None
    return grad_x, grad_w


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` over the last dimension of ``input`` (any leading dimensions)."""
    check_linear(input, weight, bias)
    if weight.ndim == 1 or input.ndim == 1 or (bias is not None and bias.shape != (weight.shape[0],)):
        out = input.matmul(weight.t() if weight.ndim == 2 else weight)
        return out if bias is None else out + bias
    return _Linear.apply(input, weight, bias)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = x1[..., i] * weight[o, i, j] * x2[..., j] + bias[o]``."""
    from ... import einsum

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

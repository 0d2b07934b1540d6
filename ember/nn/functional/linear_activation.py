"""``linear_activation``: ``f(x @ W.T + b)`` as one op, the bias and the activation fused into one kernel pass.

``nn.Sequential`` runs a ``Linear`` and the activation layer after it this way (``nn.modules._fusion``); the
result is what the two layers give apart. The kernels are the ``bias_activation`` family. Backward runs one
fused pass for the pre-activation and bias gradients; under ``create_graph`` it uses the activations'
differentiable gradient ops instead (recomputing the pre-activation as a graph tensor where they read it), so
gradients of gradients work.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ...cpu_kernels.bias_activation import BIAS_ACTIVATIONS
from ...tensor import dtypes
from ...tensor.elementwise import UNARY_OPS
from ...tensor.tensor import Tensor
from ...tensor._dispatch import ascontiguous, compute_dtype, family
from .activation import _ActivationGrad
from .linear import check_linear, linear, product_grads

__all__ = ["linear_activation"]

# The activations whose gradient reads their output, by the unary op whose gradient formula they share.
_UNARY_NAMES = {"relu": "relu", "tanh": "tanh", "logistic": "sigmoid"}


def _as(array: Any, dt: dtypes.dtype) -> Any:
    return array if array.dtype == dt.np else array.astype(dt.np)


def _rows(t: Tensor, cdt: np.dtype) -> Any:
    """``t``'s array as a C-contiguous (rows, last dimension) array of ``cdt``."""
    return ascontiguous(t._array, cdt).reshape(-1, t.shape[-1])


class _LinearActivation(Function):
    """``f(x @ W.T + b)``: BLAS for the product, then one kernel for bias and activation (float16 in float32)."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor, name: str, params: tuple) -> Tensor:
        rdt = x.dtype
        cdt = compute_dtype(rdt).np
        y = ascontiguous(x._array.reshape(-1, x.shape[-1]) @ weight._array.T, cdt)
        kernels = family("bias_activation", y)
        keep = bool(ctx.needs_input_grad) and not kernels.grad_reads_output(name)
        out = np.empty(y.shape, dtype=cdt, like=y) if keep else y
        kernels.bias_activation_forward(name, y, ascontiguous(bias._array, cdt), out, params)
        shape = (*x.shape[:-1], weight.shape[0])
        result = Tensor._make(_as(out, rdt).reshape(shape))
        if ctx.needs_input_grad:
            saved = Tensor._make(_as(y, rdt).reshape(shape)) if keep else result
            ctx.save_for_backward(x, weight, bias, saved)
            ctx.activation, ctx.params = name, params
        return result

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple:
        x, weight, bias, saved = ctx.saved_tensors
        need_bias = ctx.needs_input_grad[2]
        if is_grad_enabled():  # create_graph: differentiable ops
            g2 = _differentiable_grad(ctx.activation, (x, weight, bias), saved, g, ctx.params)
            g2 = g2.reshape(-1, weight.shape[0])
            grad_b = g2.sum(0) if need_bias else None
        else:
            g2, grad_b = _fused_grads(ctx.activation, saved, g, ctx.params, need_bias)
        return (*product_grads(x, weight, g2, ctx.needs_input_grad), grad_b, None, None)


def _differentiable_grad(name: str, inputs: tuple, saved: Tensor, g: Tensor, params: tuple) -> Tensor:
    """The pre-activation gradient by the layers' own differentiable gradient ops: from the saved output (a graph
    tensor), or from the pre-activation recomputed from ``inputs`` (the saved one is not in the graph)."""
    unary = _UNARY_NAMES.get(name)
    if unary is not None:
        return UNARY_OPS[unary][2](None, saved, g)
    return _ActivationGrad.apply(linear(*inputs), g, name, params)


def _fused_grads(name: str, saved: Tensor, g: Tensor, params: tuple, need_bias: bool) -> tuple:
    """(pre-activation gradient as rows, bias gradient or None) from one kernel pass."""
    rdt = saved.dtype
    cdt = compute_dtype(rdt).np
    s = _rows(saved, cdt)
    out = np.empty(s.shape, dtype=cdt, like=s)
    db = np.empty(s.shape[1], dtype=cdt, like=s) if need_bias else None
    family("bias_activation", s).bias_activation_backward(name, s, _rows(g, cdt), out, db, params)
    return Tensor._make(_as(out, rdt)), (Tensor._make(_as(db, rdt)) if need_bias else None)


def linear_activation(input: Tensor, weight: Tensor, bias: Tensor, activation: str, params: tuple = ()) -> Tensor:
    """``f(input @ weight.T + bias)`` with ``f`` the fused activation ``activation`` (a name of
    ``ember.cpu_kernels.bias_activation.BIAS_ACTIVATIONS``, with its kernel parameters ``params``).

    ``weight`` is 2-D, ``bias`` 1-D with one entry per output feature and ``input`` at least 2-D, all of one
    floating dtype; anything ``linear`` rejects gets ``linear``'s error.
    """
    check_linear(input, weight, bias)
    if activation not in BIAS_ACTIVATIONS:
        raise ValueError(f"linear_activation(): unknown activation {activation!r}; expected one of {BIAS_ACTIVATIONS}")
    if weight.ndim != 2 or input.ndim < 2 or bias.shape != (weight.shape[0],) or not input.dtype.is_floating_point:
        raise ValueError(f"linear_activation(): needs a 2-D weight, a bias of its {weight.shape[0]} output "
                         f"features and a floating input of 2 or more dimensions, got shapes {list(input.shape)}, "
                         f"{list(weight.shape)} and {list(bias.shape)}")
    return _LinearActivation.apply(input, weight, bias, activation, params)

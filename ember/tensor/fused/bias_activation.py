"""``f(x @ W.T + b)`` as one op on the bias_activation kernels: the bias and the activation fused into one pass.

Backward runs one fused pass for the pre-activation and bias gradients; under ``create_graph`` it uses the
activations' differentiable gradient ops instead (recomputing the pre-activation as a graph tensor where they
read it), so gradients of gradients work.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ...kernels.common.activations import BIAS_ACTIVATIONS
from ...opcodes import ACTIVATION_OPS
from .. import dtypes
from .._dispatch import ascontiguous, backend, compute_dtype
from ..elementwise import UNARY_OPS
from ..tensor import Tensor
from .activations import _ActivationGrad
from .linear import linear, product_grads

__all__ = ["BIAS_ACTIVATIONS", "linear_activation"]


# The activations whose gradient reads their output, by the unary op whose gradient formula they share.
_UNARY_NAMES = {a.name: a.torch_op for a in ACTIVATION_OPS if a.grad_reads_output}


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
        kernels = backend(y).bias_activation
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
        return UNARY_OPS[unary].grad(None, saved, g)
    return _ActivationGrad.apply(linear(*inputs), g, name, params)


def _fused_grads(name: str, saved: Tensor, g: Tensor, params: tuple, need_bias: bool) -> tuple:
    """(pre-activation gradient as rows, bias gradient or None) from one kernel pass."""
    rdt = saved.dtype
    cdt = compute_dtype(rdt).np
    s = _rows(saved, cdt)
    out = np.empty(s.shape, dtype=cdt, like=s)
    db = np.empty(s.shape[1], dtype=cdt, like=s) if need_bias else None
    backend(s).bias_activation.bias_activation_backward(name, s, _rows(g, cdt), out, db, params)
    return Tensor._make(_as(out, rdt)), (Tensor._make(_as(db, rdt)) if need_bias else None)


def linear_activation(x: Tensor, weight: Tensor, bias: Tensor, name: str, params: tuple = ()) -> Tensor:
    """``f(x @ weight.T + bias)`` with ``f`` the activation ``name`` of ``BIAS_ACTIVATIONS`` (kernel parameters
    ``params``): ``x`` floating and at least 2-D, ``weight`` 2-D, ``bias`` one entry per output feature."""
    return _LinearActivation.apply(x, weight, bias, name, params)

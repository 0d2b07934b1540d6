"""Softmax and log-softmax on the fused row kernels, forward and backward.

The backward is itself a Function, differentiable in the output and the
gradient, so second derivatives work.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ...autograd.function import NO_RECORD, Function, must_apply
from .. import dtypes
from .._dispatch import ascontiguous, backend, compute_dtype
from ..tensor import Tensor

__all__ = ["softmax"]


def _row_call(arrays: list[np.ndarray], dim: int, rdt: dtypes.dtype, call: Callable) -> np.ndarray:
    """Run a row kernel along ``dim``: move it last, make 2-D contiguous rows, and put the result back."""
    cdt = compute_dtype(rdt).np
    ndim = arrays[0].ndim
    moved = [np.moveaxis(a, dim, -1) if ndim else a.reshape(1) for a in arrays]
    shape = moved[0].shape
    n = shape[-1] if shape else 1
    rows = [ascontiguous(a, dtype=cdt).reshape(math.prod(shape[:-1]), n) for a in moved]
    out = np.empty_like(rows[0])
    if out.size:
        call(*rows, out)
    result = out.reshape(shape)
    if ndim == 0:
        result = result.reshape(())
    elif dim != ndim - 1:
        result = ascontiguous(np.moveaxis(result, -1, dim))
    return result if cdt == rdt.np else result.astype(rdt.np)


class _Softmax(Function):
    """softmax or log_softmax along ``dim`` by the fused row kernel."""

    @staticmethod
    def forward(ctx, x: Tensor, dim: int, log: bool) -> np.ndarray:
        out = _row_call([x._array], dim, x.dtype, lambda a, o: backend(a).softmax.softmax_forward(a, o, log))
        if ctx.needs_input_grad:
            y = Tensor._make(out)
            ctx.save_for_backward(y)
            ctx.dim, ctx.log = dim, log
            return y
        return out

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple:
        (y,) = ctx.saved_tensors
        return _SoftmaxGrad.apply(y, g, ctx.dim, ctx.log), None, None

    @staticmethod
    def jvp_rule(args: tuple, outputs: tuple, tangents: tuple) -> Tensor:
        """Forward mode: softmax ``y * (t - <y, t>)``; log_softmax ``t - <softmax, t>`` (inner products along
        ``dim``)."""
        _, dim, log = args
        y, t = outputs[0], tangents[0]
        p = y.exp() if log else y
        centred = t - (p * t).sum(dim, keepdim=True)
        return centred if log else y * centred


class _SoftmaxGrad(Function):
    """The input gradient of softmax/log_softmax from its output ``y``; differentiable in y and g."""

    @staticmethod
    def forward(ctx, y: Tensor, g: Tensor, dim: int, log: bool) -> np.ndarray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(y, g)
            ctx.dim, ctx.log = dim, log
        garr = np.broadcast_to(g._array, y.shape)
        return _row_call([y._array, garr], dim, y.dtype,
                         lambda a, b, o: backend(a).softmax.softmax_backward(a, b, o, log))

    @staticmethod
    def backward(ctx, gg: Tensor) -> tuple:
        y, g = ctx.saved_tensors
        dim, need_y, need_g = ctx.dim, ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        if ctx.log:  # gx = g - exp(y) * sum(g)
            p = y.exp()
            gy = -gg * p * g.sum(dim, keepdim=True) if need_y else None
            gg_g = gg - (gg * p).sum(dim, keepdim=True) if need_g else None
        else:  # gx = y * (g - sum(g * y))
            gy = gg * (g - (g * y).sum(dim, keepdim=True)) - g * (gg * y).sum(dim, keepdim=True) if need_y \
                else None
            gg_g = _SoftmaxGrad.apply(y, gg, dim, False) if need_g else None
        return gy, gg_g, None, None


def softmax(x: Tensor, dim: int, log: bool) -> Tensor:
    """softmax (``log``: log_softmax) of floating ``x`` along the non-negative ``dim``."""
    if must_apply(x):
        return _Softmax.apply(x, dim, log)
    return Tensor._make(_Softmax.forward(NO_RECORD, x, dim, log))

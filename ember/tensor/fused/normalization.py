"""Normalization ops on the fused kernels: the "rows" kernels (layer and group norm) and the "channels" kernels
(batch and instance norm), one pass for the statistics and one for the output.

Their first-order backward is a fused kernel too; when a graph of the gradient
is wanted (``create_graph=True``, i.e. grad mode is on inside backward) the same
gradient is computed in differentiable tensor ops instead, so double backward
works. float16 is computed in float32.
"""
from __future__ import annotations

import math

import numpy as np

from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from .. import dtypes
from .._dispatch import ascontiguous, backend, compute_dtype
from ..tensor import Tensor
from .conv import channels_first_view, channels_last_rows, is_channels_last

__all__ = ["batch_norm", "rows_norm"]


def _flat(t: Tensor, cdt: dtypes.dtype) -> np.ndarray:
    """``t``'s data as a flat C-contiguous array in the compute dtype (no copy when it already is one)."""
    return ascontiguous(t._array, dtype=cdt.np).reshape(-1)


def _flat_or_empty(t: Tensor | None, cdt: dtypes.dtype) -> np.ndarray:
    """A parameter's flat array, or an empty one (the kernels' "absent")."""
    return _flat(t, cdt) if t is not None else np.empty(0, cdt.np)


def _result(y: np.ndarray, like: Tensor) -> Tensor:
    return Tensor._make(y.reshape(like.shape).astype(like.dtype.np, copy=False))


def _param_grad(g: np.ndarray, param: Tensor | None, needed: bool) -> Tensor | None:
    if param is None or not needed:
        return None
    return Tensor._make(g.reshape(param.shape).astype(param.dtype.np))


# ------------------------------------------------------------------ differentiable gradient (create_graph path)
def _composite_grads(x4: Tensor, w4: Tensor | None, gy4: Tensor, dims: tuple[int, int], eps: float
                     ) -> tuple[Tensor, Tensor, Tensor]:
    """(dx, dweight, dbias) of normalize-over-``dims``-then-affine, in tensor ops so they can be differentiated.

    ``x4`` is a 4-d view (A, G, K, S) whose dims (1, 2) are the channel; weight/bias grads sum over (0, 3).
    """
    cdt = compute_dtype(x4.dtype)
    x4, gy4 = x4.to(cdt), gy4.to(cdt)
    mean = x4.mean(dims, keepdim=True)
    centred = x4 - mean
    rstd = ((centred * centred).mean(dims, keepdim=True) + eps).rsqrt()
    xhat = centred * rstd
    g = gy4 * w4.to(cdt) if w4 is not None else gy4
    dx = rstd * (g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True))
    return dx, (gy4 * xhat).sum((0, 3)), gy4.sum((0, 3))


def _grads_as_tensors(x: Tensor, weight: Tensor | None, bias: Tensor | None, needs: tuple, grads: tuple) -> tuple:
    dx, dw, db = grads
    return (dx.reshape(x.shape).to(x.dtype) if needs[0] else None,
            dw.reshape(weight.shape).to(weight.dtype) if weight is not None and needs[1] else None,
            db.reshape(bias.shape).to(bias.dtype) if bias is not None and needs[2] else None)


# ------------------------------------------------------------------ rows: layer norm, group norm
class _RowsNorm(Function):
    """Normalize rows of ``K * S`` elements; the affine channel of run ``k`` of row ``r`` is ``(r % G) * K + k``."""

    @staticmethod
    def forward(ctx, x, weight, bias, groups, k, s, eps):
        cdt = compute_dtype(x.dtype)
        xa = _flat(x, cdt)
        rows = xa.size // (k * s) if xa.size else 0
        mean, rstd, y = np.empty(rows, like=xa), np.empty(rows, like=xa), np.empty_like(xa)
        if xa.size:
            backend(xa).normalization.rows_norm_forward(xa, _flat_or_empty(weight, cdt), _flat_or_empty(bias, cdt),
                                                          groups, k, s, eps, y, mean, rstd)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, weight, bias)
            ctx.arrays, ctx.geometry, ctx.eps = (xa, mean, rstd), (groups, k, s), eps
        return _result(y, x)

    @staticmethod
    def backward(ctx, gy):
        x, weight, bias = ctx.saved_tensors
        groups, k, s = ctx.geometry
        needs = ctx.needs_input_grad
        if is_grad_enabled() and x.numel():
            view = (-1, groups, k, s)
            w4 = weight.reshape(1, groups, k, 1) if weight is not None else None
            grads = _composite_grads(x.reshape(view), w4, gy.reshape(view), (2, 3), ctx.eps)
            return _grads_as_tensors(x, weight, bias, needs, grads) + (None,) * 4
        xa, mean, rstd = ctx.arrays
        kernels = backend(xa).normalization
        cdt = compute_dtype(x.dtype)
        dya = _flat(gy, cdt)
        dx = None
        if needs[0]:
            dxa = np.empty_like(xa)
            if xa.size:
                kernels.rows_norm_backward(dya, xa, mean, rstd, _flat_or_empty(weight, cdt), groups, k, s, dxa)
            dx = _result(dxa, x)
        dw = db = None
        if (weight is not None and needs[1]) or (bias is not None and needs[2]):
            dw, db = np.zeros(groups * k, like=xa), np.zeros(groups * k, like=xa)
            if xa.size:
                kernels.rows_norm_affine_grads(dya, xa, mean, rstd, groups, k, s, dw, db)
        return dx, _param_grad(dw, weight, needs[1]), _param_grad(db, bias, needs[2]), None, None, None, None


# ------------------------------------------------------------------ channels: batch norm, instance norm
# The channel kernels see x as (A, C, S) blocks. A channels-last x is (N * S, C, 1) blocks of its own memory: the
# same kernels then run on it in place, and the results come back channels-last, as torch's.
def _channel_geometry(x: Tensor, last: bool) -> tuple[int, int, int]:
    a, c, s = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    return (a * s, c, 1) if last else (a, c, s)


def _channel_flat(t: Tensor, cdt: dtypes.dtype, last: bool) -> np.ndarray:
    """``t``'s data flat in the compute dtype, channels innermost when ``last``."""
    if not last:
        return _flat(t, cdt)
    arr = t._array
    return channels_last_rows(arr if arr.dtype == cdt.np else arr.astype(cdt.np, order="K")).reshape(-1)


def _channel_result(y: np.ndarray, like: Tensor, last: bool) -> Tensor:
    if not last:
        return _result(y, like)
    shape = like.shape
    moved = channels_first_view(y.reshape((shape[0],) + tuple(shape[2:]) + (shape[1],)))
    return Tensor._make(moved.astype(like.dtype.np, copy=False))


class _ChannelNorm(Function):
    """Batch norm with the batch's statistics (computed by the caller: ``stats = (x_flat, mean, var)``)."""

    @staticmethod
    def forward(ctx, x, weight, bias, stats, eps):
        xa, mean, var, last = stats
        a, c, s = _channel_geometry(x, last)
        rstd = 1.0 / np.sqrt(var + eps)
        scale = rstd * weight._array.astype(np.float64).reshape(-1) if weight is not None else rstd
        shift = -mean * scale
        if bias is not None:
            shift += bias._array.astype(np.float64).reshape(-1)
        y = np.empty_like(xa)
        backend(xa).normalization.channel_fma(xa, xa, scale, np.zeros(c, like=xa), shift, c, s, y)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, weight, bias)
            ctx.arrays, ctx.eps, ctx.last = (xa, mean, rstd), eps, last
        return _channel_result(y, x, last)

    @staticmethod
    def backward(ctx, gy):
        x, weight, bias = ctx.saved_tensors
        needs = ctx.needs_input_grad
        if is_grad_enabled():
            a, c, s = _channel_geometry(x, False)
            w4 = weight.reshape(1, 1, c, 1) if weight is not None else None
            grads = _composite_grads(x.reshape(a, 1, c, s), w4, gy.reshape(a, 1, c, s), (0, 3), ctx.eps)
            return _grads_as_tensors(x, weight, bias, needs, grads) + (None, None)
        xa, mean, rstd = ctx.arrays
        a, c, s = _channel_geometry(x, ctx.last)
        kernels = backend(xa).normalization
        dya = _channel_flat(gy, compute_dtype(x.dtype), ctx.last)
        sum_dy, sum_dy_xmu = np.zeros(c, like=xa), np.zeros(c, like=xa)
        if xa.size:
            kernels.channel_grad_sums(dya, xa, mean, a, c, s, sum_dy, sum_dy_xmu)
        dx = None
        if needs[0]:
            n = max(a * s, 1)  # an empty batch has an empty gradient
            wr = rstd * weight._array.astype(np.float64).reshape(-1) if weight is not None else rstd
            q = -wr * rstd * rstd * sum_dy_xmu / n
            dxa = np.empty_like(xa)
            kernels.channel_fma(dya, xa, wr, q, -wr * sum_dy / n - mean * q, c, s, dxa)
            dx = _channel_result(dxa, x, ctx.last)
        return dx, _param_grad(sum_dy_xmu * rstd, weight, needs[1]), _param_grad(sum_dy, bias, needs[2]), None, None


def _batch_stats(x: Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """(x as a flat compute-dtype array, per-channel mean, biased variance, whether x runs channels-last) in one
    pass."""
    last = is_channels_last(x._array)
    a, c, s = _channel_geometry(x, last)
    xa = _channel_flat(x, compute_dtype(x.dtype), last)
    mean, var = np.zeros(c, like=xa), np.zeros(c, like=xa)
    if xa.size:
        backend(xa).normalization.channel_moments(xa, a, c, s, mean, var)
    return xa, mean, var, last


def _update_running(running: Tensor | None, batch_value: np.ndarray, momentum: float) -> None:
    """``running = momentum * batch + (1 - momentum) * running``, written straight into the buffer (no graph, and,
    as in torch, no overlap check: an expanded buffer is updated too)."""
    if running is None:
        return
    buffer = running._array
    if any(stride == 0 and n > 1 for stride, n in zip(buffer.strides, buffer.shape)):
        _update_overlapping(buffer, batch_value, momentum)
    else:
        new = momentum * batch_value + (1.0 - momentum) * buffer.astype(np.float64).reshape(-1)
        np.copyto(buffer, new.reshape(buffer.shape), casting="unsafe")
    running._version.value += 1


def _update_overlapping(buffer: np.ndarray, batch_value: np.ndarray, momentum: float) -> None:
    """Channel by channel, each reading what the previous one wrote (torch's serial loop over a shared element)."""
    for channel, index in enumerate(np.ndindex(*buffer.shape)):
        buffer[index] = momentum * float(batch_value[channel]) + (1.0 - momentum) * float(buffer[index])


def rows_norm(x: Tensor, weight: Tensor | None, bias: Tensor | None, groups: int, k: int, s: int,
              eps: float) -> Tensor:
    """Normalize each row of ``k * s`` elements of ``x``, then the affine map of ``groups * k`` channels (layer
    norm: one group of ``k`` channels, ``s = 1``; group norm: ``groups`` of ``k`` channels of ``s`` elements)."""
    return _RowsNorm.apply(x, weight, bias, groups, k, s, eps)


def batch_norm(x: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
               running_var: Tensor | None, momentum: float, eps: float) -> Tensor:
    """Normalize each channel (dim 1) of ``x`` by the batch's statistics, updating the running ones in place
    (with the unbiased variance) when given."""
    stats = _batch_stats(x)
    a, _, s = _channel_geometry(x, False)
    n = a * s
    if n > 0:
        _update_running(running_mean, stats[1], momentum)
        _update_running(running_var, stats[2] * n / (n - 1) if n > 1 else np.full_like(stats[2], np.nan), momentum)
    return _ChannelNorm.apply(x, weight, bias, stats, eps)

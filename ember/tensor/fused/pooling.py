"""Pooling ops on the two fused window kernels (max, average) and their adjoints, 1-, 2- and 3-d.

Every pooling flavour arrives as per-dim windows (``Windows``): ceil mode,
padding, dilation and adaptive sizes are already in them. Max pooling saves the
arg-max positions; its backward scatters the gradient there and that scatter's
own backward gathers, so double backward works. Average pooling and its
backward are each other's adjoint.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...autograd.function import Function
from .._dispatch import ascontiguous, backend
from ..tensor import Tensor
from .conv import channels_first_view, channels_last_rows, is_channels_last, kernel_dtype

__all__ = ["Windows", "avg_pool", "lead_dims", "max_pool", "plane_sizes"]


class Windows:
    """Per-dim pooling windows widened to 3 dims: first index, length, step and divisor of every output."""

    __slots__ = ("starts", "counts", "steps", "divisors", "override", "in_size", "out_size")

    def __init__(self, dims: list[tuple[list[int], list[int], int, list[int]]], in_size: tuple[int, ...],
                 override: int = 0) -> None:
        dims = [([0], [1], 1, [1])] * (3 - len(dims)) + list(dims)
        width = max(1, max(len(d[0]) for d in dims))
        self.starts = np.zeros((3, width), np.int64)
        self.counts = np.zeros((3, width), np.int64)
        self.divisors = np.ones((3, width), np.float64)
        for i, (starts, counts, _, divisors) in enumerate(dims):
            self.starts[i, :len(starts)] = starts
            self.counts[i, :len(counts)] = counts
            self.divisors[i, :len(divisors)] = divisors
        self.steps = np.array([d[2] for d in dims], np.int64)
        self.override = override
        self.in_size = (1,) * (3 - len(in_size)) + tuple(in_size)
        self.out_size = tuple(len(d[0]) for d in dims)



def _channels_last(arr: np.ndarray, nd: int, keeps_3d: bool) -> bool:
    """Whether pooling runs on ``arr``'s channels-last memory: a batched 2-d input laid out channels-last, or a 3-d
    one when ``keeps_3d`` (the result and the input gradient then are channels-last too; of torch's CPU 3-d
    poolings only the sliding max pool keeps channels_last_3d)."""
    return (nd == 2 or (nd == 3 and keeps_3d)) and arr.ndim == nd + 2 and is_channels_last(arr)


def _planes(arr: np.ndarray, lead: tuple, size3: tuple, channels_last: bool) -> np.ndarray:
    """The array as the kernels take it, in a dtype they take: contiguous (planes, D, H, W), or the
    (N, D, H, W, C) memory of a channels-last array (no copy)."""
    dt = kernel_dtype(arr.dtype)
    if channels_last:
        return channels_last_rows(arr if arr.dtype == dt else arr.astype(dt, order="K")).reshape(
            (arr.shape[0],) + size3 + (arr.shape[1],))
    return ascontiguous(arr, dtype=dt).reshape((math.prod(lead),) + size3)


def _restore(arr: np.ndarray, shape: tuple, dt: np.dtype, channels_last: bool) -> np.ndarray:
    """Back to the caller's shape (channels-last memory as a channels-last view) and dtype (integer results
    truncate, as torch's integer pooling does)."""
    if channels_last:
        out = channels_first_view(arr.reshape((shape[0],) + tuple(shape[2:]) + (shape[1],)))
    else:
        out = arr.reshape(shape)
    if out.dtype == dt:
        return out
    return np.trunc(out).astype(dt) if dt.kind in "iub" else out.astype(dt)


def _empty_like_planes(planes: np.ndarray, size3: tuple, dtype: Any, channels_last: bool) -> np.ndarray:
    """An output buffer beside kernel-ready ``planes``, with ``size3`` in place of its spatial dims."""
    shape = planes.shape[:1] + size3 + (planes.shape[-1],) if channels_last else planes.shape[:1] + size3
    return np.empty(shape, dtype, like=planes)


def lead_dims(shape: tuple, nd: int) -> tuple:
    """The dims in front of the ``nd`` pooled ones (batch and channels)."""
    return tuple(shape[:len(shape) - nd])


def plane_sizes(shape: tuple, nd: int) -> tuple[int, int]:
    """(planes, elements per plane) of a shape whose last ``nd`` dims are pooled."""
    return math.prod(lead_dims(shape, nd)), math.prod(shape[len(shape) - nd:])


def _pool_buffers(x: Tensor, win: Windows, nd: int, keeps_3d: bool) -> tuple[tuple, bool, np.ndarray, np.ndarray]:
    """The lead dims of ``x``, whether it runs channels-last, ``x`` kernel-ready and the empty output."""
    lead = lead_dims(x.shape, nd)
    last = _channels_last(x._array, nd, keeps_3d)
    planes = _planes(x._array, lead, win.in_size, last)
    return lead, last, planes, _empty_like_planes(planes, win.out_size, planes.dtype, last)


# ------------------------------------------------------------------------------------------- differentiable ops
class _MaxPool(Function):
    """Window maxima and their flat per-plane input positions (torch's ``indices``)."""

    @staticmethod
    def forward(ctx, x: Tensor, win: Windows, nd: int, keeps_3d: bool):
        lead, last, planes, out = _pool_buffers(x, win, nd, keeps_3d)
        indices = np.empty(out.shape, np.int64, like=out)
        backend(out).pooling.max_pool(planes, out, indices, win.starts, win.counts, win.steps)
        shape = lead + win.out_size[3 - nd:]
        idx = Tensor._make(_restore(indices, shape, indices.dtype, last))
        ctx.mark_non_differentiable(idx)
        if ctx.needs_input_grad:
            ctx.indices, ctx.in_shape, ctx.nd, ctx.last = idx, tuple(x.shape), nd, last
        return _restore(out, shape, x._array.dtype, last), idx

    @staticmethod
    def backward(ctx, g: Tensor, _indices_grad: Any):
        return _MaxPoolBackward.apply(g, ctx.indices, ctx.in_shape, ctx.nd, ctx.last), None, None, None


class _MaxPoolBackward(Function):
    """Adds every output gradient at its arg-max position (a scatter); its own backward is a gather."""

    @staticmethod
    def forward(ctx, g: Tensor, indices: Tensor, in_shape: tuple, nd: int, last: bool):
        """``last``: the pooled input was channels-last, and so is its gradient."""
        planes, size = plane_sizes(in_shape, nd)
        dt = kernel_dtype(g._array.dtype)
        if last:
            n, c = in_shape[:2]
            grad = channels_last_rows(g._array.astype(dt, copy=False)).reshape(n, -1, c)
            where = channels_last_rows(indices._array).reshape(grad.shape)
            out = np.empty((n, size, c), dt, like=grad)
        else:
            grad = ascontiguous(g._array, dtype=dt).reshape(plane_sizes(g.shape, nd))
            where = ascontiguous(indices._array).reshape(grad.shape)
            out = np.empty((planes, size), dt, like=grad)
        backend(grad).pooling.max_pool_backward(grad, where, out)
        ctx.indices, ctx.nd = indices, nd
        return _restore(out, in_shape, g._array.dtype, last)

    @staticmethod
    def backward(ctx, gg: Tensor):
        return _gather_planes(gg, ctx.indices, ctx.nd), None, None, None, None


def _gather_planes(values: Tensor, indices: Tensor, nd: int) -> Tensor:
    """``values`` read at per-plane flat positions ``indices`` (planes are the dims before the last ``nd``)."""
    rows = values.reshape(plane_sizes(values.shape, nd))
    return rows.gather(1, indices.reshape(plane_sizes(indices.shape, nd))).reshape(indices.shape)


class _AvgPool(Function):
    """Window means (sums over the divisor the windows carry)."""

    @staticmethod
    def forward(ctx, x: Tensor, win: Windows, nd: int):
        lead, last, planes, out = _pool_buffers(x, win, nd, False)
        backend(planes).pooling.avg_pool(planes, out, win.starts, win.counts, win.divisors, win.override)
        if ctx.needs_input_grad:
            ctx.win, ctx.in_shape, ctx.nd, ctx.last = win, tuple(x.shape), nd, last
        return _restore(out, lead + win.out_size[3 - nd:], x._array.dtype, last)

    @staticmethod
    def backward(ctx, g: Tensor):
        return _AvgPoolBackward.apply(g, ctx.win, ctx.in_shape, ctx.nd, ctx.last), None, None


class _AvgPoolBackward(Function):
    """The adjoint of ``_AvgPool`` (each output's share spread over its window); its backward is ``_AvgPool``."""

    @staticmethod
    def forward(ctx, g: Tensor, win: Windows, in_shape: tuple, nd: int, last: bool):
        """``last``: the pooled input was channels-last, and so is its gradient."""
        lead = lead_dims(in_shape, nd)
        grad = _planes(g._array, lead, win.out_size, last)
        out = _empty_like_planes(grad, win.in_size, grad.dtype, last)
        backend(grad).pooling.avg_pool_backward(grad, out, win.starts, win.counts, win.divisors, win.override)
        if ctx.needs_input_grad:
            ctx.win, ctx.nd = win, nd
        return _restore(out, in_shape, g._array.dtype, last)

    @staticmethod
    def backward(ctx, gg: Tensor):
        return _AvgPool.apply(gg, ctx.win, ctx.nd), None, None, None, None


def max_pool(x: Tensor, win: Windows, nd: int, keeps_3d: bool = True) -> tuple[Tensor, Tensor]:
    """(window maxima, their flat per-plane input positions) over the last ``nd`` dims of ``x``; a channels_last
    input gives channels_last results (3-d ones only when ``keeps_3d``: torch's adaptive 3-d max pool does not)."""
    return _MaxPool.apply(x, win, nd, keeps_3d)


def avg_pool(x: Tensor, win: Windows, nd: int) -> Tensor:
    """Window means over the last ``nd`` dims of ``x``."""
    return _AvgPool.apply(x, win, nd)

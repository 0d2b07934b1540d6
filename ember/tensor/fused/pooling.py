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
from .conv import kernel_dtype

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



def _planes(arr: np.ndarray, lead: tuple, size3: tuple) -> np.ndarray:
    """The array as contiguous (planes, D, H, W) in a dtype the kernels take."""
    dt = kernel_dtype(arr.dtype)
    return ascontiguous(arr, dtype=dt).reshape((math.prod(lead),) + size3)


def _restore(arr: np.ndarray, shape: tuple, dt: np.dtype) -> np.ndarray:
    """Back to the caller's shape and dtype (integer results truncate, as torch's integer pooling does)."""
    out = arr.reshape(shape)
    if out.dtype == dt:
        return out
    return np.trunc(out).astype(dt) if dt.kind in "iub" else out.astype(dt)


def lead_dims(shape: tuple, nd: int) -> tuple:
    """The dims in front of the ``nd`` pooled ones (batch and channels)."""
    return tuple(shape[:len(shape) - nd])


def plane_sizes(shape: tuple, nd: int) -> tuple[int, int]:
    """(planes, elements per plane) of a shape whose last ``nd`` dims are pooled."""
    return math.prod(lead_dims(shape, nd)), math.prod(shape[len(shape) - nd:])


def _pool_buffers(x: Tensor, win: Windows, nd: int) -> tuple[tuple, np.ndarray, np.ndarray]:
    """The lead dims of ``x``, ``x`` as kernel-ready (P, D, H, W) planes, and the empty (P, oD, oH, oW) output."""
    lead = lead_dims(x.shape, nd)
    planes = _planes(x._array, lead, win.in_size)
    return lead, planes, np.empty(planes.shape[:1] + win.out_size, planes.dtype, like=planes)


# ------------------------------------------------------------------------------------------- differentiable ops
class _MaxPool(Function):
    """Window maxima and their flat per-plane input positions (torch's ``indices``)."""

    @staticmethod
    def forward(ctx, x: Tensor, win: Windows, nd: int):
        lead, planes, out = _pool_buffers(x, win, nd)
        indices = np.empty(out.shape, np.int64, like=out)
        backend(out).pooling.max_pool(planes, out, indices, win.starts, win.counts, win.steps)
        shape = lead + win.out_size[3 - nd:]
        idx = Tensor._make(indices.reshape(shape))
        ctx.mark_non_differentiable(idx)
        if ctx.needs_input_grad:
            ctx.indices, ctx.in_shape, ctx.nd = idx, tuple(x.shape), nd
        return _restore(out, shape, x._array.dtype), idx

    @staticmethod
    def backward(ctx, g: Tensor, _indices_grad: Any):
        return _MaxPoolBackward.apply(g, ctx.indices, ctx.in_shape, ctx.nd), None, None


class _MaxPoolBackward(Function):
    """Adds every output gradient at its arg-max position (a scatter); its own backward is a gather."""

    @staticmethod
    def forward(ctx, g: Tensor, indices: Tensor, in_shape: tuple, nd: int):
        planes, size = plane_sizes(in_shape, nd)
        dt = kernel_dtype(g._array.dtype)
        grad = ascontiguous(g._array, dtype=dt).reshape(plane_sizes(g.shape, nd))
        out = np.empty((planes, size), dt, like=grad)
        backend(grad).pooling.max_pool_backward(grad, ascontiguous(indices._array).reshape(grad.shape), out)
        ctx.indices, ctx.nd = indices, nd
        return _restore(out, in_shape, g._array.dtype)

    @staticmethod
    def backward(ctx, gg: Tensor):
        return _gather_planes(gg, ctx.indices, ctx.nd), None, None, None


def _gather_planes(values: Tensor, indices: Tensor, nd: int) -> Tensor:
    """``values`` read at per-plane flat positions ``indices`` (planes are the dims before the last ``nd``)."""
    rows = values.reshape(plane_sizes(values.shape, nd))
    return rows.gather(1, indices.reshape(plane_sizes(indices.shape, nd))).reshape(indices.shape)


class _AvgPool(Function):
    """Window means (sums over the divisor the windows carry)."""

    @staticmethod
    def forward(ctx, x: Tensor, win: Windows, nd: int):
        lead, planes, out = _pool_buffers(x, win, nd)
        backend(planes).pooling.avg_pool(planes, out, win.starts, win.counts, win.divisors, win.override)
        if ctx.needs_input_grad:
            ctx.win, ctx.in_shape, ctx.nd = win, tuple(x.shape), nd
        return _restore(out, lead + win.out_size[3 - nd:], x._array.dtype)

    @staticmethod
    def backward(ctx, g: Tensor):
        return _AvgPoolBackward.apply(g, ctx.win, ctx.in_shape, ctx.nd), None, None


class _AvgPoolBackward(Function):
    """The adjoint of ``_AvgPool`` (each output's share spread over its window); its backward is ``_AvgPool``."""

    @staticmethod
    def forward(ctx, g: Tensor, win: Windows, in_shape: tuple, nd: int):
        lead = lead_dims(in_shape, nd)
        grad = _planes(g._array, lead, win.out_size)
        out = np.empty(grad.shape[:1] + win.in_size, grad.dtype, like=grad)
        backend(grad).pooling.avg_pool_backward(grad, out, win.starts, win.counts, win.divisors, win.override)
        if ctx.needs_input_grad:
            ctx.win, ctx.nd = win, nd
        return _restore(out, in_shape, g._array.dtype)

    @staticmethod
    def backward(ctx, gg: Tensor):
        return _AvgPool.apply(gg, ctx.win, ctx.nd), None, None, None


def max_pool(x: Tensor, win: Windows, nd: int) -> tuple[Tensor, Tensor]:
    """(window maxima, their flat per-plane input positions) over the last ``nd`` dims of ``x``."""
    return _MaxPool.apply(x, win, nd)


def avg_pool(x: Tensor, win: Windows, nd: int) -> Tensor:
    """Window means over the last ``nd`` dims of ``x``."""
    return _AvgPool.apply(x, win, nd)

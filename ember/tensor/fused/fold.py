"""im2col and col2im as differentiable ops (``F.unfold``/``F.fold``) on the convolution kernels.

They use a (N, C * kH * kW, L) column layout. Each is the other's adjoint, so
each one's backward is the other op and gradients of any order work.
"""
from __future__ import annotations

import numpy as np

from ...autograd.function import Function
from .._dispatch import ascontiguous, backend
from ..tensor import Tensor
from .conv import ConvGeometry

__all__ = ["fold", "unfold"]


def _compute(t: Tensor) -> np.ndarray:
    """The array in a dtype the kernels take (float16 widened to float32), contiguous."""
    arr = t._array
    return ascontiguous(arr, dtype=t.dtype.compute.np)


class _Unfold(Function):
    """(N, C, H, W) -> (N, C * taps, L) blocks."""

    @staticmethod
    def forward(ctx, x: Tensor, geo: ConvGeometry):
        image = _compute(x)
        n, c = image.shape[:2]
        rows, length = c * geo.taps, geo.positions
        col = np.empty((n, rows, length), image.dtype, like=image)
        backend(image).conv.im2col(image.reshape((n, c) + geo.image), col.reshape(-1), geo.packed, rows * length,
                                     length)
        ctx.geo = geo
        return col.astype(x._array.dtype, copy=False)

    @staticmethod
    def backward(ctx, g: Tensor):
        return _Fold.apply(g, ctx.geo), None


class _Fold(Function):
    """(N, C * taps, L) blocks -> (N, C, H, W), overlapping values summed."""

    @staticmethod
    def forward(ctx, col: Tensor, geo: ConvGeometry):
        blocks = _compute(col)
        n, rows, length = blocks.shape
        image = np.empty((n, rows // geo.taps) + geo.image, blocks.dtype, like=blocks)
        backend(blocks).conv.col2im(blocks.reshape(-1), image, geo.packed, rows * length, length)
        ctx.geo = geo
        return image.reshape(image.shape[:2] + geo.spatial(geo.image)).astype(col._array.dtype, copy=False)

    @staticmethod
    def backward(ctx, g: Tensor):
        return _Unfold.apply(g, ctx.geo), None


def unfold(x: Tensor, geo: ConvGeometry) -> Tensor:
    """The sliding blocks of batched ``x`` (N, C, H, W) as columns (N, C * taps, L)."""
    return _Unfold.apply(x, geo)


def fold(col: Tensor, geo: ConvGeometry) -> Tensor:
    """Batched columns (N, C * taps, L) summed back into (N, C, H, W) images."""
    return _Fold.apply(col, geo)

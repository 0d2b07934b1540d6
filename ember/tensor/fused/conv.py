"""Convolution ops on the im2col/col2im kernels plus one BLAS product per group (1-, 2- and 3-d).

Three differentiable ops share one geometry (see ``ConvGeometry``):
``_Conv`` maps the image side to the column side, ``_ConvTranspose`` is its
adjoint, and ``_ConvWeightGrad`` is the gradient of ``_Conv`` with respect to
the weight. Each one's backward is written with the other two, so gradients
of gradients (of any order) come for free. Columns are laid out as
(channels * taps, batch * positions) so a whole batch is one matrix product.
"""
from __future__ import annotations

import math

import numpy as np

from ...autograd.function import Function
from ...kernels.common.conv import geometry_array
from ...kernels.common.dtypes import NARROW_FLOATS
from .._dispatch import ascontiguous, backend
from ..tensor import Tensor

__all__ = ["ConvGeometry", "conv", "conv_transpose", "kernel_dtype"]


# ----------------------------------------------------------------------------------------------------- geometry
def _pad3(values: tuple[int, ...], fill: int) -> tuple[int, int, int]:
    """Widen per-dim values of a 1-/2-d op to 3 dims (unit leading dims)."""
    return (fill,) * (3 - len(values)) + tuple(values)


class ConvGeometry:
    """Where every tap of a convolution reads, in 3 spatial dims (1-/2-d ops get unit leading dims).

    ``image`` is the spatial size of the side im2col reads (the conv input,
    the transposed conv output), ``cols`` the size of the other side.
    ``padding`` is the padding before the first element; the padding after is
    implied by the two sizes (so 'same' may pad unevenly).
    """

    __slots__ = ("ndim", "kernel", "stride", "padding", "dilation", "image", "cols", "groups", "packed")

    def __init__(self, ndim: int, kernel, stride, padding, dilation, image, cols, groups: int) -> None:
        self.ndim = ndim
        self.kernel, self.stride = _pad3(kernel, 1), _pad3(stride, 1)
        self.padding, self.dilation = _pad3(padding, 0), _pad3(dilation, 1)
        self.image, self.cols = _pad3(image, 1), _pad3(cols, 1)
        self.groups = groups
        self.packed = geometry_array(self.kernel, self.stride, self.padding, self.dilation, self.cols)

    @property
    def taps(self) -> int:
        return math.prod(self.kernel)

    @property
    def positions(self) -> int:
        return math.prod(self.cols)

    def spatial(self, side: tuple[int, ...]) -> tuple[int, ...]:
        """A 3-d size back in the op's own number of dims."""
        return side[3 - self.ndim:]


# ------------------------------------------------------------------------------------------------ array helpers
def kernel_dtype(dt: np.dtype) -> np.dtype:
    """The dtype kernels compute in: float16 and bfloat16 in float32, integers in float64 (exact below 2**53)."""
    if dt in NARROW_FLOATS:
        return np.dtype(np.float32)
    return dt if dt in (np.float32, np.float64) else np.dtype(np.float64)


def _cast_back(arr: np.ndarray, dt: np.dtype) -> np.ndarray:
    if arr.dtype == dt:
        return arr
    if dt.kind in "iu":
        return np.rint(arr).astype(np.int64).astype(dt)
    return arr.astype(dt)


def _compute(t: Tensor | None, dt: np.dtype) -> np.ndarray | None:
    if t is None:
        return None
    arr = t._array
    return ascontiguous(arr if arr.dtype == dt else arr.astype(dt))


def columns(image: np.ndarray, geo: ConvGeometry) -> np.ndarray:
    """The (groups, channels/groups * taps, batch * positions) receptive fields of an (N, C, *image) array."""
    n, c = image.shape[:2]
    length = geo.positions
    col = np.empty(c * geo.taps * n * length, dtype=image.dtype, like=image)
    backend(image).conv.im2col(image.reshape((n, c) + geo.image), col, geo.packed, length, n * length)
    return col.reshape(geo.groups, c // geo.groups * geo.taps, n * length)


def _to_image(col: np.ndarray, n: int, channels: int, geo: ConvGeometry) -> np.ndarray:
    """col2im of (groups, C/groups * taps, N * positions) columns into a new (N, C, *image) array."""
    image = np.empty((n, channels) + geo.image, dtype=col.dtype, like=col)
    length = geo.positions
    backend(col).conv.col2im(col.reshape(-1), image, geo.packed, length, n * length)
    return image.reshape((n, channels) + geo.spatial(geo.image))


def _channels_major(arr: np.ndarray, groups: int) -> np.ndarray:
    """(N, C, *cols) -> contiguous (groups, C/groups, N * positions)."""
    n, c = arr.shape[:2]
    length = math.prod(arr.shape[2:])
    moved = ascontiguous(arr.reshape(n, c, length).transpose(1, 0, 2))
    return moved.reshape(groups, c // groups, n * length)


def _batch_major(arr: np.ndarray, n: int, geo: ConvGeometry, bias: np.ndarray | None) -> np.ndarray:
    """(groups, C/groups, N * positions) -> new (N, C, *cols), adding ``bias`` per channel on the way."""
    c = arr.shape[0] * arr.shape[1]
    out = np.empty((n, c, geo.positions), dtype=arr.dtype, like=arr)
    moved = arr.reshape(c, n, geo.positions).transpose(1, 0, 2)
    if bias is None:
        np.copyto(out, moved)
    else:
        np.add(moved, bias.reshape(1, c, 1), out=out)
    return out.reshape((n, c) + geo.spatial(geo.cols))


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=a.dtype, like=a)
    backend(a).matmul(a, b, out)
    return out


def _weight3(w: np.ndarray, groups: int) -> np.ndarray:
    """Weight (col channels, image channels/groups, *kernel) as (groups, col channels/groups, rest)."""
    return w.reshape(groups, w.shape[0] // groups, math.prod(w.shape[1:]))


def _add_image_bias(image: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    if bias is not None:
        image += bias.reshape((1, -1) + (1,) * (image.ndim - 2))
    return image


# ------------------------------------------------------------------------------------------- differentiable ops
def _bias_grad(g: Tensor) -> Tensor:
    return g.sum((0,) + tuple(range(2, g.ndim)))


class _Conv(Function):
    """Image (N, C, *image) to columns side (N, OC, *cols): the convolution itself."""

    @staticmethod
    def forward(ctx, x: Tensor, w: Tensor, b: Tensor | None, geo: ConvGeometry):
        dt = kernel_dtype(x._array.dtype)
        col = columns(_compute(x, dt), geo)
        out = _matmul(_weight3(_compute(w, dt), geo.groups), col)
        result = _batch_major(out, x.shape[0], geo, _compute(b, dt))
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, w)
            ctx.geo = geo
            if ctx.needs_input_grad[1]:
                ctx.col = col  # reused by the weight gradient
        return _cast_back(result, x._array.dtype)

    @staticmethod
    def backward(ctx, g: Tensor):
        x, w = ctx.saved_tensors
        geo = ctx.geo
        col = ctx.__dict__.pop("col", None)
        both = ctx.needs_input_grad[0] and ctx.needs_input_grad[1]
        # Both input and weight gradients read g channels-major: transpose it once.
        moved = _channels_major(_compute(g, kernel_dtype(g._array.dtype)), geo.groups) if both else None
        gx = _ConvTranspose.apply(g, w, None, geo, moved) if ctx.needs_input_grad[0] else None
        gw = _ConvWeightGrad.apply(x, g, geo, col, moved) if ctx.needs_input_grad[1] else None
        gb = _bias_grad(g) if ctx.needs_input_grad[2] else None
        return gx, gw, gb, None


class _ConvTranspose(Function):
    """Columns side (N, OC, *cols) back to the image side (N, C, *image): the adjoint of ``_Conv``."""

    @staticmethod
    def forward(ctx, y: Tensor, w: Tensor, b: Tensor | None, geo: ConvGeometry, moved: np.ndarray | None):
        dt = kernel_dtype(y._array.dtype)
        w3 = _weight3(_compute(w, dt), geo.groups)
        if moved is None:
            moved = _channels_major(_compute(y, dt), geo.groups)
        col = _matmul(ascontiguous(w3.transpose(0, 2, 1)), moved)
        image = _add_image_bias(_to_image(col, y.shape[0], w.shape[1] * geo.groups, geo), _compute(b, dt))
        if ctx.needs_input_grad:
            ctx.save_for_backward(y, w)
            ctx.geo = geo
        return _cast_back(image, y._array.dtype)

    @staticmethod
    def backward(ctx, g: Tensor):
        y, w = ctx.saved_tensors
        geo = ctx.geo
        gy = _Conv.apply(g, w, None, geo) if ctx.needs_input_grad[0] else None
        gw = _ConvWeightGrad.apply(g, y, geo, None, None) if ctx.needs_input_grad[1] else None
        gb = _bias_grad(g) if ctx.needs_input_grad[2] else None
        return gy, gw, gb, None, None


class _ConvWeightGrad(Function):
    """d<gy, conv(x, w)>/dw: bilinear in the image-side ``x`` and the columns-side ``gy``."""

    @staticmethod
    def forward(ctx, x: Tensor, gy: Tensor, geo: ConvGeometry, col: np.ndarray | None,
                moved: np.ndarray | None):
        """``col`` and ``moved`` are x's columns and gy channels-major, when the caller has them already."""
        dt = kernel_dtype(x._array.dtype)
        if col is None:
            col = columns(_compute(x, dt), geo)
        gyt = _channels_major(_compute(gy, dt), geo.groups) if moved is None else moved
        # The inner dim (batch * positions) is long; OpenBLAS then ran up to 30x slower when the product's
        # first dim was the shorter one, so the longer of out-channels and taps goes first.
        if gyt.shape[1] >= col.shape[1]:
            gw = _matmul(gyt, col.transpose(0, 2, 1))
        else:
            gw = _matmul(col, gyt.transpose(0, 2, 1)).transpose(0, 2, 1)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, gy)
            ctx.geo = geo
        shape = (gy.shape[1], x.shape[1] // geo.groups) + geo.spatial(geo.kernel)
        return _cast_back(gw.reshape(shape), x._array.dtype)

    @staticmethod
    def backward(ctx, ggw: Tensor):
        x, gy = ctx.saved_tensors
        geo = ctx.geo
        gx = _ConvTranspose.apply(gy, ggw, None, geo, None) if ctx.needs_input_grad[0] else None
        ggy = _Conv.apply(x, ggw, None, geo) if ctx.needs_input_grad[1] else None
        return gx, ggy, None, None, None


def conv(x: Tensor, w: Tensor, b: Tensor | None, geo: ConvGeometry) -> Tensor:
    """The convolution of batched ``x`` (N, C, *image) by ``w`` (plus ``b`` per channel): (N, OC, *cols)."""
    return _Conv.apply(x, w, b, geo)


def conv_transpose(y: Tensor, w: Tensor, b: Tensor | None, geo: ConvGeometry) -> Tensor:
    """The transposed convolution of batched ``y`` (N, C, *cols) by ``w`` (plus ``b``): (N, OC, *image)."""
    return _ConvTranspose.apply(y, w, b, geo, None)

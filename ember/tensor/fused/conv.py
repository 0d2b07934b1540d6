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

__all__ = ["ConvGeometry", "channels_first_view", "channels_last_rows", "conv", "conv_transpose", "is_channels_last",
           "kernel_dtype"]


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

    __slots__ = ("ndim", "kernel", "stride", "padding", "dilation", "image", "cols", "groups", "packed",
                 "channels_last")

    def __init__(self, ndim: int, kernel, stride, padding, dilation, image, cols, groups: int) -> None:
        self.ndim = ndim
        self.kernel, self.stride = _pad3(kernel, 1), _pad3(stride, 1)
        self.padding, self.dilation = _pad3(padding, 0), _pad3(dilation, 1)
        self.image, self.cols = _pad3(image, 1), _pad3(cols, 1)
        self.groups = groups
        self.packed = geometry_array(self.kernel, self.stride, self.padding, self.dilation, self.cols)
        self.channels_last = False  # set by ``in_layout_of``: all three ops then run the NDHWC kernels

    def in_layout_of(self, *tensors: Tensor) -> "ConvGeometry":
        """This geometry, in channels-last form when any of ``tensors`` is channels-last (torch's rule on CPU:
        the input's or the weight's suggested format), so a convolution and all its gradients keep one layout.
        Only 2-d: torch's CPU 3-d convolutions return contiguous results for channels_last_3d operands."""
        wanted = self.ndim == 2 and any(is_channels_last(t._array) for t in tensors if t is not None)
        if wanted == self.channels_last:
            return self
        twin = object.__new__(ConvGeometry)
        for name in ConvGeometry.__slots__:
            setattr(twin, name, getattr(self, name))
        twin.channels_last = wanted
        return twin

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
def is_channels_last(arr) -> bool:
    """Whether an (N, C, *spatial) array is laid out channels-last and not also plain contiguous (torch's
    ``suggest_memory_format``: an ambiguous layout, e.g. one channel, counts as contiguous)."""
    if arr.ndim not in (4, 5) or arr.size <= 1:
        return False
    order = (0,) + tuple(range(2, arr.ndim)) + (1,)
    moved = arr.transpose(order)
    return moved.flags.c_contiguous and not arr.flags.c_contiguous
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


def _cast(t: Tensor, dt: np.dtype) -> np.ndarray:
    """``t``'s array in dtype ``dt``, strides kept (the channels-last helpers take any layout)."""
    arr = t._array
    return arr if arr.dtype == dt else arr.astype(dt, order="K")


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


# -------------------------------------------------------------------------- channels-last (NDHWC) array helpers
# Channels-last tensors keep (N, C, *spatial) shapes over (N, *spatial, C) memory. These helpers work on that
# memory directly: the columns are (N * positions, taps * C) rows, so the product's result rows are already the
# output's NDHWC memory and no side is ever moved to NCHW.
def channels_last_rows(arr: np.ndarray) -> np.ndarray:
    """(N, C, *spatial) -> its (N, *spatial, C) view, made contiguous (free for a channels-last array)."""
    return ascontiguous(arr.transpose((0,) + tuple(range(2, arr.ndim)) + (1,)))


def channels_first_view(arr: np.ndarray) -> np.ndarray:
    """(N, *spatial, C) -> the (N, C, *spatial) view of it: a channels-last array."""
    return arr.transpose((0, arr.ndim - 1) + tuple(range(1, arr.ndim - 1)))


def _group_rows(rows: np.ndarray, groups: int) -> np.ndarray:
    """(M, G * K) rows -> (G, M, K): a free view for one group, a copy per group otherwise."""
    m, k = rows.shape
    if groups == 1:
        return rows.reshape(1, m, k)
    return ascontiguous(rows.reshape(m, groups, k // groups).transpose(1, 0, 2))


def _ungroup_rows(arr: np.ndarray) -> np.ndarray:
    """(G, M, K) -> (M, G * K), the inverse of ``_group_rows``."""
    g, m, k = arr.shape
    return arr.reshape(m, k) if g == 1 else ascontiguous(arr.transpose(1, 0, 2)).reshape(m, g * k)


def _rows_of(arr: np.ndarray, groups: int) -> np.ndarray:
    """A columns-side (N, C, *cols) array as (G, N * positions, C/G) rows."""
    moved = channels_last_rows(arr)
    return _group_rows(moved.reshape(-1, moved.shape[-1]), groups)


def _columns_last(image: np.ndarray, geo: ConvGeometry) -> np.ndarray:
    """Receptive fields of an (N, C, *image) array as (G, N * positions, taps * C/G) (tap-major, channel inner)."""
    n, c = image.shape[:2]
    moved = channels_last_rows(image).reshape((n,) + geo.image + (c,))
    col = np.empty(n * geo.positions * geo.taps * c, dtype=image.dtype, like=image)
    backend(image).conv.im2col_channels_last(moved, col, geo.packed)
    if geo.groups == 1:
        return col.reshape(1, n * geo.positions, geo.taps * c)
    cg = c // geo.groups
    split = col.reshape(n * geo.positions, geo.taps, geo.groups, cg).transpose(2, 0, 1, 3)
    return ascontiguous(split).reshape(geo.groups, n * geo.positions, geo.taps * cg)


def _image_last(col: np.ndarray, n: int, channels: int, geo: ConvGeometry) -> np.ndarray:
    """col2im of (G, N * positions, taps * C/G) columns into a new channels-last (N, C, *image) array."""
    g, rows, width = col.shape
    if g > 1:
        col = ascontiguous(col.reshape(g, rows, geo.taps, width // geo.taps).transpose(1, 2, 0, 3))
    image = np.empty((n,) + geo.image + (channels,), dtype=col.dtype, like=col)
    backend(col).conv.col2im_channels_last(col.reshape(-1), image, geo.packed)
    return channels_first_view(image.reshape((n,) + geo.spatial(geo.image) + (channels,)))


def _weight_last(w: np.ndarray, groups: int) -> np.ndarray:
    """Weight (col channels, image channels/G, *kernel) as (G, col channels/G, taps * image channels/G)."""
    return channels_last_rows(w).reshape(groups, w.shape[0] // groups, -1)


def _from_rows(arr: np.ndarray, n: int, spatial: tuple[int, ...], bias: np.ndarray | None) -> np.ndarray:
    """(G, N * positions, C/G) product rows -> channels-last (N, C, *spatial), adding ``bias`` per channel."""
    rows = _ungroup_rows(arr)
    if bias is not None:
        rows += bias
    return channels_first_view(rows.reshape((n,) + spatial + (rows.shape[1],)))


def _matmul_t(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b^T over groups, for (G, M, K) ``a`` and (G, N, K) ``b``."""
    return _matmul(a, b.transpose(0, 2, 1))


# ------------------------------------------------------------------------------------------- differentiable ops
def _bias_grad(g: Tensor) -> Tensor:
    return g.sum((0,) + tuple(range(2, g.ndim)))


def _moved_grad(g: Tensor, geo: ConvGeometry) -> np.ndarray:
    """A columns-side gradient in the layout both backward products read: channels-major or rows."""
    arr = _cast(g, kernel_dtype(g._array.dtype))
    return _rows_of(arr, geo.groups) if geo.channels_last else _channels_major(ascontiguous(arr), geo.groups)


class _Conv(Function):
    """Image (N, C, *image) to columns side (N, OC, *cols): the convolution itself."""

    @staticmethod
    def forward(ctx, x: Tensor, w: Tensor, b: Tensor | None, geo: ConvGeometry):
        dt = kernel_dtype(x._array.dtype)
        if geo.channels_last:
            col = _columns_last(_cast(x, dt), geo)
            out = _matmul_t(col, _weight_last(_cast(w, dt), geo.groups))
            result = _from_rows(out, x.shape[0], geo.spatial(geo.cols), _compute(b, dt))
        else:
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
        # Both input and weight gradients read g channels-major (rows, channels last): move it once.
        moved = _moved_grad(g, geo) if both else None
        gx = _ConvTranspose.apply(g, w, None, geo, moved) if ctx.needs_input_grad[0] else None
        gw = _ConvWeightGrad.apply(x, g, geo, col, moved) if ctx.needs_input_grad[1] else None
        gb = _bias_grad(g) if ctx.needs_input_grad[2] else None
        return gx, gw, gb, None


class _ConvTranspose(Function):
    """Columns side (N, OC, *cols) back to the image side (N, C, *image): the adjoint of ``_Conv``."""

    @staticmethod
    def forward(ctx, y: Tensor, w: Tensor, b: Tensor | None, geo: ConvGeometry, moved: np.ndarray | None):
        dt = kernel_dtype(y._array.dtype)
        if moved is None:
            moved = _moved_grad(y, geo)
        channels = w.shape[1] * geo.groups
        if geo.channels_last:
            col = _matmul(moved, _weight_last(_cast(w, dt), geo.groups))
            image = _add_image_bias(_image_last(col, y.shape[0], channels, geo), _compute(b, dt))
        else:
            w3 = _weight3(_compute(w, dt), geo.groups)
            col = _matmul(ascontiguous(w3.transpose(0, 2, 1)), moved)
            image = _add_image_bias(_to_image(col, y.shape[0], channels, geo), _compute(b, dt))
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
        shape = (gy.shape[1], x.shape[1] // geo.groups) + geo.spatial(geo.kernel)
        gyt = _moved_grad(gy, geo) if moved is None else moved
        if geo.channels_last:
            if col is None:
                col = _columns_last(_cast(x, dt), geo)
            gw = _matmul(gyt.transpose(0, 2, 1), col)  # (G, OC/G, taps * C/G): channels-last
            if ctx.needs_input_grad:
                ctx.save_for_backward(x, gy)
                ctx.geo = geo
            kept = gw.reshape((shape[0],) + shape[2:] + (shape[1],))
            return _cast_back(channels_first_view(kept), x._array.dtype)
        if col is None:
            col = columns(_compute(x, dt), geo)
        # The inner dim (batch * positions) is long; OpenBLAS then ran up to 30x slower when the product's
        # first dim was the shorter one, so the longer of out-channels and taps goes first.
        if gyt.shape[1] >= col.shape[1]:
            gw = _matmul(gyt, col.transpose(0, 2, 1))
        else:
            gw = _matmul(col, gyt.transpose(0, 2, 1)).transpose(0, 2, 1)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, gy)
            ctx.geo = geo
        return _cast_back(ascontiguous(gw).reshape(shape), x._array.dtype)

    @staticmethod
    def backward(ctx, ggw: Tensor):
        x, gy = ctx.saved_tensors
        geo = ctx.geo
        gx = _ConvTranspose.apply(gy, ggw, None, geo, None) if ctx.needs_input_grad[0] else None
        ggy = _Conv.apply(x, ggw, None, geo) if ctx.needs_input_grad[1] else None
        return gx, ggy, None, None, None


def conv(x: Tensor, w: Tensor, b: Tensor | None, geo: ConvGeometry) -> Tensor:
    """The convolution of batched ``x`` (N, C, *image) by ``w`` (plus ``b`` per channel): (N, OC, *cols)."""
    return _Conv.apply(x, w, b, geo.in_layout_of(x, w))


def conv_transpose(y: Tensor, w: Tensor, b: Tensor | None, geo: ConvGeometry) -> Tensor:
    """The transposed convolution of batched ``y`` (N, C, *cols) by ``w`` (plus ``b``): (N, OC, *image)."""
    return _ConvTranspose.apply(y, w, b, geo.in_layout_of(y, w), None)

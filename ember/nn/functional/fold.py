"""F.unfold (im2col) and F.fold (col2im): sliding blocks out of a batch of images and summed back.

They use the convolution kernels with a (N, C * kH * kW, L) column layout.
Each is the other's adjoint, so each one's backward is the other op and
gradients of any order work.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...autograd.function import Function
from ...tensor.elementwise import _dtype_name
from ...tensor.tensor import Tensor
from .conv import ConvGeometry, output_size
from ...tensor._dispatch import ascontiguous, family

__all__ = ["unfold", "fold"]


def _compute(t: Tensor) -> np.ndarray:
    """The array in a dtype the kernels take (float16 widened to float32), contiguous."""
    arr = t._array
    return ascontiguous(arr, dtype=np.float32 if arr.dtype == np.float16 else arr.dtype)


class _Unfold(Function):
    """(N, C, H, W) -> (N, C * taps, L) blocks."""

    @staticmethod
    def forward(ctx, x: Tensor, geo: ConvGeometry):
        image = _compute(x)
        n, c = image.shape[:2]
        rows, length = c * geo.taps, geo.positions
        col = np.empty((n, rows, length), image.dtype, like=image)
        family("conv", image).im2col(image.reshape((n, c) + geo.image), col.reshape(-1), geo.packed, rows * length,
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
        family("conv", blocks).col2im(blocks.reshape(-1), image, geo.packed, rows * length, length)
        ctx.geo = geo
        return image.reshape(image.shape[:2] + geo.spatial(geo.image)).astype(col._array.dtype, copy=False)

    @staticmethod
    def backward(ctx, g: Tensor):
        return _Unfold.apply(g, ctx.geo), None


def _pair(value: Any, name: str) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value), int(value)
    items = tuple(value)
    if len(items) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(items)}")
    return int(items[0]), int(items[1])


def _block_args(kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> tuple:
    kernel, dilation = _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation")
    padding, stride = _pair(padding, "padding"), _pair(stride, "stride")
    for values, what, bad, rule in ((kernel, "kernel size", lambda v: v <= 0, "be greater than zero"),
                                    (stride, "stride", lambda v: v <= 0, "be greater than zero"),
                                    (padding, "padding", lambda v: v < 0, "be non-negative"),
                                    (dilation, "dilation", lambda v: v <= 0, "be greater than zero")):
        if any(bad(v) for v in values):
            word = {"kernel size": "kernel", "padding": "pad"}.get(what, what)
            raise RuntimeError(f"{what} should {rule}, but got {word}_height: {values[0]} {word}_width: {values[1]}")
    return kernel, dilation, padding, stride


def _check_float(op: str, t: Tensor) -> None:
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{_dtype_name(t.dtype)}'")


def _blocks(size: tuple[int, int], kernel, dilation, padding, stride) -> tuple[int, int]:
    return tuple(output_size(n, k, s, 2 * p, d) for n, k, s, p, d in zip(size, kernel, stride, padding, dilation))


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """Sliding (kH, kW) blocks of an (N, C, H, W) or (C, H, W) input as columns: (N, C * kH * kW, L)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"unfold(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    kernel, dilation, padding, stride = _block_args(kernel_size, dilation, padding, stride)
    if input.ndim not in (3, 4) or any(n == 0 for n in input.shape[input.ndim - 3:]):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    _check_float("im2col_out_cpu", input)
    size = tuple(input.shape[-2:])
    blocks = _blocks(size, kernel, dilation, padding, stride)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size {size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, calculated shape of the array of sliding blocks as {blocks}, but its "
                           "components must be at least one.")
    geo = ConvGeometry(2, kernel, stride, padding, dilation, size, blocks, 1)
    if input.ndim == 3:
        return _Unfold.apply(input.unsqueeze(0), geo).squeeze(0)
    return _Unfold.apply(input, geo)


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    """Sum (N, C * kH * kW, L) or (C * kH * kW, L) columns back into (N, C, *output_size) images."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fold(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    size = _pair(output_size, "output_size")
    kernel, dilation, padding, stride = _block_args(kernel_size, dilation, padding, stride)
    if input.ndim not in (2, 3) or any(n == 0 for n in input.shape[input.ndim - 2:]):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    _check_float("col2im_out_cpu", input)
    taps = math.prod(kernel)
    if input.shape[-2] % taps:
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={input.shape[-2]} and kernel_size={kernel}.")
    blocks = _blocks(size, kernel, dilation, padding, stride)
    if blocks[0] * blocks[1] != input.shape[-1] or any(b < 1 for b in blocks):
        raise RuntimeError(f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, padding={padding}, "
                           f"stride={stride}, expected size of input's dimension 2 to match the calculated number of "
                           f"sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={input.shape[-1]}.")
    geo = ConvGeometry(2, kernel, stride, padding, dilation, size, blocks, 1)
    if input.ndim == 2:
        return _Fold.apply(input.unsqueeze(0), geo).squeeze(0)
    return _Fold.apply(input, geo)

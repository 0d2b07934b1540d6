"""F.unfold (im2col) and F.fold (col2im): sliding blocks out of a batch of images and summed back.

This module checks torch's arguments; the ops, each the other's adjoint, are ``ember.tensor.fused.fold``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...tensor.fused import fold as fused
from ...tensor.fused.conv import ConvGeometry
from ...tensor.tensor import Tensor
from .conv import output_size

__all__ = ["unfold", "fold"]


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
        raise NotImplementedError(f"\"{op}\" not implemented for '{t.dtype.scalar_type_name}'")


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
        return fused.unfold(input.unsqueeze(0), geo).squeeze(0)
    return fused.unfold(input, geo)


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
        return fused.fold(input.unsqueeze(0), geo).squeeze(0)
    return fused.fold(input, geo)

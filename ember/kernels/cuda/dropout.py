"""Fused dropout kernels on the device: compare-scale in one grid-stride pass, and the matching gradient.

Semantics are the CPU's (``ember.kernels.cpu.dropout``): an element is kept
when its 32 random bits (a uint32 storage the caller filled, e.g. with
``random.random_bits_``) are at least ``threshold`` (= p * 2**32, so up to
2**32: compared as uint64); the output is ``x * mult + add`` with (mult, add)
= (scale, keep_add) when kept and (0, drop_value) when dropped, so a dropped
inf still gives NaN, as in torch.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from .launch import grid
from .storage import DeviceStorage

__all__ = ["dropout_forward", "masked_scale"]


@cuda.jit
def _dropout_kernel(n, x, ox, bits, ob, threshold, scale, keep_add, drop_value, out, oo, mask, om):
    zero = scale - scale
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        keep = bits[ob + i] >= threshold
        mask[om + i] = keep
        out[oo + i] = x[ox + i] * (scale if keep else zero) + (keep_add if keep else drop_value)


@cuda.jit
def _masked_scale_kernel(n, g, og, mask, om, scale, out, oo):
    zero = scale - scale
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[oo + i] = g[og + i] * (scale if mask[om + i] else zero)


def dropout_forward(x: DeviceStorage, bits: DeviceStorage, threshold: int, scale: float, keep_add: float,
                    drop_value: float, out: DeviceStorage, mask: DeviceStorage) -> None:
    """Fill ``out`` (x's dtype) and ``mask`` (bool): kept iff ``bits >= threshold``; all 1-D contiguous,
    ``bits`` uint32, x float32/float64."""
    if bits.dtype != np.uint32:
        raise TypeError(f"dropout_forward: bits must be uint32, got {bits.dtype}")
    n = x.numel
    if n == 0:
        return
    t = x.dtype.type
    blocks, threads = grid(n)
    _dropout_kernel[blocks, threads](n, x.buffer, x.offset, bits.buffer, bits.offset, np.uint64(threshold),
                                     t(scale), t(keep_add), t(drop_value), out.buffer, out.offset, mask.buffer,
                                     mask.offset)


def masked_scale(g: DeviceStorage, mask: DeviceStorage, scale: float, out: DeviceStorage) -> None:
    """``out = g * (scale if mask else 0)``: dropout's gradient; 1-D contiguous, g float32/float64."""
    n = g.numel
    if n == 0:
        return
    blocks, threads = grid(n)
    _masked_scale_kernel[blocks, threads](n, g.buffer, g.offset, mask.buffer, mask.offset, g.dtype.type(scale),
                                          out.buffer, out.offset)

"""Fused dropout kernels: draw-compare-scale in one pass, and the matching gradient.

The random bits come from the caller (32 per element, drawn from an ember
Generator so ``manual_seed`` replays them); an element is kept when its bits
are at least ``threshold`` (= p * 2**32). The output is ``x * mult + add`` with
(mult, add) = (scale, keep_add) for kept and (0, drop_value) for dropped
elements: plain dropout and alpha dropout in one kernel, with torch's
NaN/inf behaviour (a dropped inf still gives NaN, as 0 * inf does there).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .parallelism import parallel_pays

BLOCK = 16384
kernel = njit(cache=True, nogil=True, error_model="numpy")
parallel_kernel = njit(cache=True, nogil=True, error_model="numpy", parallel=True)
inline = njit(cache=False, nogil=True, error_model="numpy", inline="always")


@inline
def _dropout_block(x, bits, threshold, scale, keep_add, drop_value, out, mask, lo, hi):
    zero = scale - scale
    for i in range(lo, hi):
        keep = bits[i] >= threshold
        mask[i] = keep
        out[i] = x[i] * (scale if keep else zero) + (keep_add if keep else drop_value)


@kernel
def _dropout_serial(x, bits, threshold, scale, keep_add, drop_value, out, mask):
    _dropout_block(x, bits, threshold, scale, keep_add, drop_value, out, mask, 0, x.size)


@parallel_kernel
def _dropout_parallel(x, bits, threshold, scale, keep_add, drop_value, out, mask):
    n = x.size
    for k in prange((n + BLOCK - 1) // BLOCK):
        _dropout_block(x, bits, threshold, scale, keep_add, drop_value, out, mask, k * BLOCK,
                       min(n, (k + 1) * BLOCK))


@inline
def _masked_scale_block(g, mask, scale, out, lo, hi):
    zero = scale - scale
    for i in range(lo, hi):
        out[i] = g[i] * (scale if mask[i] else zero)


@kernel
def _masked_scale_serial(g, mask, scale, out):
    _masked_scale_block(g, mask, scale, out, 0, g.size)


@parallel_kernel
def _masked_scale_parallel(g, mask, scale, out):
    n = g.size
    for k in prange((n + BLOCK - 1) // BLOCK):
        _masked_scale_block(g, mask, scale, out, k * BLOCK, min(n, (k + 1) * BLOCK))


def dropout_forward(x: np.ndarray, bits: np.ndarray, threshold: int, scale: float, keep_add: float,
                    drop_value: float, out: np.ndarray, mask: np.ndarray) -> None:
    """Fill ``out`` (x's dtype) and ``mask`` (bool): kept iff ``bits >= threshold``; all 1-D contiguous,
    ``bits`` uint32, x float32/float64."""
    t = x.dtype.type
    run = _dropout_parallel if parallel_pays(x.size) else _dropout_serial
    run(x, bits, np.uint64(threshold), t(scale), t(keep_add), t(drop_value), out, mask)


def masked_scale(g: np.ndarray, mask: np.ndarray, scale: float, out: np.ndarray) -> None:
    """``out = g * (scale if mask else 0)``: dropout's gradient; 1-D contiguous, g float32/float64."""
    run = _masked_scale_parallel if parallel_pays(g.size) else _masked_scale_serial
    run(g, mask, g.dtype.type(scale), out)


__all__ = ["dropout_forward", "masked_scale"]

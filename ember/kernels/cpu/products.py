"""Batched matrix products ``out[p] = a[p] @ b[p]``.

float32 and float64 go to BLAS through NumPy. float16 and bfloat16 are multiplied
in float32 by BLAS too (the float32 accumulation torch uses, rounded once; Numba
has neither on the CPU).
Integers and bool use a Numba kernel in i-k-j order, so the innermost loop
runs along rows of ``b`` and ``out``: integers accumulate in int64 and wrap to
the output dtype as torch's do, and bool is the OR of ANDs (a nonzero count).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..common.dtypes import NARROW_FLOATS, computable
from .parallelism import parallel_pays

inline = njit(inline="always")

# Rows of ``out`` (over all batches) per parallel work item.
ROWS = 4


@inline
def _rows(a, b, out, lo, hi):
    """Rows ``lo:hi`` of ``out`` seen as (B * M, N)."""
    m, depth, n = a.shape[1], a.shape[2], b.shape[2]
    acc = np.empty(n, np.int64)
    for r in range(lo, hi):
        p, i = r // m, r % m
        for j in range(n):
            acc[j] = 0
        for k in range(depth):
            aik = np.int64(a[p, i, k])
            for j in range(n):
                acc[j] += aik * np.int64(b[p, k, j])
        for j in range(n):
            out[p, i, j] = acc[j]


@njit(cache=True, nogil=True, error_model="numpy")
def _matmul_serial(a, b, out):
    _rows(a, b, out, 0, out.shape[0] * out.shape[1])


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def _matmul_parallel(a, b, out):
    count = out.shape[0] * out.shape[1]
    for k in prange((count + ROWS - 1) // ROWS):
        _rows(a, b, out, k * ROWS, min(count, (k + 1) * ROWS))


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ b`` for (B, M, K) ``a`` and (B, K, N) ``b`` of ``out``'s dtype, any strides."""
    if out.size == 0:
        return
    if out.dtype in (np.float32, np.float64):
        np.matmul(a, b, out=out)
    elif out.dtype in NARROW_FLOATS:
        out[...] = np.matmul(computable(a), computable(b))
    else:
        batch, m, depth = a.shape
        work = batch * m * depth * b.shape[2]
        (_matmul_parallel if parallel_pays(work) and batch * m > ROWS else _matmul_serial)(a, b, out)

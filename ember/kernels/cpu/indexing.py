"""Scatter kernels: ``out[index[i]] (op)= src[i]`` over flat buffers.

Every scatter-like op (scatter, scatter_add, scatter_reduce, index_add,
index_copy, index_put, put) is reduced by the caller to three flat arrays:
``out`` (1-D, contiguous, written in place), ``index`` (int64 positions in
``out``, already checked to be in range) and ``src`` (one value per index).
The loops run in index order and serially: duplicate indices hit the same
element, so they accumulate (or, for assignment, the last write wins) and no
parallel split could be free of write races.

One small kernel per reduction keeps compilation short and every kernel in
Numba's disk cache. Numba has no CPU float16 or bfloat16 and no arithmetic on
bool, so those dtypes are widened around the kernel call.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..common.dtypes import NARROW_FLOATS
from ..common.reductions import beats_max, beats_min

_jit = njit(cache=True, nogil=True, error_model="numpy")


@_jit
def _scatter_assign(out, index, src):
    for i in range(index.size):
        out[index[i]] = src[i]


@_jit
def _scatter_sum(out, index, src):
    for i in range(index.size):
        out[index[i]] += src[i]


@_jit
def _scatter_prod(out, index, src):
    for i in range(index.size):
        out[index[i]] *= src[i]


@njit(inline="always")
def _scatter_if(beats, out, index, src):
    for i in range(index.size):
        j = index[i]
        if beats(src[i], out[j]):  # NaN wins, as in torch
            out[j] = src[i]


@_jit
def _scatter_amax(out, index, src):
    _scatter_if(beats_max, out, index, src)


@_jit
def _scatter_amin(out, index, src):
    _scatter_if(beats_min, out, index, src)


SCATTER_KERNELS = {"assign": _scatter_assign, "sum": _scatter_sum, "prod": _scatter_prod,
                   "amax": _scatter_amax, "amin": _scatter_amin}
_WIDEN = {**{d: np.dtype(np.float32) for d in NARROW_FLOATS}, np.dtype(np.bool_): np.dtype(np.uint8)}


def scatter(reduce: str, out: np.ndarray, index: np.ndarray, src: np.ndarray) -> None:
    """``out[index[i]] (reduce)= src[i]`` for ``reduce`` in assign/sum/prod/amax/amin, in index order.

    ``out`` is 1-D and C-contiguous, ``index`` int64 with every entry in
    ``[0, out.size)``, ``src`` of ``out``'s dtype with ``index.size`` elements.
    """
    kernel = SCATTER_KERNELS[reduce]
    index = np.ascontiguousarray(index, dtype=np.int64).reshape(-1)
    src = np.ascontiguousarray(src).reshape(-1)
    if index.size == 0:
        return
    wide = _WIDEN.get(out.dtype)
    if wide is None:
        kernel(out, index, src.astype(out.dtype, copy=False))
        return
    tmp = out.astype(wide)
    kernel(tmp, index, src.astype(wide))
    out[...] = tmp != 0 if out.dtype == np.bool_ else tmp


__all__ = ["scatter"]

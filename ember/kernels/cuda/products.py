"""Batched matrix products on the GPU: ``out[p] = a[p] @ b[p]`` with a shared-memory tiled kernel.

Each block computes one ``TILE x TILE`` tile of one output matrix at a time
(grid-stride over all tiles of all batches, so the launcher can cap the grid):
it stages a tile of ``a`` and one of ``b`` in shared memory, synchronises, and
every thread accumulates its dot product from the staged tiles. Operands are
read through their strides (any strides, also 0 and negative), so transposed
or broadcast inputs need no copy.

Accumulation follows the CPU backend: float16 and float32 in float32, float64
in float64, integers in int64 wrapped to the output dtype on the store, and
bool as the OR of ANDs (a nonzero count stored into bool). The tile dtype must
be a compile-time constant for ``cuda.shared.array``, so there is one kernel per
accumulator dtype (three), built by one factory at import. Float products go to
cuBLAS instead when CuPy is installed (``vendor_blas``).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from . import vendor_blas
from .bfloat16 import widened
from .launch import SIMULATOR, grid

__all__ = ["matmul", "TILE"]

# Tile edge: a block is TILE x TILE threads (smaller under the simulator, which runs a Python thread per thread).
TILE = 4 if SIMULATOR else 16


def _tiled_kernel(acc):
    """The tiled product kernel accumulating in NumPy scalar type ``acc``."""

    @cuda.jit
    def kernel(a, a_off, a_st, b, b_off, b_st, out, o_off, o_st, batch, m, depth, n):
        ta = cuda.shared.array((TILE, TILE), acc)
        tb = cuda.shared.array((TILE, TILE), acc)
        ty = cuda.threadIdx.y
        tx = cuda.threadIdx.x
        tiles_m = (m + TILE - 1) // TILE
        tiles_n = (n + TILE - 1) // TILE
        per_matrix = tiles_m * tiles_n
        for tile in range(cuda.blockIdx.x, batch * per_matrix, cuda.gridDim.x):
            p = tile // per_matrix
            i = (tile % per_matrix) // tiles_n * TILE + ty
            j = (tile % tiles_n) * TILE + tx
            a_row = a_off + p * a_st[0] + i * a_st[1]
            b_col = b_off + p * b_st[0] + j * b_st[2]
            total = acc(0)
            for k0 in range(0, depth, TILE):
                if i < m and k0 + tx < depth:
                    ta[ty, tx] = a[a_row + (k0 + tx) * a_st[2]]
                else:
                    ta[ty, tx] = 0
                if j < n and k0 + ty < depth:
                    tb[ty, tx] = b[b_col + (k0 + ty) * b_st[1]]
                else:
                    tb[ty, tx] = 0
                cuda.syncthreads()
                for k in range(TILE):
                    total += ta[ty, k] * tb[k, tx]
                cuda.syncthreads()
            if i < m and j < n:
                out[o_off + p * o_st[0] + i * o_st[1] + j * o_st[2]] = total

    return kernel


def _plain_kernel(acc):
    """One thread per output element, no shared memory: what the simulator runs fast (it pays tens of milliseconds
    for every ``syncthreads``), used there once the tiled kernel would need more than ``SIMULATOR_TILE_STEPS``
    tile steps."""

    @cuda.jit
    def kernel(a, a_off, a_st, b, b_off, b_st, out, o_off, o_st, batch, m, depth, n):
        for e in range(cuda.grid(1), batch * m * n, cuda.gridsize(1)):
            p = e // (m * n)
            i = (e // n) % m
            j = e % n
            total = acc(0)
            for k in range(depth):
                total += a[a_off + p * a_st[0] + i * a_st[1] + k * a_st[2]] * b[b_off + p * b_st[0] + k * b_st[1]
                                                                                 + j * b_st[2]]
            out[o_off + p * o_st[0] + i * o_st[1] + j * o_st[2]] = total

    return kernel


_ACCUMULATORS = {"f": np.float32, "d": np.float64, "i": np.int64}
_KERNELS = {key: _tiled_kernel(acc) for key, acc in _ACCUMULATORS.items()}
_PLAIN = {key: _plain_kernel(acc) for key, acc in _ACCUMULATORS.items()} if SIMULATOR else {}
SIMULATOR_TILE_STEPS = 16


def _key(dtype: np.dtype) -> str:
    if dtype == np.float64:
        return "d"
    return "f" if dtype.kind == "f" else "i"


@widened("out")
def matmul(a, b, out) -> None:
    """``out = a @ b`` for (B, M, K) ``a`` and (B, K, N) ``b`` of ``out``'s dtype (``DeviceStorage``s, any strides).

    ``out`` is (B, M, N); with K == 0 it is filled with zeros.
    """
    batch, m, depth = a.shape
    n = b.shape[2]
    if tuple(b.shape) != (batch, depth, n) or tuple(out.shape) != (batch, m, n):
        raise ValueError(f"matmul: shapes {tuple(a.shape)} @ {tuple(b.shape)} -> {tuple(out.shape)} do not fit")
    if a.dtype != out.dtype or b.dtype != out.dtype:
        raise TypeError(f"matmul: dtypes {a.dtype}, {b.dtype} -> {out.dtype} differ")
    tiles = batch * -(-m // TILE) * -(-n // TILE)
    if tiles == 0 or (depth and vendor_blas.matmul(a, b, out)):
        return
    operands = (a.buffer, a.offset, tuple(a.strides), b.buffer, b.offset, tuple(b.strides),
                out.buffer, out.offset, tuple(out.strides), batch, m, depth, n)
    if SIMULATOR and tiles * -(-depth // TILE) > SIMULATOR_TILE_STEPS:
        _PLAIN[_key(np.dtype(out.dtype))][grid(batch * m * n)](*operands)
        return
    blocks, _ = grid(tiles, threads=1)
    _KERNELS[_key(np.dtype(out.dtype))][blocks, (TILE, TILE)](*operands)

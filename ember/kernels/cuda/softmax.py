"""Fused softmax and log-softmax over the rows of a 2-D storage, forward and backward.

One block per row (blocks grid-stride over the rows): the threads stride over
the row's columns, then combine through a shared-memory tree, once for the
row's max and once for the sum of exp(x - max), all in float64; a last pass
writes the row. As on the CPU, a NaN anywhere in a row makes the whole row NaN
(it reaches the sum through exp(x - max), whatever the max says), so the max
folds with a plain ``>`` that never picks a NaN.

``block_max`` and ``block_sum`` are the shared tree reductions; ``losses`` uses them too.
"""
from __future__ import annotations

import math

from numba import cuda, float64

from . import launch
from .storage import DeviceStorage

__all__ = ["softmax_forward", "softmax_backward"]

_T = launch.REDUCE_THREADS  # threads per block, a power of two (the shared-memory size)


@cuda.jit(device=True)
def block_max(shared, tid, value):
    """Max of ``value`` over the block (NaN never wins a comparison); every thread gets it.

    ``shared`` holds ``_T`` float64; the call ends synchronised, so ``shared`` may be reused at once.
    """
    shared[tid] = value
    cuda.syncthreads()
    s = _T // 2
    while s > 0:
        if tid < s and shared[tid + s] > shared[tid]:
            shared[tid] = shared[tid + s]
        cuda.syncthreads()
        s //= 2
    result = shared[0]
    cuda.syncthreads()
    return result


@cuda.jit(device=True)
def block_sum(shared, tid, value):
    """Sum of ``value`` over the block (a tree in ``shared``); every thread gets it, ``shared`` is free after."""
    shared[tid] = value
    cuda.syncthreads()
    s = _T // 2
    while s > 0:
        if tid < s:
            shared[tid] = shared[tid] + shared[tid + s]
        cuda.syncthreads()
        s //= 2
    result = shared[0]
    cuda.syncthreads()
    return result


@cuda.jit
def _forward_kernel(rows, n, x, ox, out, oo, log):
    shared = cuda.shared.array(_T, float64)
    tid = cuda.threadIdx.x
    for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
        bx = ox + r * n
        bo = oo + r * n
        m = -math.inf
        for j in range(tid, n, _T):
            v = float64(x[bx + j])
            if v > m:
                m = v
        m = block_max(shared, tid, m)
        s = 0.0
        for j in range(tid, n, _T):
            s += math.exp(float64(x[bx + j]) - m)
        s = block_sum(shared, tid, s)
        if log:
            ls = math.log(s)
            for j in range(tid, n, _T):
                out[bo + j] = (float64(x[bx + j]) - m) - ls
        else:
            inv = 1.0 / s
            for j in range(tid, n, _T):
                out[bo + j] = math.exp(float64(x[bx + j]) - m) * inv


@cuda.jit
def _backward_kernel(rows, n, y, oy, g, og, out, oo, log):
    shared = cuda.shared.array(_T, float64)
    tid = cuda.threadIdx.x
    for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
        by = oy + r * n
        bg = og + r * n
        bo = oo + r * n
        s = 0.0
        for j in range(tid, n, _T):
            if log:  # sum(g)
                s += float64(g[bg + j])
            else:  # sum(g * y)
                s += float64(g[bg + j]) * float64(y[by + j])
        s = block_sum(shared, tid, s)
        for j in range(tid, n, _T):
            if log:  # g - exp(y) * sum(g)
                out[bo + j] = float64(g[bg + j]) - math.exp(float64(y[by + j])) * s
            else:  # y * (g - sum(g * y))
                out[bo + j] = float64(y[by + j]) * (float64(g[bg + j]) - s)


def _blocks(rows: int) -> int:
    return min(launch.MAX_BLOCKS, rows)


def softmax_forward(x: DeviceStorage, out: DeviceStorage, log: bool) -> None:
    """``out`` = softmax (``log``: log_softmax) of each row of ``x``; both 2-D C-contiguous, float32/float64,
    at least one column."""
    rows, n = x.shape
    if rows == 0 or n == 0:
        return
    _forward_kernel[_blocks(rows), _T](rows, n, x.buffer, x.offset, out.buffer, out.offset, bool(log))


def softmax_backward(y: DeviceStorage, g: DeviceStorage, out: DeviceStorage, log: bool) -> None:
    """Input gradient of row softmax (``log``: log_softmax) from its output ``y`` and output gradient ``g``."""
    rows, n = y.shape
    if rows == 0 or n == 0:
        return
    _backward_kernel[_blocks(rows), _T](rows, n, y.buffer, y.offset, g.buffer, g.offset, out.buffer, out.offset,
                                        bool(log))

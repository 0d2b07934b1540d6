"""Linear + bias + activation on the device: ``ember.kernels.cpu.bias_activation``'s contract, one launch each way.

The scalar functions are the shared ones, built as device functions by ``activations.activation_function``. Forward
is a grid-stride loop over the (rows, features) array. Backward gives each block a tile of ``_TX`` features
and a share of the rows: its ``_TX x _TY`` threads walk the rows (neighbouring threads read neighbouring
features), write the pre-activation gradient and keep float64 column sums, which a shared-memory step
totals per tile. When the rows are split over several blocks, their partial sums go to a float64 scratch
that a second small launch adds up.
"""
from __future__ import annotations

import functools

import numpy as np
from numba import cuda, float64

from ..common.activations import BIAS_ACTIVATIONS, grad_function, grad_reads_output, scalar_params
from .activations import activation_function
from .launch import MAX_BLOCKS, SIMULATOR, grid
from .storage import DeviceStorage

__all__ = ["bias_activation_forward", "bias_activation_backward", "BIAS_ACTIVATIONS", "grad_reads_output"]

# Features per block tile, row lanes per tile, and the rows one lane takes before the rows go to more blocks.
_TX, _TY, _LANE_ROWS = (4, 2, 4) if SIMULATOR else (32, 8, 16)


def _check(name: str) -> None:
    if name not in BIAS_ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; expected one of {BIAS_ACTIVATIONS}")


@functools.cache
def _forward(name: str):
    _check(name)
    f = activation_function(name)

    def kernel(size, n, y, oy, bias, ob, out, oo, a, b, c):
        for i in range(cuda.grid(1), size, cuda.gridsize(1)):
            v = y[oy + i] + bias[ob + i % n]
            y[oy + i] = v
            out[oo + i] = f(v, a, b, c)  # after the store above, so ``out`` may be ``y``
    return cuda.jit(kernel)


@functools.cache
def _backward(name: str):
    _check(name)
    df = activation_function(grad_function(name))

    def kernel(m, n, s, os, g, og, out, oo, part, op, a, b, c):
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        sums = cuda.shared.array((_TY, _TX), float64)
        share = (m + cuda.gridDim.y - 1) // cuda.gridDim.y
        lo = cuda.blockIdx.y * share
        hi = min(m, lo + share)
        for tile in range(cuda.blockIdx.x, (n + _TX - 1) // _TX, cuda.gridDim.x):
            j = tile * _TX + tx
            acc = float64(0.0)
            if j < n:
                for i in range(lo + ty, hi, _TY):
                    k = i * n + j
                    d = df(s[os + k], g[og + k], a, b, c)
                    out[oo + k] = d
                    acc += d
            sums[ty, tx] = acc
            cuda.syncthreads()
            if ty == 0 and j < n:
                for r in range(1, _TY):
                    acc += sums[r, tx]
                part[op + cuda.blockIdx.y * n + j] = acc
            cuda.syncthreads()
    return cuda.jit(kernel)


@cuda.jit
def _sum_parts(chunks, n, part, db, odb):
    for j in range(cuda.grid(1), n, cuda.gridsize(1)):
        t = float64(0.0)
        for k in range(chunks):
            t += part[k * n + j]
        db[odb + j] = t


def bias_activation_forward(name: str, y: DeviceStorage, bias: DeviceStorage, out: DeviceStorage,
                            params: tuple = ()) -> None:
    """``y += bias`` (added to every row of 2-D ``y``) and ``out = f(y)`` in one launch; ``out`` may be ``y``."""
    kernel = _forward(name)
    size = y.numel
    if size == 0:
        return
    kernel[grid(size)](size, y.shape[1], y.buffer, y.offset, bias.buffer, bias.offset, out.buffer, out.offset,
                       *scalar_params(y, params))


def bias_activation_backward(name: str, saved: DeviceStorage, g: DeviceStorage, out: DeviceStorage,
                             bias_grad: DeviceStorage | None, params: tuple = ()) -> None:
    """``out = g * f'`` from ``saved`` (output or pre-activation, see ``grad_reads_output``); ``bias_grad`` (None:
    not wanted) gets the column sums of ``out``. One launch, two when the rows are split over blocks."""
    kernel = _backward(name)
    m, n = saved.shape
    if n == 0 or (m == 0 and bias_grad is None):
        return
    tiles = -(-n // _TX)
    blocks_x = min(tiles, MAX_BLOCKS)
    blocks_y = max(1, min(-(-m // (_TY * _LANE_ROWS)), MAX_BLOCKS // blocks_x))
    direct = bias_grad is not None and blocks_y == 1 and m > 0
    part = bias_grad if direct else DeviceStorage.empty((blocks_y, n), np.float64)
    if m > 0:
        kernel[(blocks_x, blocks_y), (_TX, _TY)](m, n, saved.buffer, saved.offset, g.buffer, g.offset, out.buffer,
                                                 out.offset, part.buffer, part.offset, *scalar_params(saved, params))
    if bias_grad is not None and not direct:
        _sum_parts[grid(n)](blocks_y if m > 0 else 0, n, part.buffer, bias_grad.buffer, bias_grad.offset)

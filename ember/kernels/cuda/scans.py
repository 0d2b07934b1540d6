"""Scans along one dimension on the GPU: cumsum, cumprod, cummax/cummin (with indices), logcumsumexp.

First step: one thread per line along ``dim`` (grid-stride over the lines), each
walking its line serially through the strides. That is fully parallel when
there are many lines (a cumsum over dim 1 of a batch) and serial along one long
line (a 1-D cumsum of a million elements runs on one thread); a block-wide scan
for few long lines is left for later.

Semantics match ``ember.kernels.cpu.scans``: cumsum/cumprod accumulate floats in
float64 and integers in int64, cummax/cummin run in ``x``'s dtype and carry NaN
forward, logcumsumexp is computed stably in float64, and the result is cast to
``out``'s dtype on the store. With indices, ties and NaNs move the index on
(torch's rule). The running value's type is set by a typed start value, so
sum/prod/max/min share one kernel (a runtime op code) and logcumsumexp, whose
float state would widen integer sums, has its own.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ... import opcodes as op
from .bfloat16 import widened
from .launch import device_meta, grid
from .device_functions import scalar_op

__all__ = ["scan", "scan_indices"]


# ------------------------------------------------------------------ device helpers
@cuda.jit(device=True)
def line_start(line, meta, dim, row):
    """Offset (from the view's own offset) of the first element of ``line`` in the operand of ``meta[row]``.

    ``meta[0]`` is the shape, ``meta[row]`` an operand's strides; lines count
    over every dim but ``dim`` in row-major order.
    """
    pos = 0
    for d in range(meta.shape[1] - 1, -1, -1):
        if d != dim:
            size = meta[0, d]
            pos += (line % size) * meta[row, d]
            line //= size
    return pos


@cuda.jit(device=True)
def _line(line, meta, dim, row, off):
    """Buffer position of the first element of ``line`` in the operand of ``meta[row]`` (whose view starts at
    ``off``) and its step along ``dim``."""
    return off + line_start(line, meta, dim, row), meta[row, dim]


@cuda.jit(device=True)
def combine(code, t, v):
    """Running value ``t`` combined with element ``v`` (S_SUM, S_PROD, S_MAX or S_MIN; NaN propagates)."""
    if code == op.S_SUM:
        return t + v
    if code == op.S_PROD:
        return t * v
    if t != t:
        return t
    if v != v:
        return v
    if code == op.S_MAX:
        return t if t >= v else v
    return t if t <= v else v


logaddexp = scalar_op("logaddexp")  # the shared definition, built for the device


# ------------------------------------------------------------------ kernels
@cuda.jit
def _scan_kernel(code, start, x, x_off, out, o_off, meta, dim, lines):
    n = meta[0, dim]
    for line in range(cuda.grid(1), lines, cuda.gridsize(1)):
        px, sx = _line(line, meta, dim, 1, x_off)
        po, so = _line(line, meta, dim, 2, o_off)
        t = start
        for j in range(n):
            t = combine(code, t, x[px + j * sx])
            out[po + j * so] = t


@cuda.jit
def _logcumsumexp_kernel(x, x_off, out, o_off, meta, dim, lines):
    n = meta[0, dim]
    for line in range(cuda.grid(1), lines, cuda.gridsize(1)):
        px, sx = _line(line, meta, dim, 1, x_off)
        po, so = _line(line, meta, dim, 2, o_off)
        t = -math.inf
        for j in range(n):
            t = logaddexp(t, np.float64(x[px + j * sx]))
            out[po + j * so] = t


@cuda.jit
def _scan_indices_kernel(code, x, x_off, values, v_off, indices, i_off, meta, dim, lines):
    n = meta[0, dim]
    for line in range(cuda.grid(1), lines, cuda.gridsize(1)):
        px, sx = _line(line, meta, dim, 1, x_off)
        pv, sv = _line(line, meta, dim, 2, v_off)
        pi, si = _line(line, meta, dim, 3, i_off)
        m = x[px]
        at = 0
        for j in range(n):
            v = x[px + j * sx]
            # torch's rule: a NaN or a tie takes the index
            if v != v or (m == m and ((code == op.S_MAX and v >= m) or (code == op.S_MIN and v <= m))):
                m = v
                at = j
            values[pv + j * sv] = m
            indices[pi + j * si] = at


# ------------------------------------------------------------------ launch helpers
def _plan(x, dim: int, *results):
    """(meta, dim, line count) for ``x`` and same-shaped ``results``; a 0-d scan is a scan of one element."""
    shape = tuple(x.shape)
    for r in results:
        if tuple(r.shape) != shape:
            raise ValueError(f"scan: result shape {tuple(r.shape)} differs from input shape {shape}")
    if not shape:
        return device_meta(((1,),) + ((0,),) * (1 + len(results))), 0, 1
    if not 0 <= dim < len(shape):
        raise IndexError(f"scan: dim {dim} out of range for {len(shape)} dims")
    meta = device_meta((shape, tuple(x.strides)) + tuple(tuple(r.strides) for r in results))
    return meta, dim, math.prod(shape) // shape[dim]


def _start(code: int, dtype: np.dtype):
    """The typed start value of a scan: it sets the type the running value is kept in."""
    if code in (op.S_SUM, op.S_PROD):
        return (np.float64 if dtype.kind == "f" else np.int64)(code == op.S_PROD)
    if dtype == np.bool_:
        return np.bool_(code == op.S_MIN)
    if dtype.kind == "f":
        return dtype.type(-np.inf if code == op.S_MAX else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if code == op.S_MAX else info.max)


# ------------------------------------------------------------------ public entry points
@widened("out")
def scan(code: int, x, dim: int, out) -> None:
    """Inclusive scan (an ``S_*`` code) of ``DeviceStorage`` ``x`` along ``dim`` into ``out`` of x's shape."""
    if math.prod(x.shape) == 0:
        return
    meta, dim, lines = _plan(x, dim, out)
    launch = grid(lines)
    if code == op.S_LOGSUMEXP:
        _logcumsumexp_kernel[launch](x.buffer, x.offset, out.buffer, out.offset, meta, dim, lines)
    elif code in (op.S_SUM, op.S_PROD, op.S_MAX, op.S_MIN):
        _scan_kernel[launch](code, _start(code, np.dtype(x.dtype)), x.buffer, x.offset, out.buffer, out.offset,
                             meta, dim, lines)
    else:
        raise ValueError(f"scan: unknown scan code {code}")


@widened("values")
def scan_indices(code: int, x, dim: int, values, indices) -> None:
    """cummax (S_MAX) / cummin (S_MIN) values and int64 indices of ``x`` along ``dim``, as torch.cummax/cummin."""
    if code not in (op.S_MAX, op.S_MIN):
        raise ValueError(f"scan_indices: code {code} is not S_MAX or S_MIN")
    if np.dtype(indices.dtype) != np.int64:
        raise TypeError(f"scan_indices: indices must be int64, got {indices.dtype}")
    if math.prod(x.shape) == 0:
        return
    meta, dim, lines = _plan(x, dim, values, indices)
    _scan_indices_kernel[grid(lines)](code, x.buffer, x.offset, values.buffer, values.offset, indices.buffer,
                                      indices.offset, meta, dim, lines)

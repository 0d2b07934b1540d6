"""Pooling kernels: max and average over windows, and their adjoints, for 3 spatial dims.

Every pooling flavour (plain, padded, dilated, ceil mode, adaptive) reduces to
per-dim windows described by two int64 arrays of shape (3, M): ``starts[d, o]``
is the first input index output ``o`` reads along dim ``d`` and ``counts[d, o]``
how many it reads, ``steps[d]`` apart. The caller clips the windows to the
input, so the kernels never test bounds. Inputs are C-contiguous
(planes, D, H, W) arrays, one plane per (sample, channel), or channels-last
(N, D, H, W, C) arrays whose planes interleave; 1-d and 2-d pooling use unit
leading dims. Parallel over planes when the work is large.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ..common.pooling import window_max
from .parallelism import parallel_pays
from .jit import serial_and_parallel

__all__ = ["max_pool", "max_pool_backward", "avg_pool", "avg_pool_backward"]


@numba.njit(inline="always")
def _plane_start(p, lanes, plane_size):
    """Where plane ``p`` starts in a flat (N, *plane, lanes) array (planes are (sample, lane) pairs)."""
    n = p // lanes
    return n * plane_size * lanes + (p - n * lanes)


# Every array is (N, D, H, W, lanes) (the backward's (N, positions, lanes)): plane p = n * lanes + c is lane c of
# sample n, its elements ``lanes`` apart. Planes of their own have one lane; a channels-last image has C.
# Flat arrays are indexed with unsigned offsets: signed indices make Numba test every access for wrap-around,
# which stops vectorisation.
def _max_pool(x, out, indices, starts, counts, steps):
    batch, depth, height, width, lanes = x.shape
    od, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    src, dst, where_out = x.reshape(-1), out.reshape(-1), indices.reshape(-1)
    for p in prange(batch * lanes):
        base = _plane_start(p, lanes, depth * height * width)
        o = _plane_start(p, lanes, od * oh * ow)
        for z in range(od):
            for y in range(oh):
                for w in range(ow):
                    best, where = window_max(src, base, starts, counts, steps, z, y, w, height, width, lanes)
                    dst[np.uint64(o)] = best
                    where_out[np.uint64(o)] = where
                    o += lanes


def _max_pool_backward(grad, indices, grad_input):
    batch, size, lanes = grad.shape
    width = grad_input.shape[1]
    src, where, dst = grad.reshape(-1), indices.reshape(-1), grad_input.reshape(-1)
    extent, step = np.uint64(width), np.uint64(lanes)
    for p in prange(batch * lanes):
        base = np.uint64(_plane_start(p, lanes, width))
        for i in range(extent):
            dst[base + i * step] = 0
        first = np.uint64(_plane_start(p, lanes, size))
        for i in range(np.uint64(size)):
            at = np.uint64(where[first + i * step])
            if at < extent:  # an empty window's position may lie outside the plane
                dst[base + at * step] += src[first + i * step]


def _avg_pool(x, out, starts, counts, divisors, override):
    batch, depth, height, width, lanes = x.shape
    od, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    src, dst = x.reshape(-1), out.reshape(-1)
    step = np.uint64(lanes)
    for p in prange(batch * lanes):
        base = _plane_start(p, lanes, depth * height * width)
        o = _plane_start(p, lanes, od * oh * ow)
        for z in range(od):
            for y in range(oh):
                for w in range(ow):
                    total = 0.0
                    for zi in range(starts[0, z], starts[0, z] + counts[0, z]):
                        for yi in range(starts[1, y], starts[1, y] + counts[1, y]):
                            row = np.uint64(base + ((zi * height + yi) * width + starts[2, w]) * lanes)
                            for e in range(np.uint64(counts[2, w])):
                                total += src[row + e * step]
                    if counts[0, z] == 0 or counts[1, y] == 0 or counts[2, w] == 0:
                        dst[np.uint64(o)] = 0
                    elif override != 0:
                        dst[np.uint64(o)] = total / override
                    else:
                        dst[np.uint64(o)] = total / (divisors[0, z] * divisors[1, y] * divisors[2, w])
                    o += lanes


def _avg_pool_backward(grad, grad_input, starts, counts, divisors, override):
    batch, od, oh, ow, lanes = grad.shape
    depth, height, width = grad_input.shape[1], grad_input.shape[2], grad_input.shape[3]
    src, dst = grad.reshape(-1), grad_input.reshape(-1)
    step = np.uint64(lanes)
    for p in prange(batch * lanes):
        base = _plane_start(p, lanes, depth * height * width)
        for i in range(np.uint64(depth * height * width)):
            dst[np.uint64(base) + i * step] = 0
        o = _plane_start(p, lanes, od * oh * ow)
        for z in range(od):
            for y in range(oh):
                for w in range(ow):
                    scale = override if override != 0 else divisors[0, z] * divisors[1, y] * divisors[2, w]
                    share = src[np.uint64(o)] / scale
                    o += lanes
                    for zi in range(starts[0, z], starts[0, z] + counts[0, z]):
                        for yi in range(starts[1, y], starts[1, y] + counts[1, y]):
                            row = np.uint64(base + ((zi * height + yi) * width + starts[2, w]) * lanes)
                            for e in range(np.uint64(counts[2, w])):
                                dst[row + e * step] += share


_KERNELS = {
    name: serial_and_parallel(fn)
    for name, fn in (("max", _max_pool), ("max_back", _max_pool_backward), ("avg", _avg_pool),
                     ("avg_back", _avg_pool_backward))
}


def _run(name: str, work: int, planes: int, *args) -> None:
    serial, parallel = _KERNELS[name]
    (parallel if planes > 1 and parallel_pays(work) else serial)(*args)


def _lanes(a: np.ndarray, ndim: int) -> np.ndarray:
    """A planes-first array (``ndim`` dims) as its one-lane view; an array with a lanes dim as it is."""
    return a.reshape(a.shape + (1,)) if a.ndim == ndim else a


def _planes(a: np.ndarray) -> int:
    return a.shape[0] * a.shape[-1]


def max_pool(x: np.ndarray, out: np.ndarray, indices: np.ndarray, starts: np.ndarray, counts: np.ndarray,
             steps: np.ndarray) -> None:
    """Window maxima of ``x`` into ``out`` and their flat per-plane input positions into ``indices``.

    ``x`` is (P, D, H, W) planes, or (N, D, H, W, C) channels-last samples (C planes each), ``out`` and ``indices``
    alike."""
    x, out, indices = _lanes(x, 4), _lanes(out, 4), _lanes(indices, 4)
    if out.size:
        _run("max", x.size + out.size, _planes(x), x, out, indices, starts, counts, steps)


def max_pool_backward(grad: np.ndarray, indices: np.ndarray, grad_input: np.ndarray) -> None:
    """Overwrite (P, S) ``grad_input`` with (P, M) ``grad`` added at the per-plane positions ``indices``
    ((N, S, C), (N, M, C) and (N, M, C) for channels-last samples)."""
    grad, indices, grad_input = _lanes(grad, 2), _lanes(indices, 2), _lanes(grad_input, 2)
    if grad_input.size:
        _run("max_back", grad_input.size + grad.size, _planes(grad), grad, indices, grad_input)


def avg_pool(x: np.ndarray, out: np.ndarray, starts: np.ndarray, counts: np.ndarray, divisors: np.ndarray,
             override: float) -> None:
    """Window sums of ``x`` divided by ``override`` (when nonzero) or the product of the per-dim ``divisors``
    (layouts as ``max_pool``'s)."""
    x, out = _lanes(x, 4), _lanes(out, 4)
    if out.size:
        _run("avg", x.size + out.size, _planes(x), x, out, starts, counts, divisors, float(override))


def avg_pool_backward(grad: np.ndarray, grad_input: np.ndarray, starts: np.ndarray, counts: np.ndarray,
                      divisors: np.ndarray, override: float) -> None:
    """The adjoint of ``avg_pool``: overwrite ``grad_input`` with each output's share spread over its window."""
    grad, grad_input = _lanes(grad, 4), _lanes(grad_input, 4)
    if grad_input.size:
        _run("avg_back", grad_input.size + grad.size, _planes(grad), grad, grad_input, starts, counts, divisors,
             float(override))

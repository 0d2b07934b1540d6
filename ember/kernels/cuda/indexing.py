"""Scatter on the GPU: ``out[index[i]] (reduce)= src[i]``, with the CPU backend's index-order semantics.

The caller reduces every scatter-like op to three flat operands, as on the CPU
(``ember.kernels.cpu.indexing``): ``out`` (written in place), ``index`` (int64
positions in ``out``, already checked to lie in ``[0, out.size)`` by the caller,
e.g. with ``index_range``: the kernels never check) and ``src`` (one value of ``out``'s dtype per index).
Each operand is a ``DeviceStorage`` read in C order; ``out`` must be one evenly
spaced run (1-D with any stride, or N-d that collapses to one), ``index`` and
``src`` of any other layout are copied to contiguous storage first.

How each reduction stays equal to the serial loop in index order:

* ``assign`` (last write wins): one pass records, per target, the largest
  ``i`` aiming at it (``atomic.max`` on an int64 scratch array), a second pass
  lets only that ``i`` store. Deterministic, any dtype.
* ``sum``, ``amax``, ``amin`` on int32/int64/uint32/uint64/float32/float64:
  hardware atomics, one thread per index. A float sum then depends on the
  order of the additions (not deterministic, like torch's CUDA scatter_add),
  except under ``use_deterministic_algorithms(True)``: then the indices are
  grouped by target on the host (a stable sort) and one thread per target adds
  its sources in index order, the serial loop's order and rounding.
  ``atomic.max``/``min`` keep a NaN already in ``out`` and ignore a NaN in
  ``src``, so a NaN source is stored plainly afterwards: NaN wins, as in torch.
* ``prod`` (there is no atomic multiply), and sum/amax/amin on bool, int8,
  int16, uint8 and float16 (no atomics of that width): one thread runs the
  serial loop in index order (deterministic, but O(n) on a single thread;
  a float16 sum rounds to float16 at every step, where the CPU adds in float32).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ... import opcodes
from ..._determinism import are_deterministic_algorithms_enabled
from ..common.dtypes import BFLOAT16
from .bfloat16 import widened
from .launch import SIMULATOR, collapse, grid
from .scans import scan
from .storage import DeviceStorage

__all__ = ["scatter", "take", "index_range", "flat_nonzero", "REDUCTIONS"]

REDUCTIONS = ("assign", "sum", "prod", "amax", "amin")
_SUM, _PROD, _AMAX, _AMIN = 1, 2, 3, 4  # positions in REDUCTIONS
ATOMIC_DTYPES = frozenset(np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64, np.float32, np.float64))
_FLOAT_ATOMICS = frozenset(np.dtype(t) for t in (np.float32, np.float64))  # sums whose order changes the rounding


# ------------------------------------------------------------------ kernels
@cuda.jit
def _fill(arr, value):
    for i in range(cuda.grid(1), arr.size, cuda.gridsize(1)):
        arr[i] = value


@cuda.jit
def _claim_last(index, i_off, i_st, n, winner):
    """``winner[t]`` = the largest ``i`` with ``index[i] == t`` (``winner`` starts at -1)."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        cuda.atomic.max(winner, index[i_off + i * i_st], i)


@cuda.jit
def _store_winners(out, o_off, o_st, index, i_off, i_st, src, s_off, s_st, n, winner):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        t = index[i_off + i * i_st]
        if winner[t] == i:
            out[o_off + t * o_st] = src[s_off + i * s_st]


@cuda.jit
def _scatter_atomic(code, out, o_off, o_st, index, i_off, i_st, src, s_off, s_st, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        j = o_off + index[i_off + i * i_st] * o_st
        v = src[s_off + i * s_st]
        if code == _SUM:
            cuda.atomic.add(out, j, v)
        else:
            if code == _AMAX:
                cuda.atomic.max(out, j, v)
            else:
                cuda.atomic.min(out, j, v)
            if v != v:
                out[j] = v


@cuda.jit
def _scatter_serial(code, out, o_off, o_st, index, i_off, i_st, src, s_off, s_st, n):
    if cuda.grid(1) != 0:
        return
    for i in range(n):
        j = o_off + index[i_off + i * i_st] * o_st
        v = src[s_off + i * s_st]
        w = out[j]
        if code == _SUM:
            out[j] = w + v
        elif code == _PROD:
            out[j] = w * v
        elif (v != v and w == w) or (code == _AMAX and v > w) or (code == _AMIN and v < w):
            out[j] = v


@cuda.jit
def _scatter_sum_grouped(out, o_off, o_st, targets, bounds, order, src, s_off, s_st, count):
    """One thread per distinct target ``targets[k]``: add its sources ``order[bounds[k]:bounds[k + 1]]`` in index
    order, as the serial loop would (deterministic, no atomics)."""
    for k in range(cuda.grid(1), count, cuda.gridsize(1)):
        j = o_off + targets[k] * o_st
        acc = out[j]
        for m in range(bounds[k], bounds[k + 1]):
            acc += src[s_off + order[m] * s_st]
        out[j] = acc


@cuda.jit
def _index_range(index, i_off, i_st, n, bounds):
    """``bounds`` (starting at [int64 max, int64 min]) becomes [min, max] of the ``n`` indices."""
    first = cuda.grid(1)
    if first >= n:
        return
    lo = hi = index[i_off + first * i_st]
    for i in range(first + cuda.gridsize(1), n, cuda.gridsize(1)):
        v = index[i_off + i * i_st]
        lo = min(lo, v)
        hi = max(hi, v)
    cuda.atomic.min(bounds, 0, lo)
    cuda.atomic.max(bounds, 1, hi)


# ------------------------------------------------------------------ launch helpers
def _run(storage, what: str):
    """(storage, element count, offset, step): ``storage`` (or a contiguous copy of it, unless it is ``out``)
    with its C-order elements evenly spaced in memory."""
    shape = tuple(storage.shape)
    size = math.prod(shape)
    if size <= 1:
        return storage, size, storage.offset, 1
    dims, (strides,) = collapse(shape, [tuple(storage.strides)])
    if len(dims) == 1:
        return storage, size, storage.offset, strides[0]
    if what == "out":
        raise ValueError(f"scatter: out of shape {shape} and strides {tuple(storage.strides)} is not one evenly "
                         "spaced run")
    copy = storage.contiguous()
    return copy, size, copy.offset, 1


def _uploaded(array):
    """Device storage as is; a host array (positions the tensor layer computed on the host) copied over."""
    if isinstance(array, np.ndarray):
        return DeviceStorage.from_numpy(array)
    return array


def scatter(reduce: str, out, index, src) -> None:
    """``out[index[i]] (reduce)= src[i]`` for ``reduce`` in assign/sum/prod/amax/amin, as in index order.

    ``out``, ``index`` (int64, entries in ``[0, out.size)``) and ``src`` (``out``'s
    dtype, ``index.size`` elements) are ``DeviceStorage``s; ``out`` is written in place.
    """
    if reduce not in REDUCTIONS:
        raise ValueError(f"scatter: reduce must be one of {REDUCTIONS}, got {reduce!r}")
    if out.dtype == BFLOAT16:  # assigned as bits; reduced in float32
        if reduce != "assign":
            _widened_scatter(reduce, out, index, src)
            return
        out, src = out.bits(), _uploaded(src).bits()
    if reduce == "sum" and np.dtype(out.dtype) in _FLOAT_ATOMICS and are_deterministic_algorithms_enabled():
        _scatter_sum_deterministic(out, index, _uploaded(src))
        return
    index, src = _uploaded(index), _uploaded(src)
    dtype = np.dtype(out.dtype)
    if np.dtype(index.dtype) != np.int64:
        raise TypeError(f"scatter: index must be int64, got {index.dtype}")
    if np.dtype(src.dtype) != dtype:
        raise TypeError(f"scatter: src dtype {src.dtype} differs from out dtype {dtype}")
    out, size, o_off, o_st = _run(out, "out")
    index, n, i_off, i_st = _run(index, "index")
    src, count, s_off, s_st = _run(src, "src")
    if count != n:
        raise ValueError(f"scatter: {n} indices but {count} source values")
    if n == 0:
        return
    operands = (out.buffer, o_off, o_st, index.buffer, i_off, i_st, src.buffer, s_off, s_st, n)
    code = REDUCTIONS.index(reduce)
    if reduce == "assign":
        winner = cuda.device_array(size, np.int64)
        _fill[grid(size)](winner, -1)
        _claim_last[grid(n)](index.buffer, i_off, i_st, n, winner)
        _store_winners[grid(n)](*operands, winner)
    elif reduce != "prod" and dtype in ATOMIC_DTYPES:
        _scatter_atomic[grid(n)](code, *operands)
    else:
        _scatter_serial[1, 1](code, *operands)


_widened_scatter = widened("out")(scatter)


def _scatter_sum_deterministic(out, index, src) -> None:
    """The float ``sum`` of ``scatter`` without atomics: the (host) indices grouped by target with a stable sort,
    then ``_scatter_sum_grouped``; the same bits as the serial loop on every run."""
    positions = np.ascontiguousarray(index if isinstance(index, np.ndarray) else index.to_numpy(),
                                     dtype=np.int64).reshape(-1)
    if np.dtype(src.dtype) != np.dtype(out.dtype):
        raise TypeError(f"scatter: src dtype {src.dtype} differs from out dtype {out.dtype}")
    out, _, o_off, o_st = _run(out, "out")
    src, count, s_off, s_st = _run(src, "src")
    if count != positions.size:
        raise ValueError(f"scatter: {positions.size} indices but {count} source values")
    if count == 0:
        return
    order = np.argsort(positions, kind="stable")
    ordered = positions[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    bounds = np.append(starts, count)
    groups = starts.size
    _scatter_sum_grouped[grid(groups)](out.buffer, o_off, o_st, cuda.to_device(ordered[starts]),
                                       cuda.to_device(bounds), cuda.to_device(order), src.buffer, s_off, s_st, groups)


def index_range(index) -> tuple[int, int]:
    """(min, max) of an int64 ``DeviceStorage`` of indices, ``(0, -1)`` when empty: the bounds check a caller
    makes before ``scatter`` (it waits for the device and copies two numbers back)."""
    if np.dtype(index.dtype) != np.int64:
        raise TypeError(f"index_range: index must be int64, got {index.dtype}")
    index, n, i_off, i_st = _run(index, "index")
    if n == 0:
        return 0, -1
    info = np.iinfo(np.int64)
    bounds = cuda.to_device(np.array([info.max, info.min], np.int64))
    _index_range[grid(n)](index.buffer, i_off, i_st, n, bounds)
    lo, hi = bounds.copy_to_host()
    return int(lo), int(hi)


@cuda.jit
def _take(src, index, n, out, o_off):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[o_off + i] = src[index[i]]


def take(src, positions, out) -> None:
    """``out.flat[i] = src.buffer[positions.flat[i]]``: a gather by buffer index (advanced indexing's core).

    ``positions`` (int64, contiguous) holds indices into ``src``'s whole buffer, already checked by the caller;
    ``out`` is C-contiguous with ``positions``' size."""
    n = out.numel
    if n == 0:
        return
    if not out.is_contiguous or not positions.is_contiguous or positions.numel != n:
        raise ValueError(f"take: out {out} and positions {positions} must be contiguous and of one size")
    blocks, threads = grid(n)
    _take[blocks, threads](src.buffer, positions.buffer[positions.offset:positions.offset + n], n, out.buffer,
                           out.offset)


# Elements of the flags one thread of ``flat_nonzero`` counts and then compacts (serially, in order).
NONZERO_CHUNK = 8 if SIMULATOR else 256


@cuda.jit
def _count_chunks(flags, f_off, n, chunk, counts):
    for row in range(cuda.grid(1), counts.size, cuda.gridsize(1)):
        found = 0
        for i in range(row * chunk, min(n, row * chunk + chunk)):
            if flags[f_off + i]:
                found += 1
        counts[row] = found


@cuda.jit
def _write_positions(flags, f_off, n, chunk, ends, out):
    for row in range(cuda.grid(1), ends.size, cuda.gridsize(1)):
        k = ends[row - 1] if row else 0
        for i in range(row * chunk, min(n, row * chunk + chunk)):
            if flags[f_off + i]:
                out[k] = i
                k += 1


def flat_nonzero(flags):
    """The positions (int64 ``DeviceStorage``, ascending) of the true elements of 1-D bool ``flags``.

    Three passes: each thread counts the trues of its chunk, a scan turns the counts into where each chunk's
    positions end, each thread writes its chunk's positions there. Only the total comes back to the host."""
    if flags.ndim != 1 or np.dtype(flags.dtype) != np.bool_:
        raise ValueError(f"flat_nonzero: flags must be 1-D bool, got {flags}")
    flags = flags.contiguous()
    n = flags.numel
    rows = max(1, -(-n // NONZERO_CHUNK))
    counts = DeviceStorage.empty((rows,), np.int64)
    _count_chunks[grid(rows)](flags.buffer, flags.offset, n, NONZERO_CHUNK, counts.buffer)
    ends = DeviceStorage.empty((rows,), np.int64)
    scan(opcodes.S_SUM, counts, 0, ends)
    total = int(ends.buffer[rows - 1:rows].copy_to_host()[0])
    out = DeviceStorage.empty((total,), np.int64)
    if total:
        _write_positions[grid(rows)](flags.buffer, flags.offset, n, NONZERO_CHUNK, ends.buffer, out.buffer)
    return out

"""Sorting and searching on the GPU: sort, topk, kthvalue, mode, searchsorted, bincount, histc.

Semantics are the CPU backend's (``ember.kernels.cpu.sorting``): every sort is
stable, NaN is the largest key, topk/kthvalue read the stable sorted row, mode
is the smallest most frequent value with its last position, the binary
searches use torch's comparisons, bincount adds ones or weights, histc bins in
the input's dtype.

Sorting runs one block per row (a row is one position of every dim but the
sorted one; blocks grid-stride over the rows). A block copies its row into its
own slot of a global scratch array, padded to a power of two, and runs a
bitonic network over (key, original index) pairs with a barrier after each
step. Equal keys compare by index, so the order is total and the network gives
exactly the stable sort; padding slots (index >= n) always go last. The
epilogue writes a slice of the sorted row through the outputs' strides (sort:
all of it, topk: the first k, kthvalue: position k - 1), or for mode thread 0
walks the sorted row. Scratch is one slot per block, so it costs
``blocks * padded length`` whatever the number of rows.

searchsorted is one thread per value; bincount and histc are one thread per
element with ``cuda.atomic.add``, counting in a scratch array when the output's
dtype has no atomics. Counts are exact (and so deterministic); float weights are
not, so under ``use_deterministic_algorithms(True)`` a weighted bincount adds
them through ``indexing.scatter``'s deterministic sum instead.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from ..._determinism import are_deterministic_algorithms_enabled
from ..common.sorting import before
from .bfloat16 import widened
from .device_functions import device_function
from .indexing import ATOMIC_DTYPES, scatter
from .launch import MAX_BLOCKS, THREADS, device_meta, grid
from .scans import line_start
from .storage import DeviceStorage

__all__ = ["sort", "topk", "kthvalue", "mode", "searchsorted", "bincount", "histc"]

key_before = device_function(before)  # the shared key order (NaN largest), built for the device


# ------------------------------------------------------------------ device helpers of the row sort
@cuda.jit(device=True)
def pair_before(ka, ia, kb, ib, n, descending):
    """Whether pair (key ``ka``, index ``ia``) sorts strictly before (``kb``, ``ib``): padding (index >= n) last,
    then the key order, then the smaller index (stability)."""
    if ia >= n:
        return False
    if ib >= n:
        return True
    if key_before(ka, kb, descending):
        return True
    if key_before(kb, ka, descending):
        return False
    return ia < ib


@cuda.jit(device=True)
def bitonic_sort(keys, idx, base, n, npad, descending):
    """Sort the ``npad`` pairs at ``base`` of the scratch arrays with the block's threads (npad a power of two)."""
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    size = 2
    while size <= npad:
        stride = size // 2
        while stride > 0:
            for t in range(tid, npad // 2, nt):
                lo = 2 * stride * (t // stride) + t % stride
                i = base + lo
                j = i + stride
                ascending = (lo & size) == 0
                if pair_before(keys[j], idx[j], keys[i], idx[i], n, descending) == ascending:
                    k = keys[i]
                    keys[i] = keys[j]
                    keys[j] = k
                    p = idx[i]
                    idx[i] = idx[j]
                    idx[j] = p
            cuda.syncthreads()
            stride //= 2
        size *= 2


@cuda.jit(device=True)
def store_mode(keys, idx, base, n, values, pv, indices, pi):
    """The value of the longest run of equal keys in a sorted row (the first such run) and the largest original
    index in that run; NaN never equals NaN, so each NaN is a run of one."""
    best_start = 0
    best_len = 0
    start = 0
    for i in range(1, n + 1):
        if i == n or not keys[base + i] == keys[base + start]:
            if i - start > best_len:
                best_start = start
                best_len = i - start
            start = i
    last = idx[base + best_start]
    for i in range(best_start + 1, best_start + best_len):
        last = max(last, idx[base + i])
    values[pv] = keys[base + best_start]
    indices[pi] = last


@cuda.jit
def _sort_rows(x, x_off, meta, dim, rows, npad, descending, keys, idx, first, count, want_mode, values, v_off,
               indices, i_off):
    """Per row: load, sort, then store sorted positions [first, first + count) or the row's mode.

    ``meta`` rows: x's shape, then the strides of x, values and indices (outputs differ from x only along dim).
    """
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    n = meta[0, dim]
    base = cuda.blockIdx.x * npad
    for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
        px = x_off + line_start(r, meta, dim, 1)
        for j in range(tid, npad, nt):
            idx[base + j] = j
            if j < n:
                keys[base + j] = x[px + j * meta[1, dim]]
        cuda.syncthreads()
        bitonic_sort(keys, idx, base, n, npad, descending)
        pv = v_off + line_start(r, meta, dim, 2)
        pi = i_off + line_start(r, meta, dim, 3)
        if want_mode:
            if tid == 0:
                store_mode(keys, idx, base, n, values, pv, indices, pi)
        else:
            for j in range(tid, count, nt):
                values[pv + j * meta[2, dim]] = keys[base + first + j]
                indices[pi + j * meta[3, dim]] = idx[base + first + j]
        cuda.syncthreads()  # the slot is reloaded for the block's next row


# ------------------------------------------------------------------ searching and counting kernels
@cuda.jit
def _search(bounds, sorter, use_sorter, values, right, out, meta, n, m, total):
    """out[r, j] = insertion point of values[r, j] in bounds row r (row stride 0 when shared), through sorter.

    ``meta`` rows (offset, row stride, column stride) of bounds, sorter, values and out."""
    for i in range(cuda.grid(1), total, cuda.gridsize(1)):
        r = i // n
        j = i - r * n
        v = values[meta[2, 0] + r * meta[2, 1] + j * meta[2, 2]]
        row_b = meta[0, 0] + r * meta[0, 1]
        row_s = meta[1, 0] + r * meta[1, 1]
        lo = 0
        hi = m
        while lo < hi:
            mid = lo + (hi - lo) // 2
            p = sorter[row_s + mid * meta[1, 2]] if use_sorter else mid
            b = bounds[row_b + p * meta[0, 2]]
            if right:
                after = not (b > v)
            else:
                after = not (b >= v)
            if after:
                lo = mid + 1
            else:
                hi = mid
        out[meta[3, 0] + r * meta[3, 1] + j * meta[3, 2]] = lo


@cuda.jit
def _count(x, x_off, x_st, n, weights, w_off, w_st, weighted, one, out, o_off, o_st):
    """out[x[i]] += weights[i] (or ``one``) for every i, atomically."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        w = weights[w_off + i * w_st] if weighted else one
        cuda.atomic.add(out, o_off + x[x_off + i * x_st] * o_st, w)


@cuda.jit
def _histc(x, x_off, x_st, n, lo, hi, bins, nbins, one, counts):
    """torch.histc's binning in x's dtype (bin (v - lo) * bins / (hi - lo), v == hi in the last bin); values
    outside [lo, hi] and NaN are skipped."""
    width = hi - lo
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        v = x[x_off + i * x_st]
        if v >= lo and v <= hi:
            pos = int((v - lo) * bins / width)
            if pos >= nbins:
                pos = nbins - 1
            cuda.atomic.add(counts, pos, one)


# ------------------------------------------------------------------ launch helpers
def _as_rows(name: str, x: DeviceStorage, dim: int, size: int, values: DeviceStorage, indices: DeviceStorage):
    """(x, dim, values, indices) with a 0-d input seen as one element, after checking the outputs' shape
    (x's shape with ``size`` along dim) and the indices' dtype."""
    if x.ndim == 0:
        x, dim = x.as_strided((1,), (0,)), 0
        values, indices = values.as_strided((1,), (0,)), indices.as_strided((1,), (0,))
    if not 0 <= dim < x.ndim:
        raise IndexError(f"{name}: dim {dim} out of range for input of shape {x.shape}")
    if np.dtype(indices.dtype) != np.int64:
        raise TypeError(f"{name}: indices must be int64, got {indices.dtype}")
    expected = x.shape[:dim] + (size,) + x.shape[dim + 1:]
    if values.shape != expected or indices.shape != expected:
        raise ValueError(f"{name}: outputs of shape {values.shape} and {indices.shape} for input {x.shape} along "
                         f"dim {dim}; expected {expected}")
    return x, dim, values, indices


def _sort_and_store(name: str, x, dim: int, descending: bool, first: int, count: int, values, indices,
                    want_mode: bool = False) -> None:
    """Sort every row of ``x`` along ``dim`` and store positions [first, first + count) (or the mode: count 1)."""
    x, dim, values, indices = _as_rows(name, x, dim, count, values, indices)
    if x.numel == 0 or count == 0:
        return
    n = x.shape[dim]
    rows = x.numel // n
    npad = 1 << (n - 1).bit_length()
    blocks = min(rows, MAX_BLOCKS)
    threads = min(THREADS, max(1, npad // 2))
    meta = device_meta((x.shape, x.strides, values.strides, indices.strides))
    keys = cuda.device_array(blocks * npad, x.dtype)
    idx = cuda.device_array(blocks * npad, np.int64)
    _sort_rows[blocks, threads](x.buffer, x.offset, meta, dim, rows, npad, bool(descending), keys, idx, first, count,
                                want_mode, values.buffer, values.offset, indices.buffer, indices.offset)


def _flat(storage: DeviceStorage) -> tuple[DeviceStorage, int, int]:
    """(1-D view or device copy of ``storage``, offset, element step)."""
    flat = storage.reshape(-1)
    return flat, flat.offset, flat.strides[0]


def _row_layout(a: DeviceStorage) -> tuple[int, int, int]:
    """(offset, row stride, column stride) of 2-D ``a``; row stride 0 when its single row serves every row."""
    return a.offset, (0 if a.shape[0] == 1 else a.strides[0]), a.strides[1]


def _counting_dtype(dtype: np.dtype) -> np.dtype:
    """``dtype`` when atomics exist for it, else the widest dtype of its kind (the count is cast back)."""
    dtype = np.dtype(dtype)
    if dtype in ATOMIC_DTYPES:
        return dtype
    return np.dtype(np.float64 if dtype.kind == "f" else np.int64)


# ------------------------------------------------------------------ entry points
@widened("values")
def sort(x, dim: int, descending: bool, values, indices) -> None:
    """Stable sort of ``DeviceStorage`` ``x`` along ``dim`` into ``values`` and int64 ``indices`` (x's shape)."""
    size = x.shape[dim] if x.ndim else 1
    _sort_and_store("sort", x, dim, descending, 0, size, values, indices)


@widened("values")
def topk(x, k: int, dim: int, largest: bool, values, indices) -> None:
    """The ``k`` largest (or smallest) along ``dim``, in sorted order; outputs have size k along ``dim``."""
    _sort_and_store("topk", x, dim, largest, 0, k, values, indices)


@widened("values")
def kthvalue(x, k: int, dim: int, values, indices) -> None:
    """The k-th smallest (1-based) along ``dim``; outputs have keepdim shape."""
    size = x.shape[dim] if x.ndim else 1
    if not 1 <= k <= max(size, 1):
        raise IndexError(f"kthvalue: k={k} out of range for dim {dim} of size {size}")
    _sort_and_store("kthvalue", x, dim, False, k - 1, 1, values, indices)


@widened("values")
def mode(x, dim: int, values, indices) -> None:
    """Smallest most frequent value along ``dim`` and its last position; outputs have keepdim shape."""
    _sort_and_store("mode", x, dim, False, 0, 1, values, indices, want_mode=True)


@widened()
def searchsorted(boundaries, values, right: bool, sorter, out) -> None:
    """Insertion points of ``values`` (rows, n) in sorted ``boundaries`` (rows or 1, m), through ``sorter``
    (boundaries' shape, valid positions) when given; ``out`` is (rows, n) int64 or int32."""
    if boundaries.ndim != 2 or values.ndim != 2 or tuple(out.shape) != tuple(values.shape) or \
            boundaries.shape[0] not in (1, values.shape[0]):
        raise ValueError(f"searchsorted: boundaries {boundaries.shape}, values {values.shape} and out {out.shape} "
                         "must be (rows or 1, m), (rows, n) and (rows, n)")
    rows, n = values.shape
    m = boundaries.shape[1]
    if rows * n == 0:
        return
    if m == 0:
        out.fill(0)
        return
    if values.dtype != boundaries.dtype:
        values = values.astype(boundaries.dtype)
    use_sorter = sorter is not None
    if use_sorter:
        sorter = sorter if sorter.dtype == np.int64 else sorter.astype(np.int64)
        order, order_layout = sorter.buffer, _row_layout(sorter)
    else:
        order, order_layout = device_meta((0,)), (0, 0, 0)
    meta = device_meta((_row_layout(boundaries), order_layout, _row_layout(values),
                        _row_layout(out)))
    _search[grid(rows * n)](boundaries.buffer, order, use_sorter, values.buffer, bool(right), out.buffer, meta, n, m,
                            rows * n)


@widened("out")
def bincount(x, weights, out) -> None:
    """Add one (or ``weights[i]``) to ``out[x[i]]``; ``x`` 1-D non-negative ints below ``out.size``."""
    n = x.numel
    if n == 0:
        return
    counts = out if out.dtype in ATOMIC_DTYPES else out.astype(_counting_dtype(out.dtype))
    weighted = weights is not None
    if weighted:
        weights = weights if weights.dtype == counts.dtype else weights.astype(counts.dtype)
    if weighted and counts.dtype.kind == "f" and are_deterministic_algorithms_enabled():
        scatter("sum", counts.reshape(-1), x.to_numpy().astype(np.int64).reshape(-1), weights.reshape(-1))
    else:
        x, x_off, x_st = _flat(x)
        counts, o_off, o_st = _flat(counts)
        w, w_off, w_st = _flat(weights) if weighted else (counts, 0, 0)
        _count[grid(n)](x.buffer, x_off, x_st, n, w.buffer, w_off, w_st, weighted, counts.dtype.type(1),
                        counts.buffer, o_off, o_st)
    if counts is not out:
        out.copy_from(counts)


@widened("out")
def histc(x, lo: float, hi: float, out) -> None:
    """Counts of ``x`` in ``out.size`` equal bins over [lo, hi] (lo < hi, finite), in x's dtype; ``out`` is
    overwritten."""
    counts = DeviceStorage.empty((out.numel,), _counting_dtype(x.dtype))
    counts.fill(0)
    n = x.numel
    if n:
        x, x_off, x_st = _flat(x)
        scalar = x.dtype.type
        _histc[grid(n)](x.buffer, x_off, x_st, n, scalar(lo), scalar(hi), scalar(out.numel), out.numel,
                        counts.dtype.type(1), counts.buffer)
    out.copy_from(counts.reshape(out.shape))

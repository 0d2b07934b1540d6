"""Sorting and searching kernels: stable sort along a dim, top-k, k-th value, mode, searchsorted, bincount, histc.

Sorting works on rows: the entry points move the sorted dim last into a
C-contiguous work array of shape (rows, n) and the kernels sort each row in
place with a stable merge sort (insertion-sorted runs, then bottom-up merges)
that carries the original positions along. NaN sorts as the largest value
(last ascending, first descending), as torch does; equal keys keep their input
order, so every sort here is stable. Many rows run in parallel above
``PARALLEL_MIN`` elements. float16 and bfloat16 are widened to float32 (exact) and narrowed back.

Binary searches use torch's comparisons (``!(b >= v)`` for the left side,
``!(b > v)`` for the right), so a NaN value lands after every boundary.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..common.dtypes import NARROW_FLOATS, compute_dtype
from ..common.sorting import before
from .parallelism import parallel_pays

inline = njit(inline="always")
kernel = njit(cache=True, nogil=True, error_model="numpy")
parallel_kernel = njit(cache=True, nogil=True, error_model="numpy", parallel=True)

RUN = 16  # insertion-sorted run length before merging


# ------------------------------------------------------------------ row sort
@inline
def merge_pass(src_k, src_i, dst_k, dst_i, n, width, descending):
    """Merge neighbouring sorted runs of ``width`` from src into dst (ties take the left run: stable)."""
    for lo in range(0, n, 2 * width):
        mid = min(lo + width, n)
        hi = min(lo + 2 * width, n)
        a, b, o = lo, mid, lo
        while a < mid and b < hi:
            if before(src_k[b], src_k[a], descending):
                dst_k[o], dst_i[o] = src_k[b], src_i[b]
                b += 1
            else:
                dst_k[o], dst_i[o] = src_k[a], src_i[a]
                a += 1
            o += 1
        while a < mid:
            dst_k[o], dst_i[o] = src_k[a], src_i[a]
            a += 1
            o += 1
        while b < hi:
            dst_k[o], dst_i[o] = src_k[b], src_i[b]
            b += 1
            o += 1


@inline
def sort_row(keys, idx, descending):
    """Stable sort of 1-D ``keys`` in place, with ``idx`` set to the original positions."""
    n = keys.size
    for i in range(n):
        idx[i] = i
    for start in range(0, n, RUN):
        end = min(start + RUN, n)
        for i in range(start + 1, end):
            k, j, p = keys[i], idx[i], i
            while p > start and before(k, keys[p - 1], descending):
                keys[p], idx[p] = keys[p - 1], idx[p - 1]
                p -= 1
            keys[p], idx[p] = k, j
    if n <= RUN:
        return
    tmp_k = np.empty_like(keys)
    tmp_i = np.empty_like(idx)
    width, in_tmp = RUN, False
    while width < n:
        if in_tmp:
            merge_pass(tmp_k, tmp_i, keys, idx, n, width, descending)
        else:
            merge_pass(keys, idx, tmp_k, tmp_i, n, width, descending)
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        for i in range(n):
            keys[i], idx[i] = tmp_k[i], tmp_i[i]


@kernel
def sort_rows(keys, idx, descending):
    """Sort every row of the (rows, n) C-contiguous ``keys`` in place; ``idx`` gets the permutation."""
    for r in range(keys.shape[0]):
        sort_row(keys[r], idx[r], descending)


@parallel_kernel
def sort_rows_parallel(keys, idx, descending):
    """``sort_rows`` with rows spread over threads."""
    for r in prange(keys.shape[0]):
        sort_row(keys[r], idx[r], descending)


@kernel
def mode_rows(keys, idx, values, indices):
    """Per sorted row: the value of the longest run of equal keys (the first such run, so the smallest) and its
    last original position (torch's choice). NaN never equals NaN, so each NaN is a run of one."""
    n = keys.shape[1]
    for r in range(keys.shape[0]):
        best_start, best_len, start = 0, 0, 0
        for i in range(1, n + 1):
            if i == n or not keys[r, i] == keys[r, start]:
                if i - start > best_len:
                    best_start, best_len = start, i - start
                start = i
        last = idx[r, best_start]
        for i in range(best_start + 1, best_start + best_len):
            last = max(last, idx[r, i])
        values[r] = keys[r, best_start]
        indices[r] = last


# ------------------------------------------------------------------ searching and counting
@inline
def search_row(bounds, sorter, use_sorter, v, right):
    """Insertion point of ``v`` in a sorted row (through ``sorter`` when given), torch's comparisons."""
    lo, hi = 0, bounds.size
    while lo < hi:
        mid = lo + (hi - lo) // 2
        b = bounds[sorter[mid]] if use_sorter else bounds[mid]
        if (not (b > v)) if right else (not (b >= v)):
            lo = mid + 1
        else:
            hi = mid
    return lo


@inline
def search_one_row(bounds, sorter, use_sorter, values, right, out, r):
    br = 0 if bounds.shape[0] == 1 else r
    for j in range(values.shape[1]):
        out[r, j] = search_row(bounds[br], sorter[br], use_sorter, values[r, j], right)


@kernel
def search_rows(bounds, sorter, use_sorter, values, right, out):
    """out[r, j] = insertion point of values[r, j] in bounds[r] (row 0 when bounds has one row)."""
    for r in range(values.shape[0]):
        search_one_row(bounds, sorter, use_sorter, values, right, out, r)


@parallel_kernel
def search_rows_parallel(bounds, sorter, use_sorter, values, right, out):
    """``search_rows`` with rows spread over threads."""
    for r in prange(values.shape[0]):
        search_one_row(bounds, sorter, use_sorter, values, right, out, r)


@kernel
def count_bins(x, out):
    """out[v] += 1 for every v in x (all in range: checked by the caller)."""
    for i in range(x.size):
        out[x[i]] += 1


@kernel
def count_bins_weighted(x, weights, out):
    """out[v] += weights[i] for every x[i] = v."""
    for i in range(x.size):
        out[x[i]] += weights[i]


@kernel
def histc_counts(x, lo, hi, bins, out):
    """torch.histc's binning in x's dtype: bin (v - lo) * bins / (hi - lo), v == hi in the last bin; values
    outside [lo, hi] and NaN are skipped. ``lo``, ``hi``, ``bins`` come in x's dtype."""
    nbins = out.size
    width = hi - lo
    for i in range(x.size):
        v = x[i]
        if v >= lo and v <= hi:
            pos = int((v - lo) * bins / width)
            if pos >= nbins:
                pos = nbins - 1
            out[pos] += 1


# ------------------------------------------------------------------ entry points
def _rows_of(x: np.ndarray, dim: int) -> np.ndarray:
    """A fresh C-contiguous (rows, n) copy of ``x`` with ``dim`` last, in the compute dtype."""
    moved = np.moveaxis(x.reshape(1) if x.ndim == 0 else x, dim, -1)
    work = np.array(moved, dtype=compute_dtype(x.dtype), order="C", copy=True)
    return work.reshape(math.prod(work.shape[:-1]), work.shape[-1])


def _sorted_rows(x: np.ndarray, dim: int, descending: bool) -> tuple[np.ndarray, np.ndarray]:
    keys = _rows_of(x, dim)
    idx = np.empty(keys.shape, np.int64)
    if keys.size:
        run = sort_rows_parallel if parallel_pays(keys.size) and keys.shape[0] > 1 else sort_rows
        run(keys, idx, descending)
    return keys, idx


def _store(rows: np.ndarray, out: np.ndarray, dim: int) -> None:
    """Copy (rows, k) results back into ``out`` (dim ``dim`` of size k), casting as needed."""
    target = out.reshape(1) if out.ndim == 0 else out
    moved = np.moveaxis(target, dim, -1)
    np.copyto(moved, rows.reshape(moved.shape), casting="unsafe")


def sort(x: np.ndarray, dim: int, descending: bool, values: np.ndarray, indices: np.ndarray) -> None:
    """Stable sort of ``x`` along ``dim`` into ``values`` and int64 ``indices`` (both x's shape)."""
    keys, idx = _sorted_rows(x, dim, descending)
    _store(keys, values, dim)
    _store(idx, indices, dim)


def topk(x: np.ndarray, k: int, dim: int, largest: bool, values: np.ndarray, indices: np.ndarray) -> None:
    """The ``k`` largest (or smallest) along ``dim``, in sorted order; outputs have size k along ``dim``."""
    keys, idx = _sorted_rows(x, dim, largest)
    _store(keys[:, :k], values, dim)
    _store(idx[:, :k], indices, dim)


def kthvalue(x: np.ndarray, k: int, dim: int, values: np.ndarray, indices: np.ndarray) -> None:
    """The k-th smallest (1-based) along ``dim``; outputs have keepdim shape."""
    keys, idx = _sorted_rows(x, dim, False)
    _store(keys[:, k - 1:k], values, dim)
    _store(idx[:, k - 1:k], indices, dim)


def mode(x: np.ndarray, dim: int, values: np.ndarray, indices: np.ndarray) -> None:
    """Smallest most frequent value along ``dim`` and its last position; outputs have keepdim shape."""
    keys, idx = _sorted_rows(x, dim, False)
    vals = np.empty((keys.shape[0], 1), keys.dtype)
    pos = np.empty((keys.shape[0], 1), np.int64)
    if keys.size:
        mode_rows(keys, idx, vals.reshape(-1), pos.reshape(-1))
    _store(vals, values, dim)
    _store(pos, indices, dim)


def searchsorted(boundaries: np.ndarray, values: np.ndarray, right: bool, sorter: np.ndarray | None,
                 out: np.ndarray) -> None:
    """Insertion points of ``values`` (rows, n) in sorted ``boundaries`` (rows or 1, m), through ``sorter``
    (boundaries' shape, valid positions) when given; ``out`` is (rows, n) int64 or int32."""
    bounds = np.ascontiguousarray(boundaries, dtype=compute_dtype(boundaries.dtype))
    vals = np.ascontiguousarray(values, dtype=bounds.dtype)
    use_sorter = sorter is not None
    order = np.ascontiguousarray(sorter, dtype=np.int64) if use_sorter else np.zeros((bounds.shape[0], 0), np.int64)
    work = out if out.flags.c_contiguous else np.empty(out.shape, out.dtype)
    if vals.size:
        run = search_rows_parallel if parallel_pays(vals.size) and vals.shape[0] > 1 else search_rows
        run(bounds, order, use_sorter, vals, right, work)
    if work is not out:
        np.copyto(out, work)


def bincount(x: np.ndarray, weights: np.ndarray | None, out: np.ndarray) -> None:
    """Add one (or ``weights[i]``) to ``out[x[i]]``; ``x`` 1-D non-negative ints below ``out.size``."""
    xs = np.ascontiguousarray(x)
    if weights is None:
        count_bins(xs, out)
    else:
        count_bins_weighted(xs, np.ascontiguousarray(weights, dtype=out.dtype), out)


def histc(x: np.ndarray, lo: float, hi: float, out: np.ndarray) -> None:
    """Counts of ``x`` in ``out.size`` equal bins over [lo, hi] (lo < hi, finite), in x's dtype.

    float16 and bfloat16 positions are computed by NumPy on the host, rounding every step to the dtype as
    torch's Half and BFloat16 arithmetic does (a float32 kernel would put values near an edge in other bins).
    """
    if x.dtype in NARROW_FLOATS:
        half = x.dtype.type
        xs = x.reshape(-1)
        xs = xs[(xs >= half(lo)) & (xs <= half(hi))]
        pos = ((xs - half(lo)) * half(out.size) / (half(hi) - half(lo))).astype(np.int64)
        np.copyto(out, np.bincount(np.minimum(pos, out.size - 1), minlength=out.size), casting="unsafe")
        return
    xs = np.ascontiguousarray(x).reshape(-1)
    scalar = xs.dtype.type
    counts = np.zeros(out.size, xs.dtype)
    histc_counts(xs, scalar(lo), scalar(hi), scalar(out.size), counts)
    np.copyto(out, counts, casting="unsafe")

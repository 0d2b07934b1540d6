"""Embedding-bag kernel on the device: the per-bag, per-feature position of the maximum (``mode="max"``).

The CPU kernel walks the rows in order and moves ``out[b, d]`` to row ``i``
when ``values[i, d]`` is strictly larger. Unrolled, that is: the bag's first
row if its value is NaN (nothing beats a NaN), else the first row holding the
largest non-NaN value. Both parts are order-free, so the device computes them
with integer/float atomics over all (row, feature) pairs at once, whatever
order the bag ids come in:

1. per bag the first row (``atomic.min``) and per (bag, feature) the largest non-NaN value (``atomic.max``);
2. per (bag, feature) the first row holding that value (``atomic.min``);
3. per (bag, feature) pick: the first row if its value is NaN, else the row from 2.

Max and min are exact, so the result is deterministic and equals the CPU's.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from .launch import grid
from .storage import DeviceStorage

__all__ = ["bag_argmax"]


@cuda.jit
def _init(n_items, dim, n_rows, best_value, best_row, first_row):
    for i in range(cuda.grid(1), n_items, cuda.gridsize(1)):
        best_value[i] = -math.inf
        best_row[i] = n_rows  # none yet
        if i % dim == 0:
            first_row[i // dim] = n_rows


@cuda.jit
def _bag_max(n_items, dim, values, v_off, bag, b_off, best_value, first_row):
    for i in range(cuda.grid(1), n_items, cuda.gridsize(1)):
        row = i // dim
        d = i - row * dim
        b = bag[b_off + row]
        if d == 0:
            cuda.atomic.min(first_row, b, row)
        v = values[v_off + i]
        if not math.isnan(v):
            cuda.atomic.max(best_value, b * dim + d, v)


@cuda.jit
def _first_of_max(n_items, dim, values, v_off, bag, b_off, best_value, best_row):
    for i in range(cuda.grid(1), n_items, cuda.gridsize(1)):
        row = i // dim
        at = bag[b_off + row] * dim + (i - row * dim)
        if values[v_off + i] == best_value[at]:  # NaN never equals
            cuda.atomic.min(best_row, at, row)


@cuda.jit
def _pick(n_items, dim, n_rows, values, v_off, best_row, first_row, out, o_off):
    for i in range(cuda.grid(1), n_items, cuda.gridsize(1)):
        b = i // dim
        first = first_row[b]
        if first == n_rows:
            continue  # an empty bag keeps the caller's -1
        d = i - b * dim
        if math.isnan(values[v_off + first * dim + d]):
            out[o_off + i] = first
        else:
            out[o_off + i] = best_row[i]


def bag_argmax(values: DeviceStorage, bag: DeviceStorage, out: DeviceStorage) -> None:
    """For each bag ``b`` and feature ``d``, the row ``i`` (with ``bag[i] == b``) where ``values[i, d]`` is
    largest, first one on ties, into ``out[b, d]`` (int64, filled with -1 on entry: -1 stays for empty bags).

    ``values`` (R, dim) float, ``bag`` (R,) int64 and ``out`` (B, dim) int64 are C-contiguous DeviceStorages.
    """
    if values.numel == 0:
        return
    for s in (values, bag, out):
        if not s.is_contiguous:
            raise ValueError(f"bag_argmax: needs C-contiguous storages, got {s}")
    if bag.dtype != np.int64 or out.dtype != np.int64:
        raise TypeError(f"bag_argmax: bag and out must be int64, got {bag.dtype} and {out.dtype}")
    n_rows, dim = values.shape
    n_out = out.numel
    best_value = cuda.device_array(n_out, values.dtype)
    best_row = cuda.device_array(n_out, np.int64)
    first_row = cuda.device_array(out.shape[0], np.int64)
    _init[grid(n_out)](n_out, dim, n_rows, best_value, best_row, first_row)
    n_items = values.numel
    _bag_max[grid(n_items)](n_items, dim, values.buffer, values.offset, bag.buffer, bag.offset, best_value,
                            first_row)
    _first_of_max[grid(n_items)](n_items, dim, values.buffer, values.offset, bag.buffer, bag.offset, best_value,
                                 best_row)
    _pick[grid(n_out)](n_out, dim, n_rows, values.buffer, values.offset, best_row, first_row, out.buffer,
                       out.offset)

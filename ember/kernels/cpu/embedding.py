"""Embedding-bag kernel: the per-bag, per-feature position of the maximum (``embedding_bag(mode="max")``)."""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["bag_argmax"]


@njit(cache=True, nogil=True)
def _bag_argmax(values, bag, out):
    dim = values.shape[1]
    for i in range(values.shape[0]):
        b = bag[i]
        for d in range(dim):
            j = out[b, d]
            if j < 0 or values[i, d] > values[j, d]:
                out[b, d] = i


def bag_argmax(values: np.ndarray, bag: np.ndarray, out: np.ndarray) -> None:
    """For each bag ``b`` and feature ``d``, the row ``i`` (with ``bag[i] == b``) where ``values[i, d]`` is
    largest, first one on ties, into ``out[b, d]`` (int64, filled with -1 on entry: -1 stays for empty bags)."""
    if values.size:
        _bag_argmax(np.ascontiguousarray(values), np.ascontiguousarray(bag, dtype=np.int64), out)

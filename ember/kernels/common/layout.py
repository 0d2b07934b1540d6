"""Array layout facts both backends and the tensor layer share: plain Python over shapes and strides.

Strided kernels see every operand as a flat 1-D buffer, an element offset and element strides, so one compiled
signature serves every rank, every stride (0 for broadcast, negative for flips) and every storage offset:
``element_strides`` and ``flat_buffer`` turn a NumPy array into that, and ``collapse`` merges the dims that are
contiguous for every operand before a launch (the GPU's too), giving the kernels fewer dims to walk (often one).
``is_dense``/``dense_flat`` let elementwise work run over a dense array of any dimension order in memory order,
and ``root_array`` finds the array whose memory a chain of NumPy views sees.
"""
from __future__ import annotations

import numpy as np

__all__ = ["collapse", "dense_flat", "element_strides", "flat_buffer", "is_dense", "root_array"]


def collapse(shape: tuple[int, ...], strides_list: list[tuple[int, ...]]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Drop size-1 dims and merge neighbours that are contiguous for every operand.

    Returns the collapsed shape and each operand's collapsed strides, as int64
    arrays (at least one dimension, so kernels need no 0-d case).
    """
    keep = [d for d, n in enumerate(shape) if n != 1]
    dims = [shape[d] for d in keep]
    strides = [[st[d] for d in keep] for st in strides_list]
    i = len(dims) - 1
    while i > 0:
        if all(st[i - 1] == st[i] * dims[i] for st in strides):
            dims[i - 1] *= dims[i]
            del dims[i]
            for st in strides:
                st[i - 1] = st[i]
                del st[i]
        i -= 1
    if not dims:
        dims = [1]
        strides = [[0] for _ in strides]
    return np.array(dims, np.int64), [np.array(st, np.int64) for st in strides]


def element_strides(a: np.ndarray) -> tuple[int, ...]:
    """Strides in elements; arrays whose byte strides are not whole elements are rejected."""
    item = a.itemsize
    out = []
    for s in a.strides:
        q, r = divmod(s, item)
        if r:
            raise ValueError("array strides are not a multiple of its element size")
        out.append(q)
    return tuple(out)


def root_array(a: np.ndarray) -> np.ndarray:
    """The ndarray at the bottom of ``a``'s chain of views: the one whose memory ``a`` sees."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def flat_buffer(a: np.ndarray) -> tuple[np.ndarray, int]:
    """A 1-D view over all of ``a``'s elements and the offset of ``a[0, ..., 0]`` in it.

    ``a`` must have no zero-size dimension.
    """
    strides = element_strides(a)
    lo = hi = 0
    for s, n in zip(strides, a.shape):
        if s < 0:
            lo += s * (n - 1)
        else:
            hi += s * (n - 1)
    start = a
    if lo:
        start = a[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in strides)]
    buf = np.lib.stride_tricks.as_strided(start, shape=(hi - lo + 1,), strides=(a.itemsize,))
    return buf, -lo


def is_dense(a: np.ndarray) -> bool:
    """True when ``a``'s elements fill one gap-free block, in some dimension order, with positive strides."""
    strides = element_strides(a)
    expected = 1
    for s, n in sorted(((s, n) for s, n in zip(strides, a.shape) if n != 1), key=lambda p: p[0]):
        if s != expected:
            return False
        expected *= n
    return True


def dense_flat(a: np.ndarray) -> np.ndarray:
    """The 1-D view of a dense array in memory order (see ``is_dense``)."""
    return np.lib.stride_tricks.as_strided(a, shape=(a.size,), strides=(a.itemsize,))

"""A cache of large host buffers, so a training loop's big temporaries reuse memory instead of faulting it in.

glibc serves every allocation above its mmap threshold (at most 32 MiB) with fresh pages from the kernel, and
touching them costs a page fault per 4 KiB: for a 64 MiB temporary that is as slow as the op itself. ``empty``
hands out arrays of at least ``MIN_BYTES`` from freed buffers of the same rounded size; a buffer returns to the
cache when the last array or view over it dies. (The array is made with ``np.frombuffer`` over a memoryview: NumPy
then keeps that array as the base of every view of it, so ``weakref.finalize`` on it fires only when no view is
left. A plain slice of the buffer would not do: views would skip it and point at the buffer itself.) At most
``EMBER_HOST_CACHE_MB`` (default 1024) MiB are kept; ``empty_cache()`` gives them back.
"""
from __future__ import annotations

import math
import os
import threading
import weakref
from collections import defaultdict

import numpy as np

__all__ = ["MIN_BYTES", "empty", "empty_cache", "cached_bytes"]

MIN_BYTES = 1 << 20
_GRANULE = 1 << 16  # sizes are rounded up to this, so nearly equal requests share buffers
_LIMIT = int(os.environ.get("EMBER_HOST_CACHE_MB", "1024")) << 20
_free: dict[int, list[np.ndarray]] = defaultdict(list)
_held = [0]  # bytes in ``_free``
_lock = threading.Lock()


def _give_back(raw: np.ndarray) -> None:
    with _lock:
        if _held[0] + raw.nbytes <= _LIMIT:
            _free[raw.nbytes].append(raw)
            _held[0] += raw.nbytes


def empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """``np.empty(shape, dtype)``, from a cached buffer when the array is large."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    size = -(-nbytes // _GRANULE) * _GRANULE
    with _lock:
        bucket = _free.get(size)
        raw = bucket.pop() if bucket else None
        if raw is not None:
            _held[0] -= size
    if raw is None:
        raw = np.empty(size, np.uint8)
    owner = np.frombuffer(memoryview(raw), dtype=dtype, count=nbytes // dtype.itemsize)
    weakref.finalize(owner, _give_back, raw)
    return owner.reshape(shape)


def empty_cache() -> None:
    """Release every cached buffer to the allocator."""
    with _lock:
        _free.clear()
        _held[0] = 0


def cached_bytes() -> int:
    """Bytes held for reuse."""
    return _held[0]

"""Launch configuration and cached launch metadata for the CUDA kernels.

Every kernel is a grid-stride loop, so the grid is capped here: on a GPU at a
few waves of blocks, under Numba's simulator (one Python thread per CUDA
thread) at a handful of small blocks. Shape/stride metadata goes to the device
once per distinct layout and is reused from a bounded cache afterwards.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
from numba import config, cuda

from ..._cuda_context import active
from ..common.layout import collapse as collapse_arrays

__all__ = ["SIMULATOR", "THREADS", "MAX_BLOCKS", "REDUCE_THREADS", "TWO_PASS_MIN", "SERIAL_REDUCE_MIN_OUTPUTS",
           "SERIAL_REDUCE_MAX_EXTENT", "grid", "device_meta", "collapse"]

SIMULATOR = bool(config.ENABLE_CUDASIM)
# Threads per block of the elementwise kernels and the most blocks one launch uses.
THREADS = 8 if SIMULATOR else 256
MAX_BLOCKS = 2 if SIMULATOR else 4096
# Threads per block of the reductions: a power of two, fixed at compile time (the shared-memory size).
REDUCE_THREADS = 4 if SIMULATOR else 256
# A reduction with fewer outputs than MAX_BLOCKS splits each output over several blocks (two passes on the
# device) once it reduces more than this many elements per output.
TWO_PASS_MIN = 4 * REDUCE_THREADS
# A reduction with at least this many outputs, each over at most this many elements, runs one thread per output
# (no barriers: on a GPU the threads of a warp read neighbouring outputs; the simulator pays dearly per barrier).
SERIAL_REDUCE_MIN_OUTPUTS = 8 if SIMULATOR else 1024
SERIAL_REDUCE_MAX_EXTENT = 64

_META: OrderedDict = OrderedDict()
_META_MAX = 4096


def grid(n: int, threads: int | None = None, max_blocks: int | None = None) -> tuple[int, int]:
    """(blocks, threads) for a grid-stride loop over ``n`` items (at least one block)."""
    threads = threads or THREADS
    cap = max_blocks or MAX_BLOCKS
    return max(1, min(cap, -(-n // threads))), threads


def device_meta(values: tuple) -> object:
    """An int64 array holding ``values`` (a tuple, or a tuple of equal-length tuples for 2-D) on the active device.

    Cached per device and value: kernels only read it, so one copy serves every launch with that layout.
    """
    key = (active.index, values)
    found = _META.get(key)
    if found is not None:
        _META.move_to_end(key)
        return found
    found = cuda.to_device(np.array(values, np.int64))
    _META[key] = found
    if len(_META) > _META_MAX:
        _META.popitem(last=False)
    return found


def collapse(shape: tuple[int, ...], strides_list: list[tuple[int, ...]]) -> tuple[tuple[int, ...], list[tuple]]:
    """The shared dimension collapsing (drop size-1 dims, merge neighbours contiguous for every operand), as
    tuples: hashable ``device_meta`` keys."""
    dims, strides = collapse_arrays(shape, strides_list)
    return tuple(int(n) for n in dims), [tuple(int(s) for s in st) for st in strides]

"""cuBLAS products through CuPy when it is installed (``pip install "ember[cuda-blas]"``).

ember's tiled Numba kernel (``products``) always works; for float32 and float64 a vendor GEMM is several times
faster on real hardware. CuPy is the optional provider: a well-kept package whose wheels bring cuBLAS, and which
views ember's device storage without a copy through ``__cuda_array_interface__``. Both run on the default stream,
so the order of work is kept. ``EMBER_CUDA_BLAS=0`` keeps the Numba kernel. Never used under Numba's simulator,
which has no device memory to share.
"""
from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from .launch import SIMULATOR

__all__ = ["available", "matmul"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@functools.lru_cache(maxsize=None)
def _cupy() -> Any:
    """The cupy module, or None where the vendor path is off (simulator, EMBER_CUDA_BLAS=0, not installed)."""
    if SIMULATOR or os.environ.get("EMBER_CUDA_BLAS", "1") == "0":
        return None
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def available() -> bool:
    """Whether float32/float64 products go to cuBLAS."""
    return _cupy() is not None


def matmul(a: Any, b: Any, out: Any) -> bool:
    """``out = a @ b`` (batched, device storage of one float dtype) by cuBLAS; False when it does not apply and the
    caller runs its own kernel."""
    cupy = _cupy()
    if cupy is None or np.dtype(out.dtype) not in _FLOATS:
        return False
    x, y, o = cupy.asarray(a), cupy.asarray(b), cupy.asarray(out)
    if o.flags.c_contiguous:
        cupy.matmul(x, y, out=o)
    else:
        o[...] = cupy.matmul(x, y)
    return True

"""cuBLAS products through CuPy when it is installed (``pip install "ember[cuda-blas]"``).

ember's tiled Numba kernel (``products``) always works; for float32 and float64 a vendor GEMM is several times
faster on real hardware. CuPy is the optional provider: a well-kept package whose wheels bring cuBLAS, and which
views ember's device storage without a copy through ``__cuda_array_interface__``. Both run on the default stream,
so the order of work is kept. ``EMBER_CUDA_BLAS=0`` keeps the Numba kernel. Never used under Numba's simulator,
which has no device memory to share. Under ``use_deterministic_algorithms(True)`` cuBLAS is used only when
``CUBLAS_WORKSPACE_CONFIG`` is ``:4096:8`` or ``:16:8`` (what makes it reproducible, as torch requires); otherwise
the products run on ember's own kernel, which is deterministic.

float32 products follow ``ember.set_float32_matmul_precision`` (and ``backends.cuda.matmul.allow_tf32``): below
"highest" cuBLAS may round the inputs to TF32 on tensor cores (compute capability 8.0 and later; older GPUs keep
full float32), as torch's products do. The Numba kernel always computes in full float32.
"""
from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from ... import _matmul_precision
from ..._determinism import are_deterministic_algorithms_enabled
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


def _reproducible() -> bool:
    """Whether cuBLAS may run now: always, except in deterministic mode without a fixed cuBLAS workspace."""
    return not are_deterministic_algorithms_enabled() or \
        os.environ.get("CUBLAS_WORKSPACE_CONFIG") in (":4096:8", ":16:8")


def available() -> bool:
    """Whether float32/float64 products go to cuBLAS."""
    return _cupy() is not None


# cuBLAS's cublasMath_t values (CuPy's cublas module names the default, not the TF32 mode)
_DEFAULT_MATH, _TF32_TENSOR_OP_MATH = 0, 3
_tf32_by_handle: dict[int, bool] = {}  # the math mode given to each of CuPy's cuBLAS handles (per thread and device)


def set_float32_compute(cupy: Any, tf32: bool) -> None:
    """Let cuBLAS round float32 products' inputs to TF32 on tensor cores, or not: the math mode of CuPy's cuBLAS
    handle for this thread and device (what torch sets on its own handles), changed only when it differs. GPUs
    before compute capability 8.0 ignore the TF32 mode."""
    handle = cupy.cuda.get_cublas_handle()
    if _tf32_by_handle.get(handle) is tf32:
        return
    cupy.cuda.cublas.setMathMode(handle, _TF32_TENSOR_OP_MATH if tf32 else _DEFAULT_MATH)
    _tf32_by_handle[handle] = tf32


def matmul(a: Any, b: Any, out: Any) -> bool:
    """``out = a @ b`` (batched, device storage of one float dtype) by cuBLAS; False when it does not apply and the
    caller runs its own kernel."""
    cupy = _cupy()
    if cupy is None or np.dtype(out.dtype) not in _FLOATS or not _reproducible():
        return False
    if np.dtype(out.dtype) == np.float32:
        set_float32_compute(cupy, _matmul_precision.allows_tf32())
    x, y, o = cupy.asarray(a), cupy.asarray(b), cupy.asarray(out)
    if o.flags.c_contiguous:
        cupy.matmul(x, y, out=o)
    else:
        o[...] = cupy.matmul(x, y)
    return True

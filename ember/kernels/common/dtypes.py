"""The dtype a kernel computes in, the one place the "float16 computes in float32" rule is written.

Numba has no CPU float16 and torch's CPU kernels do Half arithmetic in float, so
kernels of both backends take float16 data widened to float32 (exactly) and the
caller rounds the result back once. Every other dtype is computed as it is.
``ember.tensor.dtypes`` derives each ember dtype's ``compute`` from this rule.
"""
from __future__ import annotations

import numpy as np

__all__ = ["compute_dtype", "computable"]

_HALF, _FLOAT = np.dtype(np.float16), np.dtype(np.float32)


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The NumPy dtype kernels compute in for data of ``dtype``: float32 for float16, else ``dtype`` itself."""
    return _FLOAT if dtype == _HALF else dtype


def computable(x: np.ndarray) -> np.ndarray:
    """``x`` in its ``compute_dtype``: a float32 copy of a float16 array, else ``x`` itself."""
    return x.astype(_FLOAT) if x.dtype == _HALF else x

"""The dtype a kernel computes in, the one place the "half precision computes in float32" rule is written.

Numba has no CPU float16 and no bfloat16 at all, and torch's CPU kernels do Half and BFloat16 arithmetic in
float, so kernels of both backends take float16 and bfloat16 data widened to float32 (exactly) and the caller
rounds the result back once (round-to-nearest-even, as torch). Every other dtype is computed as it is.
``ember.tensor.dtypes`` derives each ember dtype's ``compute`` from this rule.

bfloat16 is ``ml_dtypes.bfloat16`` (the NumPy bfloat16 JAX uses): host arrays hold it as a NumPy dtype whose
casts to and from float32 round as torch's; device storage keeps its bits in a uint16 buffer (``BFLOAT16_BITS``).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = ["BFLOAT16", "BFLOAT16_BITS", "FLOAT_KINDS", "NARROW_FLOATS", "compute_dtype", "computable"]

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
BFLOAT16_BITS = np.dtype(np.uint16)  # how a bfloat16 element is held where only NumPy's own dtypes are
_FLOAT = np.dtype(np.float32)
FLOAT_KINDS = "fV"  # the NumPy kinds of ember's floating dtypes: "f", and "V" for bfloat16 (ml_dtypes' type)
# the dtypes kernels never see: widened to float32 before a kernel, narrowed after it
NARROW_FLOATS = frozenset((np.dtype(np.float16), BFLOAT16))


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The NumPy dtype kernels compute in for data of ``dtype``: float32 for float16 and bfloat16, else ``dtype``."""
    return _FLOAT if dtype in NARROW_FLOATS else dtype


def computable(x: np.ndarray) -> np.ndarray:
    """``x`` in its ``compute_dtype``: a float32 copy of a float16 or bfloat16 array, else ``x`` itself."""
    return x.astype(_FLOAT) if x.dtype in NARROW_FLOATS else x

"""``ember.backends.openmp``: whether ember's parallel kernels can run on OpenMP."""
from __future__ import annotations

import importlib.util


def is_available() -> bool:
    """Whether Numba's OpenMP threading layer is installed. ember's parallel kernels use TBB when it loads
    (``ember._runtime``); ``NUMBA_THREADING_LAYER=omp`` puts them on OpenMP."""
    return importlib.util.find_spec("numba.np.ufunc.omppool") is not None

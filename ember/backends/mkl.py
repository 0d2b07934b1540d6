"""``ember.backends.mkl``: whether ember's CPU matrix products run on Intel MKL."""
from __future__ import annotations

import numpy as np


def is_available() -> bool:
    """Whether the BLAS NumPy was built with (which ember's CPU products call) is MKL."""
    blas = getattr(np.__config__, "CONFIG", {}).get("Build Dependencies", {}).get("blas", {})
    return "mkl" in str(blas.get("name", "")).lower()

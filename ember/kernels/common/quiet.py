"""NumPy ufunc calls with floating-point warnings off, at a fraction of ``np.errstate``'s cost.

Where ember hands small arrays to a NumPy ufunc instead of a kernel, inf and NaN are results (as from the
kernels and in torch), not warnings. ``with np.errstate(all="ignore")`` costs several times a one-element
ufunc, which per-op overhead on small tensors feels; NumPy keeps that state in one context variable, so
setting it to the "ignore" value directly is as correct (per thread and per task) and much cheaper. A NumPy
without that variable falls back to ``np.errstate``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["quietly"]

try:
    from numpy._core._ufunc_config import _extobj_contextvar as _STATE

    with np.errstate(all="ignore"):
        _IGNORE = _STATE.get()
except (ImportError, AttributeError):  # another NumPy layout: the public (slower) way
    _STATE = None


def quietly(ufunc: np.ufunc, *args: Any, **kwargs: Any) -> Any:
    """``ufunc(*args, **kwargs)`` with every floating-point error ignored."""
    if _STATE is None:
        with np.errstate(all="ignore"):
            return ufunc(*args, **kwargs)
    token = _STATE.set(_IGNORE)
    try:
        return ufunc(*args, **kwargs)
    finally:
        _STATE.reset(token)

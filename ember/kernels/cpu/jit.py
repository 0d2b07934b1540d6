"""Shared ways of jitting kernels."""
from __future__ import annotations

import types

import numba

__all__ = ["serial_and_parallel"]


def serial_and_parallel(py_func, **flags):
    """A serial and a ``parallel=True`` dispatcher of one body (``prange`` runs as ``range`` in the serial one).

    Numba's disk cache names its files by function name and line and does not tell ``parallel`` apart, so
    jitting one function twice makes whichever compiled first load for both; the parallel one is therefore
    compiled from a copy of the function renamed ``<name>_parallel``.
    """
    twin = types.FunctionType(py_func.__code__, py_func.__globals__, py_func.__name__ + "_parallel",
                              py_func.__defaults__, py_func.__closure__)
    twin.__qualname__ = py_func.__qualname__ + "_parallel"
    return (numba.njit(cache=True, nogil=True, **flags)(py_func),
            numba.njit(cache=True, nogil=True, parallel=True, **flags)(twin))

"""Device versions of the scalar ops: ``cuda.jit(device=True)`` builds of the CPU definitions.

``ember.cpu_kernels.scalar_ops`` is written once for every target: its plain
Python functions (``py_func``) are compiled here as CUDA device functions, so
the GPU has torch's semantics exactly where the CPU has them. Only definitions
that the simulator cannot run as written (it runs device code as Python over
NumPy scalars) get a device twin here.
"""
from __future__ import annotations

import functools
import math
import types

from numba import cuda

from ..cpu_kernels import reductions as _cpu_reductions, scalar_ops as _cpu

__all__ = ["device_function", "OVERRIDES", "DEVICE_GLOBALS", "with_globals"]


def _sign(x):
    # NumPy has no bool subtraction, which the simulator would hit in the CPU's ``(x > 0) - (x < 0)``
    return (x > 0) * 1 - (x < 0) * 1


OVERRIDES = {"sign": _sign}
# Globals of the CPU definitions that the device spells differently: numba-cuda types math.fmod, not np.fmod
# (fmod is exact, so the simulator's float64 result of float32 operands is the same number).
DEVICE_GLOBALS = {"_fmod": math.fmod}


@functools.cache
def device_function(name: str):
    """The CUDA device function of scalar op ``name`` (a ``scalar_ops`` or reduction-helper name)."""
    py_func = OVERRIDES.get(name)
    if py_func is None:
        source = getattr(_cpu, name, None) or getattr(_cpu_reductions, name)
        py_func = with_globals(source.py_func, DEVICE_GLOBALS)
    return cuda.jit(device=True)(py_func)


def with_globals(py_func: types.FunctionType, replacements: dict) -> types.FunctionType:
    """``py_func`` reading ``replacements`` in place of its module's globals of those names (itself when it reads
    none of them): how a CPU definition is rebuilt for the device."""
    names = replacements.keys() & set(py_func.__code__.co_names)
    if not names:
        return py_func
    namespace = {**py_func.__globals__, **{n: replacements[n] for n in names}}
    return types.FunctionType(py_func.__code__, namespace, py_func.__name__, py_func.__defaults__,
                              py_func.__closure__)

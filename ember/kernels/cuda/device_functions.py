"""Device versions of the shared definitions: the one way a ``kernels.common`` function becomes device code.

A shared definition is a ``numba.njit`` function the CPU kernels inline. Its
plain Python (``py_func``) is compiled here as a CUDA device function, and so,
recursively, is every shared function it calls, so the GPU computes exactly
the CPU's formulas. The few definitions the device spells differently have a
*twin* in ``TWINS``, used wherever the definition is named:

- ``vexp`` / ``verfc`` / ``vtanh``: CPU vectorisation devices (float32
  polynomials written for LLVM); on a GPU the plain ``math`` functions are
  native. Under the simulator the exp twin returns inf past the float64
  overflow point, where Python's ``math.exp`` would raise (compiled code
  returns inf);
- ``np.fmod``: numba-cuda types ``math.fmod``, not ``np.fmod`` (fmod is exact,
  so the simulator's float64 result of float32 operands is the same number);
- ``sign``: the simulator runs device code as Python over NumPy scalars, and
  NumPy has no bool subtraction, which the CPU's ``(x > 0) - (x < 0)`` is.

A twin written in Python is compiled as a device function; a ``math`` builtin
is used as it is. Plain functions with a generic-target overload (``const``)
stay as they are.
"""
from __future__ import annotations

import dis
import functools
import math
import types
from collections.abc import Hashable
from typing import Any

import numpy as np
from numba import cuda

from ..common import activations, scalar_ops
from .launch import SIMULATOR

__all__ = ["TWINS", "device_function", "scalar_op"]

_EXP_LIMIT = 709.782712893384  # log of the largest float64


if SIMULATOR:
    def _exp(x):
        return math.inf if x > _EXP_LIMIT else math.exp(x)
else:
    def _exp(x):
        return math.exp(x)


def _erfc(x):
    return math.erfc(x)


def _tanh(x):
    return math.tanh(x)


def _sign(x):
    return (x > 0) * 1 - (x < 0) * 1


# shared definition -> its device form
TWINS: dict[Any, Any] = {activations.vexp: _exp, activations.verfc: _erfc, activations.vtanh: _tanh,
                         np.fmod: math.fmod, scalar_ops.sign: _sign}


def _has_device_form(value: Any) -> bool:
    """Whether a global a shared definition reads is itself one (an njit function, or one with a twin)."""
    return hasattr(value, "py_func") or (isinstance(value, Hashable) and value in TWINS)


@functools.cache
def device_function(definition: Any) -> Any:
    """The CUDA device function of shared definition ``definition`` (an njit function, or one in ``TWINS``)."""
    twin = TWINS.get(definition)
    if twin is not None:
        return cuda.jit(device=True)(twin) if isinstance(twin, types.FunctionType) else twin
    py_func = definition.py_func
    # global reads only: ``co_names`` also holds attribute names (``math.tanh`` inside the scalar ``tanh``)
    names = {i.argval for i in dis.get_instructions(py_func) if i.opname == "LOAD_GLOBAL"}
    rebound = {name: device_function(py_func.__globals__[name]) for name in names
               if _has_device_form(py_func.__globals__.get(name))}
    if rebound:
        py_func = types.FunctionType(py_func.__code__, {**py_func.__globals__, **rebound}, py_func.__name__,
                                     py_func.__defaults__, py_func.__closure__)
    return cuda.jit(device=True)(py_func)


def scalar_op(name: str) -> Any:
    """The device function of ``ember.kernels.common.scalar_ops`` function ``name``."""
    return device_function(getattr(scalar_ops, name))

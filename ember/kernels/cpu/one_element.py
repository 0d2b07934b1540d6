"""Arithmetic on one-element float arrays through Python floats, at a fraction of a NumPy ufunc call's cost.

Per-op overhead on scalars (a loss, a learning rate, a gradient summed into a scalar leaf) is mostly the cost of
calling into NumPy. A Python float is an IEEE double, and rounding a double result of ``+ - * /`` on float16 or
float32 operands to the operands' dtype gives exactly the correctly rounded result in that dtype (double rounding
is harmless when the wide format has at least ``2p + 2`` bits), so the result equals the ufunc's bit for bit. The
cases Python floats treat differently from IEEE (division by zero raises) or where storing would warn (a result
beyond the dtype's range, NaN) are left to the caller's ufunc path. Callers pass ``a.item()`` of one-element arrays
and store the value with ``fill`` (a new array, or in place).
"""
from __future__ import annotations

import math
import operator
from typing import Callable

import numpy as np

from ... import opcodes as op
from ..common.elementwise import PYTHON_OPERATORS

__all__ = ["one_value"]

# the declared ``python`` operators of + - * /
_OPS: dict[int, Callable[[float, float], float]] = {code: getattr(operator, name)
                                                    for code, name in PYTHON_OPERATORS.items()}
# The largest finite value of each float dtype: a result within it stores without a cast warning.
_FINITE_MAX = {np.dtype(t): float(np.finfo(t).max) for t in (np.float16, np.float32)}
_FINITE_MAX[np.dtype(np.float64)] = math.inf  # a double result always stores into float64


def one_value(code: int, x: float, y: float, dtype: np.dtype) -> float | None:
    """``f(x, y)`` for the op ``code`` as a Python float when it stores exactly and quietly into ``dtype``; None
    when not handled (an op without a Python twin, division by zero, a result beyond the dtype's range or NaN)."""
    f = _OPS.get(code)
    limit = _FINITE_MAX.get(dtype)
    if f is None or limit is None or (code == op.DIV and y == 0.0):
        return None
    value = f(x, y)
    return value if -limit <= value <= limit else None  # NaN fails both tests

"""The reductions both backends run: their names, what they accumulate in and what an empty one gives.

A reduction (an ``ember.opcodes`` ``R_*`` code) folds elements into an
accumulator of its kind (``accumulator_dtype``) that starts at the op's
``identity``; how each backend folds is its own (generated loops on the CPU,
shared-memory trees on the GPU). An arg-reduction (``A_*``) keeps the first
extreme by its "v beats the current extreme b" test, a scalar function here
that the CPU inlines and the GPU builds as a device function.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np
from numba import njit

from ... import opcodes as op

__all__ = ["Reduction", "ArgReduction", "REDUCTIONS", "ARG_REDUCTIONS", "identity", "accumulator_dtype",
           "beats_max", "beats_min"]

inline = njit(inline="always")


class Reduction(NamedTuple):
    """A reduction's kernel name and accumulator kind (see ``accumulator_dtype``)."""

    name: str
    kind: str


class ArgReduction(NamedTuple):
    """An arg-reduction's kernel name and its test ``beats(v, b)``: element ``v`` replaces extreme ``b``."""

    name: str
    beats: Callable[[Any, Any], bool]


REDUCTIONS = {
    op.R_SUM: Reduction("sum", "wide"), op.R_PROD: Reduction("prod", "wide"), op.R_MAX: Reduction("max", "same"),
    op.R_MIN: Reduction("min", "same"), op.R_ALL: Reduction("all", "bool"), op.R_ANY: Reduction("any", "bool"),
    op.R_COUNT_NONZERO: Reduction("count_nonzero", "count"), op.R_SUMSQ: Reduction("sumsq", "wide"),
    op.R_ABSMAX: Reduction("absmax", "same"), op.R_ABSSUM: Reduction("abssum", "wide"),
}


# NaN beats everything but NaN, so the first NaN is the extreme.
@inline
def beats_max(v, b):
    return v > b or (v != v and b == b)


@inline
def beats_min(v, b):
    return v < b or (v != v and b == b)


ARG_REDUCTIONS = {op.A_MAX: ArgReduction("argmax", beats_max), op.A_MIN: ArgReduction("argmin", beats_min)}


def identity(code: int, dtype: np.dtype):
    """The value a reduction of an empty set gives, in ``dtype`` (max/min: the lowest/highest value)."""
    if code == op.R_PROD:
        return 1
    if code == op.R_ALL:
        return True
    if code in (op.R_MAX, op.R_ABSMAX, op.R_MIN):
        lowest = code != op.R_MIN
        if dtype == np.bool_:
            return not lowest
        if dtype.kind == "f":
            return -np.inf if lowest else np.inf
        info = np.iinfo(dtype)
        return info.min if lowest else info.max
    return 0


def accumulator_dtype(kind: str, dtype: np.dtype) -> np.dtype:
    """The accumulator dtype of an op kind for input ``dtype``: ``wide`` is float64 or int64, ``float`` float64,
    ``same`` the input's, ``bool`` bool and ``count`` int64."""
    if kind == "float":
        return np.dtype(np.float64)
    if kind == "wide":
        return np.dtype(np.float64 if dtype.kind == "f" else np.int64)
    if kind == "same":
        return dtype
    return np.dtype(np.bool_ if kind == "bool" else np.int64)

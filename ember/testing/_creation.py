"""``make_tensor``: torch.testing's random test inputs, with torch's value ranges, clamping and errors."""
from __future__ import annotations

import collections.abc
import math
import warnings
from typing import Any, Sequence, Union

import numpy as np

from ..tensor import dtypes
from ..tensor.creation import empty
from ..tensor.random_ops import randint
from ..tensor.tensor import Tensor

Shape = Union[int, Sequence[int]]


def _value_range(dtype: dtypes.dtype, low: Any, high: Any) -> tuple[Any, Any]:
    """``[low, high)`` after torch's defaults, checks and clamping to what ``dtype`` holds (ints round up)."""
    if dtype is dtypes.bool:
        lowest, highest, default = 0, 2, (0, 2)
    elif dtype.is_floating_point:
        info = np.finfo(dtype.np)
        lowest, highest, default = float(info.min), float(info.max), (-9, 9)
    else:
        info = np.iinfo(dtype.np)  # high is exclusive, so one past the largest value (int64 has no room for it)
        lowest, highest, default = int(info.min), int(info.max) + (dtype is not dtypes.int64), (-9, 10)
    low = default[0] if low is None else low
    high = default[1] if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype.is_floating_point:
        warnings.warn("Passing `low==high` to `ember.testing.make_tensor` for floating types is deprecated (as in "
                      "torch since 2.1). Use `ember.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = (min(max(v, lowest), highest) for v in (low, high))
    if dtype.is_floating_point:
        return low, high
    return math.ceil(low), math.ceil(high)


def _fill_uniform(t: Tensor, low: float, high: float) -> None:
    if low == high:
        t.fill_(low)
    elif high - low >= float(np.finfo(t.dtype.np).max):  # the width overflows: draw half the interval, double it
        t.uniform_(low / 2, high / 2).mul_(2)
    else:
        t.uniform_(low, high)


def make_tensor(*shape: Shape, dtype: dtypes.dtype, device: Any, low: float | None = None,
                high: float | None = None, requires_grad: bool = False, noncontiguous: bool = False,
                exclude_zero: bool = False, memory_format: Any = None) -> Tensor:
    """A tensor of ``shape`` with values drawn uniformly from ``[low, high)``, as ``torch.testing.make_tensor``.

    Defaults: bool [0, 2), unsigned [0, 10), signed integers [-9, 10), floats [-9, 9); bounds outside the dtype's
    finite range are clamped to it, integer bounds round up. ``noncontiguous`` returns a strided view (when there
    are at least two elements), ``memory_format`` a clone in that format; ``exclude_zero`` replaces zeros by 1 (bool,
    integers) or the dtype's smallest normal number. Raises ValueError for ``low >= high``, NaN bounds, an interval
    the dtype cannot hold, ``requires_grad`` on a non-float dtype, or both ``noncontiguous`` and ``memory_format``;
    TypeError for a dtype it does not know. Values come from ember's default generator (``ember.manual_seed``).
    """
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if not isinstance(dtype, dtypes.dtype):
        raise TypeError(f"The requested dtype '{dtype}' is not supported by ember.testing.make_tensor().")
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    if requires_grad and not dtype.is_floating_point:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype}")
    low, high = _value_range(dtype, low, high)
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])  # every other element of a twice-as-wide last dimension
    if dtype.is_floating_point:
        result = empty(shape, dtype=dtype, device=device)
        _fill_uniform(result, low, high)
    else:
        result = randint(low, high, shape, dtype=dtype, device=device)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result.masked_fill_(result == 0, float(np.finfo(dtype.np).tiny) if dtype.is_floating_point else 1)
    if dtype.is_floating_point:
        result.requires_grad_(requires_grad)
    return result


__all__ = ["make_tensor"]

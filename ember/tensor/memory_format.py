"""Memory formats: a logical NCHW tensor stored as NCHW or NHWC (a stride order, not a new shape)."""
from __future__ import annotations

from typing import Any

import numpy as np


class memory_format:
    """A memory-format tag such as ``ember.channels_last``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

_ORDERS = {channels_last: (0, 2, 3, 1), channels_last_3d: (0, 2, 3, 4, 1)}


def dim_order(fmt: Any, ndim: int) -> tuple[int, ...]:
    """Logical dims from outermost to innermost in memory for a format."""
    order = _ORDERS.get(fmt)
    if order is None or fmt is contiguous_format:
        return tuple(range(ndim))
    if len(order) != ndim:
        raise RuntimeError(f"required rank {len(order)} tensor to use {fmt} format, got rank {ndim}")
    return order


def is_contiguous_as(a: np.ndarray, fmt: Any = None) -> bool:
    """Whether ``a``'s strides are the dense strides of ``fmt`` (size-1 dims may have any stride)."""
    fmt = contiguous_format if fmt is None else fmt
    if fmt is contiguous_format and a.size == 0:  # torch: an empty tensor is contiguous, whatever its strides
        return True
    if type(a) is not np.ndarray and fmt is contiguous_format:
        return a.is_contiguous
    if fmt not in _ORDERS and fmt is not contiguous_format:
        raise RuntimeError(f"is_contiguous: unsupported memory format {fmt}")
    if fmt in _ORDERS and len(_ORDERS[fmt]) != a.ndim:
        return False
    order = dim_order(fmt, a.ndim)
    item = a.itemsize if type(a) is np.ndarray else 1  # device storage keeps element strides
    expected = 1
    for d in reversed(order):
        n = a.shape[d]
        if n != 1 and a.strides[d] != expected * item:
            return False
        expected *= n
    return True


def empty_in_format(shape: tuple[int, ...], np_dtype: Any, fmt: Any, like: Any = None) -> np.ndarray:
    """An uninitialised array of logical ``shape`` laid out in memory format ``fmt`` (on ``like``'s device)."""
    order = dim_order(fmt, len(shape))
    physical = np.empty([shape[d] for d in order], dtype=np_dtype, like=like)
    inverse = np.argsort(order)
    return physical.transpose(inverse)
